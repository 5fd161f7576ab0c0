"""``make demo`` (examples/demo.py): a short run learns Digits and its checkpoint reloads."""
import importlib.util
from pathlib import Path

import pytest

DEMO_PATH = Path(__file__).resolve().parents[1] / "examples" / "demo.py"


@pytest.fixture(scope="module")
def demo():
    spec = importlib.util.spec_from_file_location("nbtorch_demo", DEMO_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_two_epochs_learn_digits_and_checkpoint_reloads(demo, tmp_path, capsys):
    path = tmp_path / "digits.pt"
    result = demo.main(epochs=2, seed=0, checkpoint=str(path), quiet=True)
    assert result["accuracy"] > 0.8
    assert result["matches"] and result["reloaded_accuracy"] == result["accuracy"]
    assert len(result["epoch_seconds"]) == 2
    assert path.is_file()
    out = capsys.readouterr().out
    assert "epoch  2/2" in out and "matches" in out and "first epoch" in out


def test_checkpoint_holds_model_optimizer_and_epoch(demo, tmp_path):
    import nbtorch as torch
    path = tmp_path / "digits.pt"
    demo.main(epochs=1, seed=1, checkpoint=str(path), quiet=True)
    checkpoint = torch.load(path)
    assert checkpoint["epoch"] == 1
    assert set(checkpoint["model"]) == set(demo.DigitsCNN().state_dict())
    assert {"state", "param_groups"} <= set(checkpoint["optimizer"])


def test_cuda_flag_without_gpu_exits_with_a_clear_message(demo, monkeypatch):
    monkeypatch.setattr(demo, "cuda_available", lambda: False)
    with pytest.raises(SystemExit, match="--device cuda"):
        demo.main(epochs=1, device="cuda", quiet=True)


def test_command_line_flags(demo):
    args = demo.parse_args(["--epochs", "3", "--seed", "7", "--device", "cpu",
                            "--checkpoint", "x.pt"])
    assert (args.epochs, args.seed, args.device, args.checkpoint) == (3, 7, "cpu", "x.pt")
