"""PyTorch's tutorial programs, run unmodified under ``import nbtorch as torch``.

Each program in ``programs/`` is a PyTorch tutorial or example as its users know it, with
only the import lines (``nbtorch`` for ``torch``) and the data source changed (no
downloads: synthetic tensors or the Digits set that ships with nbtorch, read by
``programs/_data.py`` with NumPy). It runs in a subprocess and prints a few numbers.

* ``test_tutorial``: nbtorch's output against PyTorch's, recorded in ``expected/`` (so the
  check runs where PyTorch is not installed, as in CI).
* ``test_tutorial_vs_pytorch``: where PyTorch is importable, the same program with
  ``torch`` imported instead, in a process of its own, against nbtorch's output and
  against the recorded one.

nbtorch's CPU random streams equal PyTorch's after ``manual_seed``, so outputs agree
number for number up to float32 rounding (summation orders differ): text equal, numbers
within ``rtol``/``atol``. Re-record after changing a program:
``.venv/bin/python tests/tutorials/test_tutorials.py`` (needs PyTorch).
"""
import functools
import math
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS_DIR = os.path.join(HERE, "programs")
EXPECTED_DIR = os.path.join(HERE, "expected")
PROGRAMS = sorted(name[:-3] for name in os.listdir(PROGRAMS_DIR)
                  if name.endswith(".py") and not name.startswith("_"))

RTOL, ATOL = 1e-4, 1e-6
# Looser where a program needs it, with the reason (none does today).
TOLERANCES = {}

# One BLAS/OpenMP thread in both frameworks: PyTorch's reductions then run in one fixed
# order (the recorded outputs do not depend on the machine), and 2-core CI machines are
# not oversubscribed.
_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "PYTHONPATH": PROGRAMS_DIR, "PYTHONIOENCODING": "utf-8"}
_IMPORT_LINE = re.compile(r"^(\s*(?:import|from)\s+)nbtorch\b", re.MULTILINE)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?inf\b|\bnan\b")


def _run(source_path, cwd):
    """stdout of ``python source_path`` (the run fails the test with its stderr)."""
    env = dict(os.environ, **_ENV)
    done = subprocess.run([sys.executable, source_path], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=600, encoding="utf-8")
    if done.returncode != 0:
        pytest.fail(f"{os.path.basename(source_path)} failed:\n{done.stderr[-4000:]}")
    return done.stdout


@functools.lru_cache(maxsize=None)
def nbtorch_output(name):
    """What program ``name`` prints under nbtorch (run once per test process)."""
    return _run(os.path.join(PROGRAMS_DIR, name + ".py"), PROGRAMS_DIR)


def torch_source(name):
    """Program ``name`` with its ``nbtorch`` import lines importing ``torch`` instead."""
    with open(os.path.join(PROGRAMS_DIR, name + ".py"), encoding="utf-8") as handle:
        return _IMPORT_LINE.sub(r"\1torch", handle.read())


def torch_output(name, folder):
    """What program ``name`` prints under PyTorch (written to ``folder`` and run there)."""
    path = os.path.join(folder, name + "_torch.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(torch_source(name))
    return _run(path, folder)


def expected_output(name):
    with open(os.path.join(EXPECTED_DIR, name + ".txt"), encoding="utf-8") as handle:
        return handle.read()


def _split(text):
    """(the text with each number replaced by '#' and whitespace runs collapsed, the numbers).
    Printed autograd node names (``grad_fn=<NllLossBackward0>``) are text: compared exactly."""
    numbers = [float(token) for token in _NUMBER.findall(text)]
    skeleton = " ".join(_NUMBER.sub("#", text).split())
    return skeleton, numbers


def assert_same_output(name, got, want):
    """Text equal, numbers within the program's tolerance, else a message naming the first
    differing number and the line it is on."""
    rtol, atol = TOLERANCES.get(name, (RTOL, ATOL, ""))[:2]
    got_skeleton, got_numbers = _split(got)
    want_skeleton, want_numbers = _split(want)
    if got_skeleton != want_skeleton:
        got_lines, want_lines = got.splitlines(), want.splitlines()
        for index, (line, wanted) in enumerate(zip(got_lines, want_lines)):
            if _split(line)[0] != _split(wanted)[0]:
                pytest.fail(f"{name}: line {index + 1} differs:\n  got:  {line}\n  want: {wanted}")
        pytest.fail(f"{name}: {len(got_lines)} lines printed, {len(want_lines)} expected")
    for got_value, want_value in zip(got_numbers, want_numbers):
        if not (got_value == want_value or (math.isnan(got_value) and math.isnan(want_value))
                or abs(got_value - want_value) <= atol + rtol * abs(want_value)):
            line = next(line for line in got.splitlines() if _NUMBER.search(line) and
                        any(float(t) == got_value for t in _NUMBER.findall(line)))
            pytest.fail(f"{name}: {got_value!r} where PyTorch gives {want_value!r} "
                        f"(rtol {rtol}, atol {atol}), on the line\n  {line}")


@pytest.mark.parametrize("name", PROGRAMS)
def test_tutorial(name):
    assert_same_output(name, nbtorch_output(name), expected_output(name))


@pytest.mark.parametrize("name", PROGRAMS)
def test_tutorial_vs_pytorch(name, tmp_path):
    pytest.importorskip("torch")
    live = torch_output(name, str(tmp_path))
    assert_same_output(name, nbtorch_output(name), live)
    assert_same_output(name, live, expected_output(name))


def test_programs_import_only_nbtorch():
    """The programs are PyTorch's with only the import lines changed: no ``torch`` import."""
    for name in PROGRAMS:
        source = torch_source(name)
        with open(os.path.join(PROGRAMS_DIR, name + ".py"), encoding="utf-8") as handle:
            original = handle.read()
        assert "import torch" not in original and "from torch" not in original, name
        assert source != original, f"{name} imports nothing from nbtorch"


if __name__ == "__main__":      # record PyTorch's outputs into expected/
    import tempfile
    os.makedirs(EXPECTED_DIR, exist_ok=True)
    for program in sys.argv[1:] or PROGRAMS:
        with tempfile.TemporaryDirectory() as scratch:
            output = torch_output(program, scratch)
        with open(os.path.join(EXPECTED_DIR, program + ".txt"), "w", encoding="utf-8") as out:
            out.write(output)
        print(f"recorded {program}: {len(output.splitlines())} lines")
