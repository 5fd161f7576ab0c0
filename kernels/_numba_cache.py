"""Numba's on-disk cache, made safe for several processes compiling at once.

Numba saves a compiled kernel in two steps (`IndexDataCacheFile.save`): it
reads the function's index (signature -> data file name), picks the first
free data file name, rewrites the index, then writes the data file. Two
processes compiling two signatures of one function at the same moment (two
pytest-xdist workers, DataLoader workers, two notebooks) can both pick
``f.1.nbc``: one index entry then names the other process's machine code,
and a later process loads a kernel compiled for other argument types. Each
file write is atomic (temporary file + rename); the read-modify-write of the
index is not. An exclusive `flock` on a lock file beside the index makes it
one step. Readers need no lock: an index entry whose data file is not
written yet reads as a miss (Numba catches the OSError), and data files are
replaced atomically.

Installed when `nbtorch.kernels` is imported, before any kernel compiles;
numba-cuda keeps its own copy of the class, wrapped when `nbtorch.kernels.cuda`
is first imported (so `import nbtorch` does not load the CUDA stack).
"""
import functools

try:
    import fcntl
except ImportError:            # not POSIX: Numba's own behaviour (single-process safe)
    fcntl = None

__all__ = ["install", "install_cuda"]


def _locked(save):
    @functools.wraps(save)
    def save_under_lock(self, key, data):
        with open(self._index_path + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                return save(self, key, data)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    save_under_lock._nbtorch_locked = True
    return save_under_lock


def _wrap(cls):
    if not getattr(cls.save, "_nbtorch_locked", False):
        cls.save = _locked(cls.save)


def install():
    """Serialise Numba's CPU cache writes across processes (idempotent; no-op without fcntl)."""
    if fcntl is not None:
        from numba.core import caching
        _wrap(caching.IndexDataCacheFile)


def install_cuda():
    """The same for numba-cuda's cache class (imported with the CUDA stack)."""
    if fcntl is not None:
        from numba.cuda.core import caching
        _wrap(caching.IndexDataCacheFile)
