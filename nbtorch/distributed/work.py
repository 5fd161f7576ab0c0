"""Work handles for asynchronous operations, and the one waiting loop that honours a
group's timeout (MPI's own waits block forever when a peer never arrives)."""
import os
import time

from .errors import DistBackendError

__all__ = ["Work", "wait_requests"]


def wait_requests(requests, group, what, timeout=None, status=None):
    """Complete the MPI `requests` of `group`, or raise DistBackendError after `timeout`
    seconds (the group's when None). MPI progresses only inside its calls, so this polls
    with `Test`: spinning for the first 0.2 ms (a small message's peer is usually there
    by then), then yielding the core between polls (ranks often share cores with their
    peers), and after 0.1 s sleeping briefly between them, so a rank waiting for a slow
    peer does not burn a core. `status` (one request only) gets filled."""
    MPI = group.MPI
    test = (lambda: requests[0].Test(status)) if status is not None else (
        lambda: MPI.Request.Testall(requests))
    if test():
        return
    start = time.monotonic()
    limit = group.timeout if timeout is None else _seconds(timeout)
    spin_until, yield_until, deadline = start + 2e-4, start + 0.1, start + limit
    nap = 5e-5
    while True:
        for _ in range(16):
            if test():
                return
        now = time.monotonic()
        if now > deadline:
            group._broken = f"{what} timed out"
            raise DistBackendError(
                f"[Rank {group._world_rank}] {what} timed out after {limit:g} s (the process "
                f"group's timeout): a peer rank did not take part - it may have failed, "
                f"exited, or called a different collective. The group cannot be used again.")
        if now > yield_until:
            time.sleep(nap)
            nap = min(nap * 2, 1e-3)
        elif now > spin_until:
            os.sched_yield()


def _seconds(timeout):
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)


class Work:
    """The handle an ``async_op=True`` call returns, like ``torch.distributed.Work``:
    `wait()` blocks until the operation finished (raising after the group's timeout),
    `is_completed()` asks without blocking. Output tensors hold their values only after
    `wait()` (a staged copy is written back then)."""

    def __init__(self, requests, group, what, finish=None, result=None, keep=None, status=None):
        self._requests = list(requests)
        self._group = group
        self._what = what
        self._finish = finish
        self._result = result
        self._keep = keep           # buffers MPI writes into: alive until completion
        self._status = status
        self._done = not self._requests
        if self._done:
            self._complete()

    def _complete(self):
        self._done = True
        self._keep = None
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()

    def is_completed(self):
        """True once the operation finished (its outputs written)."""
        if not self._done:
            done = (self._requests[0].Test(self._status) if self._status is not None
                    else self._group.MPI.Request.Testall(self._requests))
            if done:
                self._complete()
        return self._done

    def is_success(self):
        return self.is_completed()

    def wait(self, timeout=None):
        """Block until done; DistBackendError after `timeout` (or the group's) seconds."""
        if not self._done:
            wait_requests(self._requests, self._group, self._what, timeout,
                          self._status if len(self._requests) == 1 else None)
            self._complete()
        return True

    def result(self):
        """The output tensors (after `wait()`)."""
        self.wait()
        return self._result if self._result is not None else []

    def synchronize(self):
        self.wait()

    def _source_rank(self):
        """The global rank a finished `irecv` got its message from."""
        self.wait()
        return self._group.ranks[self._status.Get_source()]

    def __repr__(self):
        return f"<Work {self._what} completed={self._done}>"

