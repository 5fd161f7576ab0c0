"""Shared-memory segments behind shared tensors: create, attach, find, release.

One kind of segment per sharing strategy (PyTorch's names):

- ``'file_descriptor'`` (the default on Linux): an anonymous memory file from
  ``memfd_create`` (elsewhere a POSIX shm object unlinked at once). It never has a name
  in /dev/shm, so nothing can leak: the kernel frees it when the last process holding
  a mapping or descriptor exits, however that process died. It is also outside
  /dev/shm's size limit (64 MiB in a default Docker container). Other processes receive
  a duplicate descriptor through ``multiprocessing.reduction.DupFd`` (inherited at
  spawn, sent over a Unix socket for queues), so the sender must still be alive when a
  message is unpickled, as in PyTorch. Costs one open descriptor per shared storage.
- ``'file_system'``: a named POSIX shm object (/dev/shm/nbtorch_<pid>_<n>_<hex>)
  reopened by name (no descriptor kept in flight). Its first 64 bytes hold a
  reference count, changed under a POSIX record lock: one per process mapping it
  plus one per message in flight; whoever drops it to zero unlinks the name. Names are
  registered with Python's resource tracker (shared by a process tree when it was
  started before the children), which unlinks what a killed process left behind once
  the last process of the tree exits.

Why not ``multiprocessing.shared_memory.SharedMemory``: in Python < 3.13 it registers
every *attach* with the resource tracker, so one process exiting could unlink a
segment others still use (bpo-39959); the same ``_posixshmem`` calls are used here,
registering creations only. Mappings are ``mmap`` MAP_SHARED: a write in one process is
seen by all.
"""
import fcntl
import mmap
import os
import secrets
import sys
import threading
import weakref
from multiprocessing import util

import numpy as np

__all__ = ["SharedMap", "create", "attach_fd", "attach_name", "add_message_ref", "segment_of",
           "set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies"]

_HEADER = 64   # file_system segments: int64 reference count, then the data (64-aligned)

if sys.platform.startswith("linux"):
    _strategy = ["file_descriptor"]
    _ALL_STRATEGIES = {"file_descriptor", "file_system"}
else:
    _strategy = ["file_system"]
    _ALL_STRATEGIES = {"file_system"}


def set_sharing_strategy(new_strategy):
    """Choose how tensors shared from now on are backed: 'file_descriptor' or 'file_system'.

    Storages already shared keep their kind. With 'file_system' the resource tracker
    starts here, so that children started afterwards share it.
    """
    if new_strategy not in _ALL_STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}, expected one of "
                             f"{_ALL_STRATEGIES}")
    if new_strategy == "file_system":
        from multiprocessing import resource_tracker
        resource_tracker.ensure_running()
    _strategy[0] = new_strategy


def get_sharing_strategy():
    """The current sharing strategy ('file_descriptor' by default on Linux)."""
    return _strategy[0]


def get_all_sharing_strategies():
    """The strategies this system supports."""
    return set(_ALL_STRATEGIES)


class SharedMap(mmap.mmap):
    """A shared mapping that knows its segment: kind, descriptor, name, data offset."""

    kind = fd = name = key = None
    data_offset = address = 0


# segment key -> live SharedMap, so a segment received twice is mapped once
_MAPS = weakref.WeakValueDictionary()
_lock = threading.Lock()
_counter = [0]


def _new_lock_after_fork():
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_after_fork)


def _map(fd, size, kind, key, name=None, data_offset=0):
    m = SharedMap(fd, size)
    m.kind, m.fd, m.key, m.name, m.data_offset = kind, fd, key, name, data_offset
    m.address = np.frombuffer(m, np.uint8, count=1).__array_interface__["data"][0]
    _MAPS[key] = m
    if kind == "fd":
        weakref.finalize(m, os.close, fd)
    else:
        _own(m)
        util.register_after_fork(m, _own_after_fork)
    return m


def _fd_key(fd):
    st = os.fstat(fd)
    return ("fd", st.st_ino, st.st_dev)


