"""python -m nbtorch.distributed.run: the mpiexec command it builds (MPICH's hydra here)
and its argument errors; a real 2-rank job through it runs in test_collectives.py."""
import sys

import pytest

from _launch import mpi_or_skip


def test_command_for_two_nodes_of_two_ranks():
    from nbtorch.distributed.run import mpiexec_command
    mpiexec = mpi_or_skip()
    cmd = mpiexec_command(2, ["train.py", "--lr", "1"], nnodes=2, hostfile="hosts",
                          master_port=1234, mpiexec=mpiexec)
    assert cmd[:3] == [mpiexec, "-n", "4"]
    assert cmd[cmd.index("-f") + 1] == "hosts" and cmd[cmd.index("-ppn") + 1] == "2"
    env = {cmd[i + 1]: cmd[i + 2] for i, a in enumerate(cmd) if a == "-genv"}
    assert env["WORLD_SIZE"] == "4" and env["LOCAL_WORLD_SIZE"] == "2"
    assert env["MASTER_PORT"] == "1234"
    assert cmd[-6:] == [sys.executable, "-m", "nbtorch.distributed._bootstrap", "train.py",
                        "--lr", "1"]


def test_argument_errors():
    from nbtorch.distributed.run import main
    with pytest.raises(SystemExit):
        main(["--nnodes", "2", "train.py"])           # several machines need a hostfile
    with pytest.raises(SystemExit):
        main(["--nproc-per-node", "0", "train.py"])
