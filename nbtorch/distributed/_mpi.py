"""mpi4py, imported on first use: `import nbtorch` never loads MPI, and a missing
install is one clear error naming the extra to install."""
import importlib.util

__all__ = ["mpi", "mpi_available"]

_INSTALL = ("nbtorch.distributed needs mpi4py and an MPI library: "
            "pip install 'nbtorch[distributed]' (mpi4py and the mpich wheel)")


def mpi_available():
    """True when mpi4py can be imported (MPI itself is not started)."""
    try:
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):
        return False


def mpi():
    """The `mpi4py.MPI` module; importing it starts MPI (MPI_Init_thread) in this process."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError(f"{_INSTALL} ({e})") from e
    return MPI