def create(nbytes):
    """A new segment holding `nbytes` (at ``data_offset``), of the current strategy's kind."""
    with _lock:
        if _strategy[0] == "file_descriptor":
            fd = _anonymous_fd()
            size = max(nbytes, 1)            # mmap refuses an empty file
            os.ftruncate(fd, size)
            return _map(fd, size, "fd", _fd_key(fd))
        import _posixshmem
        from multiprocessing import resource_tracker
        _counter[0] += 1
        name = f"/nbtorch_{os.getpid()}_{_counter[0]}_{secrets.token_hex(4)}"
        fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
        resource_tracker.register(name, "shared_memory")
        size = _HEADER + nbytes
        os.ftruncate(fd, size)
        os.pwrite(fd, (1).to_bytes(8, "little", signed=True), 0)   # the creator's reference
        return _map(fd, size, "fs", ("fs", name), name, _HEADER)


def _anonymous_fd():
    if hasattr(os, "memfd_create"):
        return os.memfd_create("nbtorch_shared", os.MFD_CLOEXEC)
    import _posixshmem
    name = f"/nbtorch_{os.getpid()}_{secrets.token_hex(8)}"
    fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode=0o600)
    _posixshmem.shm_unlink(name)          # anonymous from now on
    return fd


def attach_fd(fd, size):
    """The mapping of the segment behind a received descriptor (which this takes over)."""
    key = _fd_key(fd)
    with _lock:
        m = _MAPS.get(key)
        if m is not None:
            os.close(fd)
            return m
        return _map(fd, size, "fd", key)


def attach_name(name, size):
    """The mapping of a named segment; takes over the reference its message carried."""
    import _posixshmem
    with _lock:
        m = _MAPS.get(("fs", name))
        if m is not None:
            _add_ref(m.fd, -1)      # already mapped here: the message's reference is spare
            return m
        try:
            fd = _posixshmem.shm_open(name, os.O_RDWR, mode=0o600)
        except FileNotFoundError:
            raise RuntimeError(f"shared memory segment {name} no longer exists: with the "
                               "'file_system' strategy a message must be received before "
                               "every process that held the tensor released it") from None
        return _map(fd, size, "fs", ("fs", name), name, _HEADER)   # the message's ref


def add_message_ref(m):
    """Count one message in flight for a 'file_system' segment (before pickling it)."""
    if m.kind == "fs":
        _add_ref(m.fd, +1)


def _add_ref(fd, delta):
    """Add `delta` to a file_system segment's reference count; return the new count."""
    fcntl.lockf(fd, fcntl.LOCK_EX, 8, 0)
    try:
        count = int.from_bytes(os.pread(fd, 8, 0), "little", signed=True) + delta
        os.pwrite(fd, count.to_bytes(8, "little", signed=True), 0)
    finally:
        fcntl.lockf(fd, fcntl.LOCK_UN, 8, 0)
    return count


def _own(m):
    """This process holds one reference to `m`'s segment until `m` dies or it exits."""
    # At exit after queues flushed their pickles (Queue joins its feeder at priority -5)
    util.Finalize(m, _release, args=(m.fd, m.name, os.getpid()), exitpriority=-100)


def _own_after_fork(m):
    _add_ref(m.fd, +1)          # a forked child inherits the mapping: count it
    _own(m)


def _release(fd, name, owner):
    if os.getpid() != owner:    # a finalizer inherited through fork: not ours
        return
    try:
        if _add_ref(fd, -1) <= 0:
            import _posixshmem
            from multiprocessing import resource_tracker
            _posixshmem.shm_unlink(name)
            resource_tracker.unregister(name, "shared_memory")
    except OSError:
        pass
    finally:
        os.close(fd)


def segment_of(array):
    """``(SharedMap, byte offset)`` of the memory under a NumPy array, or None."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    if not isinstance(base, SharedMap):
        return None
    return base, array.__array_interface__["data"][0] - base.address
