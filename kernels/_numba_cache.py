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

Second, a cached kernel's stamp covers every file its body comes from (see
`_DependencyStampedLocator` below): Numba checks only the defining file, so an
edited op body in another file would otherwise leave stale kernels behind.

Installed when `nbtorch.kernels` is imported, before any kernel compiles;
numba-cuda keeps its own copy of the classes, wrapped when `nbtorch.kernels.cuda`
is first imported (so `import nbtorch` does not load the CUDA stack).
"""
import functools
import hashlib
import os
import sys
import types

try:
    import fcntl
except ImportError:            # not POSIX: Numba's own behaviour (single-process safe)
    fcntl = None

__all__ = ["install", "install_cuda", "track", "dependencies", "dependency_stamp"]


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
    """Serialise Numba's CPU cache writes across processes (no-op without fcntl) and stamp
    tracked kernels with their dependencies (idempotent)."""
    from numba.core import caching
    if fcntl is not None:
        _wrap(caching.IndexDataCacheFile)
    _stamp_dependencies(caching.CacheImpl)


def install_cuda():
    """The same for numba-cuda's cache classes (imported with the CUDA stack)."""
    from numba.cuda.core import caching
    if fcntl is not None:
        _wrap(caching.IndexDataCacheFile)
    _stamp_dependencies(caching.CacheImpl)


# ---- a cache stamp that covers every file a kernel's body comes from -------------------
# Numba keys a cached kernel on its own bytecode and stamps the cache index with its own
# source file only (numba 0.68: a SHA-256 of the file; numba-cuda: its mtime and size).
# A kernel whose body calls a function from another file (an op body, a float32 helper,
# a generated module's device function) would keep loading stale machine code after that
# file changed. For kernels defined in a tracked module (`nbtorch.kernels...`), the stamp
# becomes the defining file's own stamp plus a SHA-256 over the contents of every tracked
# module it reaches through its globals (modules, functions, dispatchers), transitively.
# The walk reads a module's globals when its first kernel is decorated, so such imports
# belong at the top of a kernel module (where they are anyway).

_TRACKED = ["nbtorch.kernels"]          # module-name prefixes whose kernels are stamped so
_DEPS = {}                              # module name -> its tracked modules (fully imported)


def track(prefix):
    """Stamp the cached kernels of modules named `prefix` or `prefix.*` with their
    dependencies too (nbtorch's kernels are tracked already; tests track temporary
    packages)."""
    if prefix not in _TRACKED:
        _TRACKED.append(prefix)


def _tracked(name):
    return isinstance(name, str) and any(
        name == p or name.startswith(p + ".") for p in _TRACKED)


def _module_of(value):
    """The name of the module `value` (a module, function or Numba dispatcher) comes from."""
    if isinstance(value, types.ModuleType):
        return value.__name__
    try:
        value = getattr(value, "py_func", value)         # njit/cuda.jit dispatchers, DUFuncs
        return getattr(value, "__module__", None)
    except Exception:                                     # an object with an odd __getattr__
        return None


def dependencies(module_name):
    """The tracked modules `module_name` reaches through its globals, itself included."""
    found = _DEPS.get(module_name)
    if found is not None:
        return found
    module = sys.modules.get(module_name)
    if module is None:
        return frozenset()
    found = {module_name}
    todo = [module]
    while todo:
        for value in list(vars(todo.pop()).values()):
            name = _module_of(value)
            if name in found or not _tracked(name) or name not in sys.modules:
                continue
            found.add(name)
            known = _DEPS.get(name)
            if known is not None:
                found |= known
            else:
                todo.append(sys.modules[name])
    found = frozenset(found)
    if not getattr(getattr(module, "__spec__", None), "_initializing", False):
        _DEPS[module_name] = found      # a module still importing may gain globals later
    return found


@functools.lru_cache(maxsize=None)
def _file_hash(path, mtime, size):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def dependency_stamp(module_name):
    """SHA-256 over (module name, content hash) of every tracked module it depends on."""
    h = hashlib.sha256()
    for name in sorted(dependencies(module_name)):
        path = getattr(sys.modules[name], "__file__", None)
        if path and os.path.exists(path):
            st = os.stat(path)
            h.update(f"{name}:{_file_hash(path, st.st_mtime_ns, st.st_size)};".encode())
    return h.hexdigest()


class _DependencyStampedLocator:
    """Numba's own locator for a tracked kernel (same cache directory and file names),
    with `dependency_stamp` added to its source stamp."""

    base_classes = ()                  # numba's locator classes, set per cache flavour

    def __init__(self, inner, module_name):
        self._inner = inner
        self._module_name = module_name

    @classmethod
    def from_function(cls, py_func, py_file):
        module_name = getattr(py_func, "__module__", None)
        if not _tracked(module_name):
            return None
        for base in cls.base_classes:
            inner = base.from_function(py_func, py_file)
            if inner is not None:
                return cls(inner, module_name)
        return None

    def get_source_stamp(self):
        return ("nbtorch-dependencies", self._inner.get_source_stamp(),
                dependency_stamp(self._module_name))

    def __getattr__(self, name):       # cache path, disambiguator, _py_file...
        return getattr(self._inner, name)


def _stamp_dependencies(impl_class):
    """Put a `_DependencyStampedLocator` in front of `impl_class`'s locator classes."""
    classes = impl_class._locator_classes
    if any(getattr(c, "_nbtorch_dependencies", False) for c in classes):
        return
    locator = type("DependencyStampedLocator", (_DependencyStampedLocator,),
                   {"base_classes": tuple(classes), "_nbtorch_dependencies": True})
    impl_class._locator_classes = [locator] + list(classes)
