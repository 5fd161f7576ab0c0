"""A second copy of NumPy's OpenBLAS, running the kernels that are fastest on this CPU,
for nbtorch's float32 products above `cblas.PRIVATE_MIN_WORK` multiply-adds.

OpenBLAS (NumPy's scipy-openblas 0.3.31, a DYNAMIC_ARCH build) picks its kernels once,
when the library loads, from the CPU it sees: on AMD Zen 4 it takes the SkylakeX
(AVX-512) ones. On the project machine (AMD EPYC, Zen 4, 2 vCPUs) its Haswell (AVX2)
kernels run float32 products faster, measured in one process with both libraries
loaded and calls interleaved (cblas_sgemm, two threads, us, SkylakeX -> Haswell):
x @ W.T 128x784 @ 784x512 782 -> 657, 128x512 @ 512x256 211 -> 183, 256x128 @ 128x512
220 -> 191, 32x1024 @ 1024x1024 (W.T) 717 -> 520, 128x256 @ 256x10 19.0 -> 15.5,
128^3 67.9 -> 64.6, 512^3 1348 -> 1301, 1024^3 22.5 -> 21.7 ms, 512x128 @ 128x784
538 -> 538; not faster where K is 64-128 and the result wide (512x128 @ 128x784 TN
1.00-1.10x, 512x64 @ 64x784 1.15x, 128x128 @ 128x784 1.07x; a slow VM state). Below 100^3
NumPy's SkylakeX small-matrix kernels win (up to 2x: cblas.PRIVATE_MIN_WORK). float64 was
mixed (0.51-1.11x), so float64 stays with NumPy's copy. The two kernel sets round differently: products differ in the last bit
or two (relative 2e-7 to 7e-7 in float32), as any other BLAS would.

NumPy's copy cannot switch (the choice is made at its load, from OPENBLAS_CORETYPE,
before nbtorch is imported), and setting that variable would change NumPy for the
user. So nbtorch loads the same library file a second time under another name (a
copy in its cache directory: the dynamic loader keeps one instance per file),
with OPENBLAS_CORETYPE set only while that copy loads; NumPy's copy and the process's
environment stay as they were. Its own thread pool follows nbtorch's thread count
(`blas.set_threads`, `blas.one_thread` set both copies).

The copy's worker threads also spin for less: OpenBLAS's workers spin for 2^28 time-stamp
ticks (0.1 s here) after each product before they sleep, so after a two-thread product
one of them held the second core for 0.1 s against everything nbtorch splits between
products (an MLP's Adam update split over the spinning helpers took 0.54 ms in the step
against 0.30 on one thread, 0.23 with the worker asleep; 10^6-element ReLUs after
Transformer steps backed off to serial). The copy loads with OPENBLAS_THREAD_TIMEOUT=18
(2^18 ticks, ~0.1 ms: the spin of nbtorch's own helpers, `spin_threads.SPIN_SECONDS`), so
back-to-back products keep it spinning and a pause lets the core go.
``NBTORCH_OPENBLAS_THREAD_TIMEOUT`` sets another exponent (4-30), empty: OpenBLAS's own.

When: x86-64 Linux, an AMD CPU, and NumPy's copy running SkylakeX, Cooperlake or
SapphireRapids kernels (AVX-512 on Zen 4/5). ``NBTORCH_OPENBLAS_CORETYPE`` overrides:
a core name (``Haswell``, ``Zen``, ``SkylakeX``...) loads a copy with those kernels on
any x86-64 Linux, ``numpy`` (or ``0``) keeps NumPy's copy for everything.
"""
import os
import platform
import shutil
import sys
import threading

__all__ = ["load", "core_name"]

_AVX512_CORES = ("SkylakeX", "Cooperlake", "SapphireRapids")
_CORE_NAMES = ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
               "openblas_get_corename64_", "openblas_get_corename")
_env_lock = threading.Lock()


def core_name(lib):
    """The name of the kernels an OpenBLAS ctypes library runs ('SkylakeX'), or ''."""
    import ctypes
    for name in _CORE_NAMES:
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype, fn.argtypes = ctypes.c_char_p, []
            return (fn() or b"").decode().strip()
    return ""


def _wanted(numpy_lib):
    """The core type the private copy should run, or None (keep NumPy's copy)."""
    choice = os.environ.get("NBTORCH_OPENBLAS_CORETYPE", "").strip()
    if choice.lower() in ("numpy", "0", "off", "none"):
        return None
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64"):
        return None
    if choice:
        return choice
    if _cpu_vendor() != "AuthenticAMD" or core_name(numpy_lib) not in _AVX512_CORES:
        return None
    return "Haswell"


def _cpu_vendor():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _cache_dir():
    base = os.environ.get("NBTORCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "nbtorch")
    return os.path.join(base, "openblas")


def _copy_of(path):
    """A copy of library file `path` in nbtorch's cache (made once, atomically; keyed by
    the file's name, size and modification time), or None where none can be written."""
    st = os.stat(path)
    name = f"{os.path.basename(path)}-{st.st_size}-{int(st.st_mtime)}-nbtorch.so"
    for folder in (_cache_dir(), os.path.join("/tmp", f"nbtorch-{os.getuid()}-openblas")):
        target = os.path.join(folder, name)
        if os.path.exists(target):
            return target
        try:
            os.makedirs(folder, exist_ok=True)
            tmp = f"{target}.{os.getpid()}.tmp"
            shutil.copyfile(path, tmp)
            os.replace(tmp, target)
            return target
        except OSError:
            continue
    return None


def load(numpy_lib, path):
    """The private copy of the OpenBLAS at `path` (NumPy's, loaded as `numpy_lib`) as a
    ctypes library running the kernels `_wanted` names, or None: not wanted here, no
    copy could be written or loaded, or it did not take those kernels."""
    import ctypes
    core = _wanted(numpy_lib)
    if core is None:
        return None
    copy = _copy_of(path)
    if copy is None:
        return None
    with _env_lock:
        settings = {"OPENBLAS_CORETYPE": core}
        timeout = os.environ.get("NBTORCH_OPENBLAS_THREAD_TIMEOUT", "18").strip()
        if timeout:
            settings["OPENBLAS_THREAD_TIMEOUT"] = timeout
        before = {name: os.environ.get(name) for name in settings}
        os.environ.update(settings)
        try:
            lib = ctypes.CDLL(copy, mode=os.RTLD_LOCAL)
        except OSError:
            return None
        finally:
            for name, value in before.items():
                if value is None:
                    del os.environ[name]
                else:
                    os.environ[name] = value
    got = core_name(lib)
    if not got or got.lower() != core.lower() and not (core.lower() == "zen"
                                                       and got == "Haswell"):
        return None
    return lib
