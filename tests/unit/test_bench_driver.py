"""The benchmark driver (benchmarks/_driver.py): statistics, ratios, tables, case selection,
and one real round trip through a NumPy worker. Nothing here depends on speed."""
import os
import sys
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
sys.path.insert(0, os.path.abspath(BENCH))

import _driver  # noqa: E402
import _limits  # noqa: E402
import _report  # noqa: E402
import _stats  # noqa: E402
from _case import Case  # noqa: E402


@pytest.mark.parametrize("xs", [[3.0], [1.0, 2.0], [5.0, 1.0, 4.0, 2.0, 3.0],
                                [0.2, 7.5, 1.25, 3.0, 3.0, 9.0]])
@pytest.mark.parametrize("q", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_quantile_matches_numpy(xs, q):
    assert _stats.quantile(xs, q) == pytest.approx(np.quantile(xs, q))


def test_quantile_rejects_empty_and_bad_q():
    with pytest.raises(ValueError, match="empty"):
        _stats.median([])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        _stats.quantile([1.0], 1.5)


def test_summarize_median_iqr_and_range():
    s = _stats.summarize([4.0, 1.0, 3.0, 2.0, 10.0])
    assert s == {"median": 3.0, "q1": 2.0, "q3": 4.0, "min": 1.0, "max": 10.0, "rounds": 5}


def test_ratio_of_medians_and_overlap():
    a = _stats.summarize([2.0, 2.2, 2.4])
    b = _stats.summarize([1.0, 1.1, 1.2])
    value, overlap = _stats.ratio(a, b)
    assert value == pytest.approx(2.2 / 1.1) and not overlap
    c = _stats.summarize([1.1, 2.1, 3.0])
    assert _stats.ratio(a, c) == (pytest.approx(2.2 / 2.1), True)
    assert _stats.ratio(a, None) is None
    assert _stats.fmt_ratio(_stats.ratio(a, b)) == "2.00"
    assert _stats.fmt_ratio(_stats.ratio(a, c)) == "1.05~"
    assert _stats.fmt_ratio(None) == "-"


def test_fraction_of_a_limit():
    s = _stats.summarize([0.01, 0.01, 0.01])              # 10 ms per call
    # 120 MB per call at 10 ms = 12 GB/s, against a 24 GB/s copy
    assert _stats.fraction(s, 120e6, 24e9) == pytest.approx(0.5)
    assert _stats.fraction(s, None, 24e9) is None
    assert _stats.fraction(None, 1.0, 1.0) is None
    assert _stats.fmt_fraction(0.456) == "0.46"


def test_formatting():
    assert _stats.fmt_time(1.234e-6) == "1.23 us"
    assert _stats.fmt_time(0.01234) == "12.3 ms"
    assert _stats.fmt_time(123.4e-3) == "123 ms"
    assert _stats.fmt_time(2.5) == "2.50 s"
    assert _stats.fmt_time(None) == "-"
    s = _stats.summarize([0.98, 1.0, 1.05])
    assert _stats.fmt_spread(s) == "-2/+5%"
    assert _stats.fmt_cell(s) == "1.00 s -2/+5%"
    assert _stats.fmt_cell(_stats.summarize([1.0])) == "1.00 s"       # one round: no spread
    table = _stats.markdown_table(["case", "t"], [["a", "1.0"], ["longer", "22"]])
    assert table.splitlines() == ["| case   |   t |", "|--------|----:|",
                                  "| a      | 1.0 |", "| longer |  22 |"]


def test_rotated_order_and_selection():
    assert [_driver.rotated([1, 2, 3], r) for r in range(4)] == [
        [1, 2, 3], [2, 3, 1], [3, 1, 2], [1, 2, 3]]
    cases = [Case("add 1e7", "elementwise", numpy=1), Case("matmul 128", "matmul", numpy=1)]
    for c in cases:
        c.module = "bench_x"
    assert [c.name for c in _driver.select_cases(cases, "MATMUL")] == ["matmul 128"]
    assert len(_driver.select_cases(cases, "add, matmul")) == 2
    assert len(_driver.select_cases(cases, "")) == 2
    assert _driver.select_cases(cases, "conv") == []


def test_limits_needed_by_cases():
    names = {c.name for c in _limits.needed([Case("x", "g", bytes=8, limit="copy 1e6")])}
    assert names == {"copy 1e6 float32"}
    names = {c.name for c in _limits.needed([Case("x", "g", bytes=8), Case("y", "g", flops=1)])}
    assert names == {"copy 1e7 float32", "copy 1e7 float32, fresh output",
                     "GEMM 1024 float32", "GEMM 2048 float32"}


def test_every_case_module_lists_cases_without_importing_frameworks():
    import subprocess
    code = ("import sys; sys.path.insert(0, %r); import _driver, run; "
            "cases = _driver.load_cases(run.MODULES); "
            "assert len({(c.module, c.name) for c in cases}) == len(cases); "
            "assert all(c.frameworks() for c in cases); "
            "assert 'nbtorch' not in sys.modules and 'torch' not in sys.modules; "
            "print(len(cases))" % os.path.abspath(BENCH))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 50


_FAKE = textwrap.dedent('''
    from _case import Case, Skip

    def _add(np):
        a = np.ones(10, np.float32)
        return lambda: a + a

    def _skip(np):
        raise Skip("not here")

    def _broken(np):
        raise RuntimeError("broken setup")

    CASES = [Case("add", "g", numpy=_add, memory=True, bytes=120),
             Case("skip", "g", numpy=_skip), Case("broken", "g", numpy=_broken)]
''')


def test_round_trip_through_a_numpy_worker(tmp_path, monkeypatch):
    (tmp_path / "fake_cases.py").write_text(_FAKE)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    args = SimpleNamespace(warmup=1, min_sample_ms=1.0, rounds=2, samples=2, gap_ms=0.0,
                           quiet_max_ms=100.0, timeout=120.0, threads=1, memory_steps=2,
                           log_dir=str(tmp_path))
    cases = _driver.load_cases(["fake_cases"])
    worker = _driver.Worker("numpy", "numpy", threads=1, warm_mb=0, log_dir=str(tmp_path))
    try:
        hello = worker.start()
        assert hello["framework"] == "numpy" and hello["env"]["OMP_NUM_THREADS"] == "1"
        add, skip, broken = (_driver.run_case(c, [worker], args, log=lambda m: None)["numpy"]
                             for c in cases)
    finally:
        worker.close()
    assert len(add["rounds"]) == 2 and add["number"] >= 1 and len(add["processes"]) == 1
    assert add["summary"]["rounds"] == 2 and add["summary"]["min"] > 0
    assert skip == {"skip": "Skip: not here"}
    assert "broken setup" in broken["error"]
    mem = _driver.measure_memory(cases[0], [("numpy", "numpy", None)], args)
    assert mem["numpy"]["peak_kb"] >= mem["numpy"]["base_kb"] > 0


def test_a_frameworks_processes_pool_their_rounds(tmp_path, monkeypatch):
    (tmp_path / "fake_cases.py").write_text(_FAKE)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    args = SimpleNamespace(warmup=1, min_sample_ms=1.0, rounds=2, samples=2, gap_ms=0.0,
                           quiet_max_ms=100.0, timeout=120.0, threads=1,
                           log_dir=str(tmp_path))
    add, skip, broken = _driver.load_cases(["fake_cases"])
    workers = [_driver.Worker("numpy", "numpy", threads=1, warm_mb=0, log_dir=str(tmp_path),
                              index=k) for k in range(2)]
    try:
        for w in workers:
            w.start()
        res = _driver.run_case(add, workers, args, log=lambda m: None)["numpy"]
        failed = _driver.run_case(broken, workers, args, log=lambda m: None)["numpy"]
    finally:
        for w in workers:
            w.close()
    assert len(res["rounds"]) == 4 and res["summary"]["rounds"] == 4   # 2 rounds x 2
    assert len(res["processes"]) == 2 and all(t > 0 for t in res["processes"])
    assert "broken setup" in failed["error"]
    assert _report._apart([1.0, 1.2]) and not _report._apart([1.0, 1.05])
    assert not _report._apart([1.0]) and not _report._apart(None)


@pytest.mark.parametrize("argv", [["--processes", "0"], ["--rounds", "0"]])
def test_processes_and_rounds_must_be_positive(argv, capsys):
    with pytest.raises(SystemExit):
        _driver.parse_args(argv)
    assert "must be at least 1" in capsys.readouterr().err
