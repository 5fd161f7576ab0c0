"""torch.utils' small modules: weak, file_baton, backcompat, deterministic, model_zoo,
throughput_benchmark, show_pickle, collect_env (PyTorch's behaviour where it is installed)."""
import gc
import io
import os
import pickle
import threading
import time

import pytest

import nbtorch
from nbtorch.utils import (backcompat, collect_env, deterministic, file_baton, model_zoo,
                           show_pickle, throughput_benchmark, weak)


def test_reachable_as_attributes():
    for name in ("flop_counter", "module_tracker", "model_zoo", "collect_env",
                 "deterministic", "weak", "show_pickle", "throughput_benchmark",
                 "file_baton", "backcompat"):
        assert getattr(nbtorch.utils, name).__name__ == f"nbtorch.utils.{name}"


def test_weak_id_refs_and_dictionary():
    a, b = nbtorch.ones(2), nbtorch.ones(2)
    r1, r2 = weak.WeakIdRef(a), weak.WeakIdRef(a)
    assert r1 == r2 and hash(r1) == id(a) and r1 != weak.WeakIdRef(b) and r1() is a
    d = weak.WeakTensorKeyDictionary()
    d[a], d[b] = "a", "b"
    assert d[a] == "a" and a in d and len(d) == 2 and set(map(id, d)) == {id(a), id(b)}
    assert nbtorch.ones(2) not in d and 3 not in d
    del d[b]
    assert len(d) == 1
    d[b] = "b"
    del b
    gc.collect()
    assert len(d) == 1 and len(d.data) == 1 and list(d.values()) == ["a"]
    c = d.copy()
    assert list(c.keys())[0] is a and c[a] == "a" and type(c) is type(d)
    ref = weak.TensorWeakRef(a)
    assert ref() is a
    with pytest.raises(AssertionError, match="expected torch.Tensor, got <class 'int'>."):
        weak.TensorWeakRef(3)


def test_file_baton(tmp_path):
    path = str(tmp_path / "lock")
    first, second = file_baton.FileBaton(path), file_baton.FileBaton(path, wait_seconds=0.01)
    assert first.try_acquire() and not second.try_acquire()
    threading.Timer(0.05, first.release).start()
    t0 = time.time()
    second.wait()
    assert not os.path.exists(path) and time.time() - t0 < 5
    assert second.try_acquire()
    second.release()


def test_backcompat_and_deterministic_switches():
    w = backcompat.broadcast_warning
    assert w.enabled is False and backcompat.keepdim_warning.get_enabled() is False
    w.enabled = True
    assert w.get_enabled() is True and backcompat.keepdim_warning.enabled is False
    w.set_enabled(False)
    assert deterministic.fill_uninitialized_memory is True
    try:
        deterministic.fill_uninitialized_memory = False
        assert deterministic.fill_uninitialized_memory is False
        with pytest.raises(RuntimeError, match="expected a bool, but got int"):
            deterministic.fill_uninitialized_memory = 1
    finally:
        deterministic.fill_uninitialized_memory = True


def test_model_zoo_load_url_reads_the_cache(tmp_path):
    state = {"w": nbtorch.arange(3.0)}
    nbtorch.save(state, str(tmp_path / "net-1234.pth"))
    got = model_zoo.load_url("https://example.invalid/models/net-1234.pth",
                             model_dir=str(tmp_path))
    assert nbtorch.equal(got["w"], state["w"])
    assert model_zoo.load_url is nbtorch.hub.load_state_dict_from_url


def test_throughput_benchmark():
    model = nbtorch.nn.Linear(8, 3)
    bench = throughput_benchmark.ThroughputBenchmark(model)
    x = nbtorch.randn(4, 8)
    bench.add_input(x)
    bench.add_input(nbtorch.randn(2, 8))
    out = bench.run_once(x)
    assert nbtorch.allclose(out, model(x)) and not out.requires_grad
    stats = bench.benchmark(num_calling_threads=2, num_warmup_iters=2, num_iters=40)
    assert stats.num_iters == 40 and stats.latency_avg_ms > 0
    assert stats.iters_per_second == pytest.approx(40 / stats.total_time_seconds)
    lines = str(stats).splitlines()
    assert lines[0].startswith("Average latency per example: ") and \
        lines[1] == "Total number of iterations: 40"
    assert throughput_benchmark.format_time(time_ms=1.5) == "1.500ms"
    assert throughput_benchmark.format_time(time_s=2) == "2.000s"
    assert throughput_benchmark.format_time(time_us=3) == "3.000us"


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo should-not-run",))


def test_show_pickle_prints_without_running(tmp_path, capsys):
    path = tmp_path / "p.pkl"
    path.write_bytes(pickle.dumps({"x": [1, 2], "boom": _Boom()}))
    out = io.StringIO()
    show_pickle.main(["show_pickle", str(path)], out)
    assert out.getvalue() == "{'boom': posix.system('echo should-not-run',), 'x': [1, 2]}\n"
    assert show_pickle.main(["show_pickle"]) == 2
    assert "usage: show_pickle" in capsys.readouterr().err


def test_show_pickle_matches_pytorch_on_saved_files(tmp_path):
    torch = pytest.importorskip("torch")
    import torch.utils.show_pickle as ts
    nbtorch.save({"w": nbtorch.zeros(2, 3), "n": 3}, str(tmp_path / "a.pt"))
    torch.save({"w": torch.zeros(2, 3), "n": 3}, str(tmp_path / "b.pt"))
    got, expected = io.StringIO(), io.StringIO()
    show_pickle.main(["show_pickle", f"{tmp_path / 'a.pt'}@*/data.pkl"], got)
    ts.main(["show_pickle", f"{tmp_path / 'b.pt'}@*/data.pkl"], expected)
    assert got.getvalue() == expected.getvalue()
    with pytest.raises(FileNotFoundError, match="Could not find member matching"):
        show_pickle.main(["show_pickle", f"{tmp_path / 'a.pt'}@*/nothing"], io.StringIO())


def test_collect_env(capsys):
    info = collect_env.get_env_info()
    assert info.nbtorch_version == nbtorch.__version__ and info.numba_version
    text = collect_env.get_pretty_env_info()
    for line in (f"nbtorch version: {nbtorch.__version__}", "Is CUDA available: ",
                 f"Numba threads: {info.numba_num_threads}", "Versions of relevant libraries:",
                 "[pip3] numpy==", "[pip3] numba=="):
        assert line in text
    collect_env.main()
    assert capsys.readouterr().out.startswith("Collecting environment information...\n")
