"""Start a worker script on N MPI ranks (mpiexec from the venv's bin/, as
nbtorch.distributed.run finds it), in a session of its own so a timeout kills every rank:
a broken collective ends the test within `timeout` seconds, never hangs it."""
import fcntl
import json
import os
import signal
import subprocess
import sys

import pytest

WORKERS = os.path.join(os.path.dirname(__file__), "workers")


def mpi_or_skip():
    pytest.importorskip("mpi4py", reason="the distributed extra (mpi4py, mpich) is missing")
    from nbtorch.distributed.run import find_mpiexec
    try:
        return find_mpiexec()
    except RuntimeError as e:
        pytest.skip(str(e))


def run_ranks(script, n=2, timeout=60, args=(), env=None, report=None, launcher=False):
    """Run workers/<script> on `n` ranks (through `python -m nbtorch.distributed.run` when
    `launcher`); returns (returncode, stdout, stderr). Workers write their check lines to
    `report`.<rank> (stdout interleaves the ranks)."""
    mpiexec = mpi_or_skip()
    full_env = dict(os.environ, OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1",
                    OPENBLAS_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE", **(env or {}))
    if report:
        full_env["NBTORCH_TEST_REPORT"] = str(report)
    cmd = [mpiexec, "-n", str(n), sys.executable, os.path.join(WORKERS, script), *args]
    if launcher:
        cmd = [sys.executable, "-m", "nbtorch.distributed.run", "--nproc-per-node", str(n),
               os.path.join(WORKERS, script), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=full_env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # SIGTERM first: mpiexec then stops its ranks, which MPICH's hydra runs in
        # sessions of their own (a SIGKILLed mpiexec would leave them running)
        proc.terminate()
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        pytest.fail(f"{script} on {n} ranks did not finish in {timeout} s\n{out}\n{err}")
    return proc.returncode, out, err


def results(report, n=2):
    """{(rank, check): 'PASS' or the failure message} from the workers' report files."""
    got = {}
    lines = []
    for r in range(n):
        path = f"{report}.{r}"
        if os.path.exists(path):
            with open(path) as f:
                lines += f.read().splitlines()
    for line in lines:
        if line.startswith("[") and "] " in line:
            rank, rest = line[1:].split("] ", 1)
            word, _, name = rest.partition(" ")
            if word in ("PASS", "FAIL"):
                name, _, msg = name.partition(": ")
                got[(int(rank), name)] = "PASS" if word == "PASS" else msg.replace(" | ", "\n")
    return got


def shared_job(tmp_path_factory, script, **kw):
    """(returncode, {(rank, check): result}, log) of `script` on 2 ranks, run once per
    pytest session even when pytest-xdist spreads a file's tests over several workers
    (they share the base temporary directory's parent; a file lock picks the runner)."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    done = root / f"{script}.json"
    with open(root / f"{script}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            report = root / f"{script}.report"
            code, out, err = run_ranks(script, report=report, **kw)
            got = [[r, name, v] for (r, name), v in results(report).items()]
            done.write_text(json.dumps([code, got, out + err]))
    code, got, log = json.loads(done.read_text())
    return code, {(r, name): v for r, name, v in got}, log
