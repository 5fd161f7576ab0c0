"""``python -m nbtorch.distributed.run --nproc-per-node N train.py args``: the ``torchrun``
analog. It starts the ranks with the MPI library's ``mpiexec`` (the one beside this
Python first: the mpich wheel installs it there), gives each rank torchrun's environment
(RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), forwards
SIGINT/SIGTERM, and exits with mpiexec's status (non-zero when any rank failed; MPI then
stops the other ranks). Each rank gets OMP/NUMBA/OPENBLAS/MKL_NUM_THREADS = cores / ranks
unless they are set, so the ranks do not oversubscribe the cores.

Several machines: ``--nnodes M --hostfile hosts`` (MPICH's hydra or Open MPI's format).
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys

__all__ = ["find_mpiexec", "mpiexec_command", "main"]

# thread pools a rank may start: OpenMP (Numba's parallel loops), Numba, and the BLAS
# under NumPy's matmul (OpenBLAS workers spin after each GEMM and starve the other ranks)
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                     "MKL_NUM_THREADS")


def find_mpiexec():
    """The path of `mpiexec`: beside this Python (a venv's bin/, where the mpich wheel puts
    it), else on PATH; RuntimeError naming the extra when there is none."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("no mpiexec found beside this Python or on PATH: "
                           "pip install 'nbtorch[distributed]' (mpi4py and the mpich wheel)")
    return found


def _is_open_mpi(mpiexec):
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in out or "OpenRTE" in out


def mpiexec_command(nproc_per_node, script_args, nnodes=1, hostfile=None, master_addr=None,
                    master_port=None, module=False, mpiexec=None):
    """The argument list that starts `nnodes * nproc_per_node` ranks of `script_args`."""
    mpiexec = mpiexec or find_mpiexec()
    world = nnodes * nproc_per_node
    threads = str(max(1, (os.cpu_count() or 1) // nproc_per_node))
    env = {"WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(nproc_per_node),
           "MASTER_ADDR": master_addr or "127.0.0.1", "MASTER_PORT": str(master_port or 29500),
           **{k: os.environ.get(k, threads) for k in _THREAD_VARIABLES}}
    cmd = [mpiexec, "-n", str(world)]
    if _is_open_mpi(mpiexec):
        for k, v in env.items():
            cmd += ["-x", f"{k}={v}"]
        if hostfile:
            cmd += ["--hostfile", hostfile, "--map-by", f"ppr:{nproc_per_node}:node"]
    else:
        for k, v in env.items():
            cmd += ["-genv", k, v]
        if hostfile:
            cmd += ["-f", hostfile, "-ppn", str(nproc_per_node)]
    cmd += [sys.executable, "-m", "nbtorch.distributed._bootstrap"]
    cmd += (["-m"] if module else []) + list(script_args)
    return cmd


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m nbtorch.distributed.run",
                                description="Start a training script on N ranks through MPI.")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1)
    p.add_argument("--nnodes", type=int, default=1)
    p.add_argument("--hostfile", default=None, help="MPI hostfile (needed when nnodes > 1)")
    p.add_argument("--master-addr", "--master_addr", default=None)
    p.add_argument("--master-port", "--master_port", default=None)
    p.add_argument("-m", "--module", action="store_true", help="run a module, as python -m")
    p.add_argument("script", help="the training script (or module with -m)")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.nproc_per_node < 1 or args.nnodes < 1:
        p.error("--nproc-per-node and --nnodes must be at least 1")
    if args.nnodes > 1 and not args.hostfile:
        p.error("--nnodes > 1 needs --hostfile (MPI starts the ranks on those machines)")
    return args


def main(argv=None):
    """Run the job; returns mpiexec's exit status."""
    args = _parse(sys.argv[1:] if argv is None else argv)
    cmd = mpiexec_command(args.nproc_per_node, [args.script] + args.script_args, args.nnodes,
                          args.hostfile, args.master_addr, args.master_port, args.module)
    proc = subprocess.Popen(cmd)

    def forward(signum, frame):
        proc.send_signal(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = proc.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if code != 0:
        sys.stderr.write(f"nbtorch.distributed.run: the job failed (mpiexec exit status "
                         f"{code}); see the failing rank's traceback above\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
