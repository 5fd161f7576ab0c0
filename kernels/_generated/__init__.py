"""Generated kernel source, written once to a cache directory and imported as modules.

Numba's disk cache holds only module-level functions of real source files: a
kernel built by ``exec``, a closure or ``FunctionType`` over a rewritten
namespace recompiles in every process. So code generators (the CUDA elementwise
kernels, later the JIT's fused kernels) write their source with
``load(stem, source)``: the file is ``<stem>_<hash of source>.py`` in
`directory()`, written atomically the first time, and imported as the module
``nbtorch.kernels._generated.<file name>``; a second process finds the same
file, so Numba finds its cache index and loads the compiled kernels. The hash
names the content, so a file is never rewritten with other code. The kernels'
cache stamps also cover the nbtorch modules they import (`_numba_cache.py`).

The directory is ``$NUMBA_CACHE_DIR/nbtorch_generated`` when NUMBA_CACHE_DIR
is set, else ``$XDG_CACHE_HOME/nbtorch/generated`` (``~/.cache/nbtorch/generated``);
a fresh temporary directory when neither is writable.
"""
import hashlib
import importlib.util
import os
import sys
import tempfile
import uuid

__all__ = ["load", "directory"]

_DIR = []


def directory():
    """Where generated modules are written (made on first use)."""
    if not _DIR:
        from numba.core import config
        if config.CACHE_DIR:
            path = os.path.join(config.CACHE_DIR, "nbtorch_generated")
        else:
            home = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser(
                os.path.join("~", ".cache"))
            path = os.path.join(home, "nbtorch", "generated")
        try:
            os.makedirs(path, exist_ok=True)
            tempfile.TemporaryFile(dir=path).close()
        except OSError:
            path = tempfile.mkdtemp(prefix="nbtorch_generated_")
        _DIR.append(path)
        __path__[:] = [path]        # submodules import by name too (e.g. when unpickled)
    return _DIR[0]


def _write(path, source):
    """Write `source` to `path` unless it holds exactly that already (atomic replace)."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == source:
                return
    except OSError:
        pass
    tmp = f"{path}.{uuid.uuid4().hex[:12]}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(source)
    os.replace(tmp, path)


def load(stem, source, fresh=False):
    """The module made of `source`, written as ``<stem>_<hash>.py`` and imported once per
    process (`fresh`: executed again under a new module name, for sources whose
    globals resolve differently at each load)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    base = f"{stem}_{digest}"
    name = f"{__name__}.{base}"
    module = sys.modules.get(name)
    if module is not None and not fresh:
        return module
    path = os.path.join(directory(), base + ".py")
    _write(path, source)
    if fresh:
        name = f"{name}__{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
