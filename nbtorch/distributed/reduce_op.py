"""`ReduceOp` and its MPI counterparts, with the type rules PyTorch's backends apply."""
import enum

from .. import _dtype

__all__ = ["ReduceOp", "mpi_op", "check_op"]


class ReduceOp(enum.IntEnum):
    """How a reduction combines the ranks' values (``torch.distributed.ReduceOp``).
    AVG is a SUM divided by the group size (floating-point and complex tensors only)."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8



_MPI_NAMES = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD",
              ReduceOp.MIN: "MIN", ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND",
              ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}
# on bool tensors the arithmetic ops are logical ones (True + True stays True)
_BOOL_NAMES = {ReduceOp.SUM: "LOR", ReduceOp.PRODUCT: "LAND", ReduceOp.MIN: "LAND",
               ReduceOp.MAX: "LOR", ReduceOp.BAND: "LAND", ReduceOp.BOR: "LOR",
               ReduceOp.BXOR: "LXOR"}


def check_op(op, dtype, what):
    """PyTorch's refusals: bitwise ops on floats, ordering on complex, AVG on integers."""
    try:
        op = ReduceOp(op)
    except ValueError:
        raise ValueError(f"{what}: unknown reduce op {op!r}") from None
    if op is ReduceOp.PREMUL_SUM:
        raise NotImplementedError(f"{what}: ReduceOp.PREMUL_SUM is only in PyTorch's NCCL "
                                  "backend; scale the tensor and use ReduceOp.SUM")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and (
            dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{what}: Cannot use ReduceOp.{op.name} with {dtype}")
    if op in (ReduceOp.MIN, ReduceOp.MAX) and dtype.is_complex:
        raise RuntimeError(f"{what}: Cannot use ReduceOp.{op.name} with complex inputs")
    if op is ReduceOp.AVG and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{what}: ReduceOp.AVG needs a floating-point or complex tensor, "
                           f"got {dtype}")
    return op


def mpi_op(MPI, op, dtype):
    """The MPI.Op for `op` on tensors of `dtype`."""
    names = _BOOL_NAMES if dtype is _dtype.bool else _MPI_NAMES
    return getattr(MPI, names[op])
