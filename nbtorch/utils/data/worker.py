"""The DataLoader worker process: its loop, its identity, and its error reports.

Each worker owns one index queue (``(task index, sampler entry)`` in, ``None`` to stop)
and shares one result queue with the others. It pickles every result itself before
queueing it, so an unpicklable batch becomes an error message instead of a lost
sample, and the main process unpickles it (nbtorch tensors pickle as NumPy arrays plus
dtype, device and ``requires_grad``: see ``Tensor.__reduce_ex__``).
"""
import os
import pickle
import queue
import random
import sys
import traceback

import numpy as np

import nbtorch
from nbtorch.utils.data.fetch import create_fetcher

__all__ = ["WorkerInfo", "get_worker_info", "ExceptionWrapper"]

# How often a blocked worker checks that its parent is alive, and how often the main
# process checks its workers while it waits (seconds).
POLL_INTERVAL = 0.5

_worker_info = None


class WorkerInfo:
    """Who this worker is: ``id``, ``num_workers``, ``seed`` and its copy of ``dataset``."""

    __initialized = False

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            setattr(self, key, value)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, value):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, value)

    def __repr__(self):
        items = ", ".join(f"{key}={getattr(self, key)}" for key in self.__keys)
        return f"{self.__class__.__name__}({items})"


def get_worker_info():
    """Return this worker's ``WorkerInfo`` inside a DataLoader worker, None in the main process.

    Use it in ``IterableDataset.__iter__`` or ``worker_init_fn`` to shard the data.

    Example:
        >>> get_worker_info() is None   # in the main process
        True
    """
    return _worker_info


class _KeyErrorMessage(str):
    """A str whose repr is itself, so a KeyError shows a multi-line traceback readably."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process with its traceback text."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_type_name = exc_info[0].__name__
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        """Raise the same exception type, its message holding the worker's traceback."""
        message = f"Caught {self.exc_type_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            message = _KeyErrorMessage(message)
        try:
            exception = self.exc_type(message)
        except Exception:  # the type needs other constructor arguments
            raise RuntimeError(message) from None
        raise exception


class IterableStopped:
    """Sent by a worker whose IterableDataset stream has ended."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers to start a new epoch; echoed back as an acknowledgement."""


def numpy_seed(base_seed, worker_id):
    """A NumPy legacy-seed array derived from the loader's base seed and the worker id."""
    return np.random.SeedSequence([worker_id, base_seed % 2 ** 63]).generate_state(4)


def _seed_everything(seed, base_seed, worker_id):
    """Seed Python's, NumPy's and nbtorch's global generators differently in each worker."""
    random.seed(seed)
    np.random.seed(numpy_seed(base_seed, worker_id))
    nbtorch.manual_seed(seed)


def _pickled(task_index, data, worker_id):
    """Pickle ``(task_index, data)``; an unpicklable batch becomes a picklable error."""
    try:
        return pickle.dumps((task_index, data), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        if isinstance(data, ExceptionWrapper):  # its exception class cannot be imported
            data.exc_type = RuntimeError       # (the message keeps the original name)
            return pickle.dumps((task_index, data), protocol=pickle.HIGHEST_PROTOCOL)
        error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id} "
                                       "while pickling a batch")
        return _pickled(task_index, error, worker_id)


def _serve(is_iterable, dataset, index_queue, result_queue, done_event, auto_collation,
           collate_fn, drop_last, worker_id, parent_pid, fetcher, pending_error):
    """The worker's request loop (see ``worker_loop``)."""
    where = f"in DataLoader worker process {worker_id}"
    stream_ended = False
    while True:
        try:
            request = index_queue.get(timeout=POLL_INTERVAL)
        except queue.Empty:
            # Stop when orphaned, or when shut down but the None never arrived (the main
            # process's queue can be finalized first when its iterator is garbage-collected).
            if os.getppid() != parent_pid or done_event.is_set():
                break
            continue
        except (EOFError, OSError):  # the main process closed the queue
            break
        if request is None:
            break
        if isinstance(request, ResumeIteration):
            stream_ended = False
            try:
                fetcher = None
                fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn,
                                         drop_last)
            except Exception:
                pending_error = ExceptionWrapper(where=where)
            result_queue.put(pickle.dumps((request, None)))
            continue
        if done_event.is_set() or stream_ended:
            continue  # the epoch is over: ignore leftover tasks
        task_index, index = request
        if pending_error is not None:
            data = pending_error
            if fetcher is not None:  # without a fetcher every task reports the failure
                pending_error = None
        else:
            try:
                data = fetcher.fetch(index)
            except StopIteration:
                if not is_iterable:
                    data = ExceptionWrapper(where=where)
                else:
                    data, stream_ended = IterableStopped(worker_id), True
            except Exception:
                data = ExceptionWrapper(where=where)
        result_queue.put(_pickled(task_index, data, worker_id))
        del data, request, index


def worker_loop(is_iterable, dataset, index_queue, result_queue, done_event, auto_collation,
                collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers, parent_pid):
    """Serve ``index_queue`` until it sends None (or the parent dies): fetch, pickle, queue."""
    global _worker_info
    where = f"in DataLoader worker process {worker_id}"
    seed = base_seed + worker_id
    _seed_everything(seed, base_seed, worker_id)
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    pending_error = None  # an init failure, reported as the answer to the first task
    try:
        fetcher = None
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = create_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
    except Exception:
        pending_error = ExceptionWrapper(where=where)
    try:
        _serve(is_iterable, dataset, index_queue, result_queue, done_event, auto_collation,
               collate_fn, drop_last, worker_id, parent_pid, fetcher, pending_error)
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the main process reports it
        pass
    if done_event.is_set():
        result_queue.cancel_join_thread()  # exit even if nobody reads what is left
    result_queue.close()
