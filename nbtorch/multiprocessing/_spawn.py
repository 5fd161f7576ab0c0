"""`spawn` / `start_processes`: run ``fn(i, *args)`` in `nprocs` processes, PyTorch's way.

Each child gets a file to write its traceback into if ``fn`` raises (a file, not a
queue: a one-shot message that cannot deadlock), and on Linux asks the kernel for
SIGINT when its parent dies, so children never outlive a crashed parent. `join`
waits for any child to finish; the first failure terminates the others and is raised
as `ProcessRaisedException` (with the child's traceback) or `ProcessExitedException`
(exit code or signal).
"""
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import time
import warnings

__all__ = ["ProcessContext", "ProcessException", "ProcessRaisedException",
           "ProcessExitedException", "spawn", "start_processes"]


class ProcessException(Exception):
    """A spawned process failed; `error_index` and `error_pid` say which one."""

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.msg, self.error_index, self.error_pid = msg, error_index, error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """The process's function raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """The process exited with a non-zero code or was killed by a signal."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code,
                            self.signal_name)


def _die_with_parent():
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGINT))         # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _wrap(fn, i, args, error_file):
    _die_with_parent()
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass                                          # SIGINT from the parent: just stop
    except Exception:
        import traceback
        with open(error_file, "wb") as fh:
            pickle.dump(traceback.format_exc(), fh)
        sys.exit(1)


class ProcessContext:
    """The processes started by `start_processes`; `join` them."""

    def __init__(self, processes, error_files):
        self.processes, self.error_files = processes, error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def _join_all(self, timeout):
        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0.0, end - time.monotonic()))

    def join(self, timeout=None, grace_period=None):
        """Wait (up to `timeout` s) for a process to end; True once all ended cleanly.

        On the first failure the others get `grace_period` s, then SIGTERM, then SIGKILL,
        and the failure is raised (`ProcessRaisedException`/`ProcessExitedException`).
        """
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            self.processes[index].join()
            if self.processes[index].exitcode != 0:
                failed = index
                break
        if failed is None:
            return not self.sentinels
        self._stop_others(grace_period)
        self._raise(failed)

    def _stop_others(self, grace_period):
        if grace_period is not None:
            self._join_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join()

    def _raise(self, index):
        process, error_file = self.processes[index], self.error_files[index]
        if not os.access(error_file, os.R_OK):
            code = process.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                raise ProcessExitedException(f"process {index:d} terminated with signal {name}",
                                             index, process.pid, code, name)
            raise ProcessExitedException(f"process {index:d} terminated with exit code "
                                         f"{code:d}", index, process.pid, code)
        with open(error_file, "rb") as fh:
            trace = pickle.load(fh)
        os.unlink(error_file)
        raise ProcessRaisedException(f"\n\n-- Process {index:d} terminated with the following "
                                     f"error:\n{trace}", index, process.pid)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start `nprocs` processes running ``fn(i, *args)`` with the given start method.

    Returns None after joining them all (``join=True``), else their `ProcessContext`.
    """
    ctx = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        with tempfile.NamedTemporaryFile(prefix="nbtorch-errorfile-", suffix=".pickle",
                                         delete=False) as tf:
            name = tf.name
        os.unlink(name)                  # exists only if the child writes a traceback
        process = ctx.Process(target=_wrap, args=(fn, i, args, name), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(name)
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Spawn `nprocs` processes that run ``fn(i, *args)`` (`i` = 0 .. nprocs-1).

    `fn` must be importable (defined at a module's top level). If a process fails, the
    others are stopped and its exception is raised here with its traceback. Returns
    None when ``join=True``, else a `ProcessContext` to `join()` (as PyTorch).

    Example:
        >>> import nbtorch.multiprocessing as mp
        >>> mp.spawn(train, args=(model,), nprocs=2)      # doctest: +SKIP
    """
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t "
                      "torch.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
