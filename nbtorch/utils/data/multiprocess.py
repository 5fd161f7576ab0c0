"""The multi-process DataLoader iterator: workers, queues, and in-order delivery.

Task ``k`` is the ``k``-th entry of the index sampler. Tasks go round-robin to the
workers' own index queues, at most ``prefetch_factor * num_workers`` ahead of the
batch being delivered; results come back on one shared queue in any order and wait in
a reorder buffer until their turn, so batches arrive in sampler order and none is lost
or repeated. While waiting, the main process wakes every ``POLL_INTERVAL`` seconds to
check that the workers it waits on are alive: a dead worker is a RuntimeError, never a
hang. A worker's exception is re-raised here with the worker's traceback in its message.
"""
import itertools
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import time

from nbtorch.utils.data.dataloader import BaseIter
from nbtorch.utils.data.worker import (
    POLL_INTERVAL, ExceptionWrapper, IterableStopped, ResumeIteration, worker_loop,
)

__all__ = ["MultiProcessIter"]

_JOIN_TIMEOUT = 5.0  # seconds a worker gets to exit cleanly before it is terminated


def _context(multiprocessing_context):
    """The multiprocessing context: the given one, else 'fork' on Linux, else the default."""
    if multiprocessing_context is None:
        if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
            return multiprocessing.get_context("fork")
        return multiprocessing.get_context()
    if isinstance(multiprocessing_context, str):
        return multiprocessing.get_context(multiprocessing_context)
    return multiprocessing_context


def _describe_exit(process):
    """'pid 123 exited unexpectedly with exit code 3' or '... killed by signal SIGKILL'."""
    code = process.exitcode
    if code is not None and code < 0:
        try:
            how = f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exit code {code}"
    return f"DataLoader worker (pid {process.pid}) exited unexpectedly ({how})"


