"""nbtorch.hub: local hubconf directories and already-downloaded checkpoints; a clear
error for anything that would download."""
import pytest

import nbtorch


def test_local_hubconf(tmp_path):
    (tmp_path / "hubconf.py").write_text(
        "import nbtorch\n"
        "def tiny(n=2):\n"
        "    '''A tiny model.'''\n"
        "    return nbtorch.nn.Linear(n, 1)\n")
    m = nbtorch.hub.load(str(tmp_path), "tiny", 3, source="local")
    assert m.weight.shape == (1, 3)
    assert "tiny" in nbtorch.hub.list(str(tmp_path), source="local")
    assert nbtorch.hub.help(str(tmp_path), "tiny", source="local") == "A tiny model."
    with pytest.raises(RuntimeError, match="Cannot find callable nope"):
        nbtorch.hub.load(str(tmp_path), "nope", source="local")


def test_nothing_downloads(tmp_path):
    with pytest.raises(RuntimeError, match="cannot download anything"):
        nbtorch.hub.load("pytorch/vision", "resnet18")
    with pytest.raises(RuntimeError, match="cannot download anything"):
        nbtorch.hub.download_url_to_file("https://example.com/x.pth", str(tmp_path / "x"))
    with pytest.raises(RuntimeError, match="place it at .*w.pth"):
        nbtorch.hub.load_state_dict_from_url("https://example.com/a/w.pth",
                                             model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="Unknown source"):
        nbtorch.hub.load(str(tmp_path), "x", source="ftp")


def test_cached_checkpoint_is_loaded(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    assert nbtorch.hub.get_dir() == str(tmp_path / "hub")
    (tmp_path / "hub" / "checkpoints").mkdir(parents=True)
    nbtorch.save({"w": nbtorch.ones(2)}, str(tmp_path / "hub" / "checkpoints" / "w.pth"))
    sd = nbtorch.hub.load_state_dict_from_url("https://example.com/a/w.pth?x=1")
    assert sd["w"].tolist() == [1.0, 1.0]
    nbtorch.hub.set_dir(str(tmp_path / "elsewhere"))
    try:
        assert nbtorch.hub.get_dir() == str(tmp_path / "elsewhere")
    finally:
        nbtorch.hub._DIR[0] = None
