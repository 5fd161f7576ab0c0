"""``nbtorch.multiprocessing`` (PyTorch: ``torch.multiprocessing``): Python's
``multiprocessing`` plus tensors shared between processes.

Every name of ``multiprocessing`` is here (`Process`, `Queue`, `Pool`, `get_context`,
...), so ``import nbtorch.multiprocessing as mp`` is a drop-in. Importing it registers
reducers with multiprocessing's pickler: a tensor whose storage was moved to shared
memory (`Tensor.share_memory_`, `Module.share_memory`) and is sent through any
multiprocessing queue or pipe, or passed to a spawned process, arrives as the same
memory; other tensors travel by value. `spawn` runs ``fn(i, *args)`` in `nprocs`
processes and re-raises a child's failure with its traceback. See `_segment` for how
the shared memory is made and freed (sharing strategies).

Example (Hogwild):
    >>> model.share_memory()                                    # doctest: +SKIP
    >>> mp.spawn(train, args=(model,), nprocs=2)                # doctest: +SKIP
"""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from ._segment import set_sharing_strategy, get_sharing_strategy, get_all_sharing_strategies
from ._spawn import (ProcessContext, ProcessException, ProcessExitedException,
                     ProcessRaisedException, spawn, start_processes)
from .reductions import init_reductions

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "ProcessContext", "ProcessException", "ProcessExitedException",
           "ProcessRaisedException", "spawn", "start_processes"] + multiprocessing.__all__

init_reductions()
