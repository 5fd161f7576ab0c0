"""The exception classes of ``torch.distributed`` (all RuntimeErrors)."""

__all__ = ["DistError", "DistBackendError", "DistNetworkError", "DistStoreError"]


class DistError(RuntimeError):
    """A distributed operation failed."""


class DistBackendError(DistError):
    """The communication library failed, or a collective timed out."""


class DistNetworkError(DistError):
    """A network failure."""


class DistStoreError(DistError):
    """A key-value store failure (nbtorch has no store: MPI wires the processes)."""
