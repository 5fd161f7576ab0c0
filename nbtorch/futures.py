"""``torch.futures``: `Future`, a value that becomes ready later (thread-safe), with
callbacks and chaining, plus `collect_all`/`wait_all` over several futures.
"""
import threading

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """A result set once (`set_result`/`set_exception`) and awaited with `wait`."""

    def __init__(self, *, devices=None):
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._value = None
        self._error = None
        self._callbacks = []

    def done(self):
        return self._done.is_set()

    def wait(self):
        """Block until ready; return the value or raise the exception set."""
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self):
        """The value of a completed future (raises its exception)."""
        if not self.done():
            raise RuntimeError("Future is not completed yet")
        return self.wait()

    def _complete(self, value, error):
        with self._lock:
            if self._done.is_set():
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._value, self._error = value, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def set_result(self, result):
        self._complete(result, None)

    def set_exception(self, result):
        if not isinstance(result, BaseException):
            raise TypeError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def add_done_callback(self, callback):
        """Run callback(self) once the future completes (now, if it has)."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback):
        """A new future holding callback(self) once this one completes."""
        out = Future()

        def run(fut):
            try:
                out.set_result(callback(fut))
            except Exception as e:        # noqa: BLE001 - handed to the waiter, as PyTorch
                out.set_exception(RuntimeError("Got the following error when running the "
                                               f"callback: {type(e).__name__}: {e}"))
        self.add_done_callback(run)
        return out


def collect_all(futures):
    """A future completed with the list of `futures` once every one has completed."""
    futures = list(futures)
    out = Future()
    left = [len(futures)]
    lock = threading.Lock()
    if not futures:
        out.set_result([])

    def one_done(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            out.set_result(futures)
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures):
    """The values of `futures`, waiting for each (the first exception raises)."""
    return [f.wait() for f in futures]
