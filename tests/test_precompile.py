"""`python -m nbtorch.precompile`: ahead-of-time compilation into Numba's disk cache.

A workload run once leaves every kernel it needs in the cache: running it again in a
fresh process compiles nothing. (The first run loads what the suite compiled already,
so the test adds little compile time to a cold run; the kernels it compiles are the
demo's, which other tests reuse.)
"""
import subprocess
import sys

import pytest

from nbtorch import precompile


def _run(*args):
    return subprocess.run([sys.executable, "-m", "nbtorch.precompile", *args],
                          capture_output=True, text=True, timeout=300)


def test_second_run_compiles_nothing():
    first = _run("cnn", "--jobs", "1")
    assert first.returncode == 0, first.stderr
    second = _run("cnn", "--jobs", "1")
    assert second.returncode == 0, second.stderr
    assert "precompile: cnn: 0 functions compiled" in second.stdout, second.stdout
    assert "loaded from the cache" in second.stdout and "done in" in second.stdout


def test_unknown_workload_is_an_error(capsys):
    with pytest.raises(SystemExit) as info:
        precompile.main(["nope"])
    assert info.value.code == 2
    assert "unknown workload 'nope' (choose from cnn, transformer, mlp, elementwise)" in capsys.readouterr().err


def test_workloads_are_listed():
    assert list(precompile.WORKLOADS) == ["cnn", "transformer", "mlp", "elementwise"]
