"""What `nbtorch.distributed.run` starts on each rank: torchrun's per-rank variables from
the MPI launcher's own (PMI_RANK, MPI_LOCALRANKID; Open MPI's OMPI_COMM_WORLD_*), then
the user's script or module as __main__."""
import os
import runpy
import sys

_SOURCES = {"RANK": ("PMI_RANK", "OMPI_COMM_WORLD_RANK"),
            "LOCAL_RANK": ("MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK")}


def main():
    for name, sources in _SOURCES.items():
        for src in sources:
            if src in os.environ:
                os.environ[name] = os.environ[src]
                break
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1")) or 1
    os.environ.setdefault("GROUP_RANK", str(int(os.environ.get("RANK", "0")) // local))
    args = sys.argv[1:]
    if args and args[0] == "-m":
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
