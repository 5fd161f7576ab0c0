"""``NBTORCH_DISTRIBUTED_DEBUG=DETAIL`` (or PyTorch's ``TORCH_DISTRIBUTED_DEBUG``): before
each collective the ranks exchange what they are about to run (operation, shapes, dtypes,
root) and raise, all of them, when it differs, instead of exchanging garbage or waiting
until the timeout. It costs one small all-gather per collective."""
import os

import numpy as np

from .work import wait_requests

__all__ = ["detail_enabled", "check_collective"]

_WIDTH = 240


def detail_enabled():
    level = os.environ.get("NBTORCH_DISTRIBUTED_DEBUG") or os.environ.get(
        "TORCH_DISTRIBUTED_DEBUG", "")
    return level.upper() == "DETAIL"


def fingerprint(pg, what, tensors=(), **extra):
    shapes = [list(t.shape) for t in tensors]
    dtypes = sorted({str(t.dtype).replace("torch.", "") for t in tensors})
    parts = [f"SequenceNumber={pg._seq}", f"OpType={what}"]
    if tensors:
        parts += [f"TensorShape={shapes}", f"TensorDtypes={dtypes}"]
    parts += [f"{k}={v}" for k, v in extra.items()]
    return "CollectiveFingerPrint(" + ", ".join(parts) + ")"


def check_collective(pg, what, tensors=(), **extra):
    """All ranks of `pg` compare fingerprints; RuntimeError naming the ranks that differ."""
    pg._seq += 1
    if not detail_enabled():
        return
    mine = fingerprint(pg, what, tensors, **extra).encode()[:_WIDTH].ljust(_WIDTH)
    send = np.frombuffer(mine, np.uint8).copy()
    recv = np.empty(_WIDTH * pg.size(), np.uint8)
    req = pg.comm.Iallgather(send, recv)
    wait_requests([req], pg, f"{what} (debug check)")
    prints = [bytes(recv[i * _WIDTH:(i + 1) * _WIDTH]).decode().rstrip()
              for i in range(pg.size())]
    me = pg.rank()
    for r, p in enumerate(prints):
        if p != prints[me]:
            raise RuntimeError(
                f"Detected mismatch between collectives on ranks. Rank {pg.ranks[me]} is "
                f"running collective: {prints[me]}, but Rank {pg.ranks[r]} is running "
                f"collective: {p}.")
