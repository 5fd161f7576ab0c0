"""examples/ddp_digits.py through the launcher (-m slow: two jobs of a few seconds): on 1
and on 2 ranks the same global batches give the same losses, and replicas stay equal."""
import os
import re
import subprocess
import sys

import pytest

from _launch import mpi_or_skip

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "ddp_digits.py")


def _losses(n):
    out = subprocess.run([sys.executable, "-m", "nbtorch.distributed.run", "--nproc-per-node",
                          str(n), EXAMPLE, "--epochs", "2"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "replicas identical on all ranks: True" in out.stdout
    return [float(v) for v in re.findall(r"train loss ([0-9.]+)", out.stdout)]


@pytest.mark.slow
def test_two_ranks_train_as_one():
    mpi_or_skip()
    one, two = _losses(1), _losses(2)
    assert len(one) == len(two) == 2
    assert one == pytest.approx(two, abs=2e-4)