class MultiProcessIter(BaseIter):
    """Deliver the batches that ``loader.num_workers`` worker processes fetch, in order."""

    def __init__(self, loader):
        super().__init__(loader)
        self._prefetch_factor = loader.prefetch_factor
        self._persistent_workers = loader.persistent_workers
        self._shutdown = False
        self._failure = None  # why the workers were stopped early, if they were
        context = _context(loader.multiprocessing_context)
        self._result_queue = context.Queue()
        self._done_event = context.Event()
        self._index_queues, self._workers = [], []
        for worker_id in range(self._num_workers):
            index_queue = context.Queue()
            index_queue.cancel_join_thread()  # never block interpreter exit on stale indices
            worker = context.Process(
                target=worker_loop, daemon=True,
                args=(self._is_iterable, self._dataset, index_queue, self._result_queue,
                      self._done_event, self._auto_collation, self._collate_fn,
                      self._drop_last, self._base_seed, loader.worker_init_fn, worker_id,
                      self._num_workers, os.getpid()))
            worker.start()
            self._index_queues.append(index_queue)
            self._workers.append(worker)
        self._start_epoch()

    # ---- epoch bookkeeping ----------------------------------------------------------
    def _start_epoch(self):
        """Reset the task counters and send the first ``prefetch_factor * workers`` tasks."""
        self._send_index = 0      # next task to send
        self._receive_index = 0   # next task to deliver
        self._task_worker = {}    # task -> worker it was sent to, until delivered
        self._buffer = {}         # task -> result that arrived early
        self._worker_active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        self._sampler_exhausted = False
        for _ in range(self._prefetch_factor * self._num_workers):
            self._send_next_task()

    def _reset(self, loader):
        """Start a new epoch on persistent workers, after draining the previous one."""
        super()._reset(loader)
        for index_queue in self._index_queues:
            index_queue.put(ResumeIteration())
        acknowledgements = 0
        while acknowledgements < self._num_workers:  # each ack follows that worker's old tasks
            task, _ = self._get_result(self._workers)
            if isinstance(task, ResumeIteration):
                acknowledgements += 1
        self._start_epoch()

    def _send_next_task(self):
        """Send the next sampler entry to the next active worker, if there is room and work."""
        if self._sampler_exhausted:
            return
        if self._send_index - self._receive_index >= self._prefetch_factor * self._num_workers:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_cycle)
            if self._worker_active[worker_id]:
                break
        else:
            return  # every worker's stream has ended
        try:
            index = self._next_index()
        except StopIteration:
            self._sampler_exhausted = True
            return
        self._index_queues[worker_id].put((self._send_index, index))
        self._task_worker[self._send_index] = worker_id
        self._send_index += 1

    # ---- receiving ------------------------------------------------------------------
    def _get_result(self, watched_workers):
        """Return the next ``(task, data)`` from any worker, checking ``watched_workers``.

        Raises RuntimeError when a watched worker has died or when ``timeout`` passes.
        """
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = POLL_INTERVAL
            if deadline is not None:
                wait = min(wait, max(deadline - time.monotonic(), 0.0))
            try:
                payload = self._result_queue.get(timeout=wait)
            except queue.Empty:
                dead = [worker for worker in watched_workers if not worker.is_alive()]
                if dead:
                    self._failure = "; ".join(_describe_exit(worker) for worker in dead)
                    self._shutdown_workers()
                    raise RuntimeError(self._failure) from None
                if deadline is not None and time.monotonic() >= deadline:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds"
                                       ) from None
                continue
            return pickle.loads(payload)

    def _active_workers(self):
        return [w for w, active in zip(self._workers, self._worker_active) if active]

    def _next_data(self):
        if self._shutdown:
            if self._failure is not None:
                raise RuntimeError(f"this DataLoader iterator stopped: {self._failure}")
            raise StopIteration
        while True:
            # Skip tasks sent to workers whose stream ended: they will never be answered.
            while (self._receive_index < self._send_index
                   and self._receive_index not in self._buffer
                   and not self._worker_active[self._task_worker[self._receive_index]]):
                del self._task_worker[self._receive_index]
                self._receive_index += 1
                self._send_next_task()
            if self._receive_index >= self._send_index:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if self._receive_index in self._buffer:
                return self._deliver(self._buffer.pop(self._receive_index))
            task, data = self._get_result(self._active_workers())
            if isinstance(data, IterableStopped):
                self._mark_stopped(data.worker_id)  # its tasks from `task` on are skipped
                continue
            if task == self._receive_index:
                return self._deliver(data)
            self._buffer[task] = data

    def _mark_stopped(self, worker_id):
        """A worker's IterableDataset stream ended: send it no more tasks (stop it if allowed)."""
        self._worker_active[worker_id] = False
        if not self._persistent_workers:
            self._index_queues[worker_id].put(None)

    def _deliver(self, data):
        """Hand over task ``_receive_index``'s result and top the pipeline up."""
        del self._task_worker[self._receive_index]
        self._receive_index += 1
        self._send_next_task()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    # ---- shutdown -------------------------------------------------------------------
    def _shutdown_workers(self):
        """Stop every worker (politely, then by force) and close the queues. Idempotent."""
        if self._shutdown:
            return
        self._shutdown = True
        self._done_event.set()
        for worker, index_queue in zip(self._workers, self._index_queues):
            if worker.is_alive():
                try:
                    index_queue.put(None)
                except (OSError, ValueError):
                    pass
        deadline = time.monotonic() + _JOIN_TIMEOUT
        for worker in self._workers:
            worker.join(timeout=max(deadline - time.monotonic(), 0.0))
            if worker.is_alive():
                worker.terminate()
                worker.join()
        for index_queue in self._index_queues:
            index_queue.close()
        self._result_queue.cancel_join_thread()
        self._result_queue.close()

    def __del__(self):
        if getattr(self, "_workers", None) is not None and not getattr(self, "_shutdown", True):
            try:
                self._shutdown_workers()
            except Exception:  # interpreter shutdown: modules may already be torn down
                pass
