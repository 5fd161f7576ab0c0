"""torch.utils.collect_env: the environment report to paste into a bug report.

``python -m nbtorch.utils.collect_env`` prints, in PyTorch's layout: nbtorch and its
compute stack (NumPy, Numba, llvmlite, numba-cuda), OS, libc, Python, the GPU and driver
if numba-cuda sees one, Numba's threading layer and thread counts, the CPU, and the
versions of the relevant installed packages.
"""
import os
import platform
import shutil
import subprocess
import sys
from collections import namedtuple

__all__ = ["get_env_info", "get_pretty_env_info", "main", "SystemEnv"]

SystemEnv = namedtuple("SystemEnv", [
    "nbtorch_version", "is_debug_build", "numpy_version", "numba_version",
    "llvmlite_version", "numba_cuda_version", "os", "libc_version", "python_version",
    "python_platform", "is_cuda_available", "gpu_models_and_configuration",
    "nvidia_driver_version", "cuda_runtime_version", "threading_layer",
    "numba_num_threads", "nbtorch_num_threads", "cpu_count", "thread_env", "cpu_info",
    "pip_packages"])

_RELEVANT = ("nbtorch", "numpy", "numba", "llvmlite", "numba-cuda", "numba_cuda",
             "ml_dtypes", "ml-dtypes", "tqdm", "scipy", "torch", "onnx", "onnxruntime",
             "mpi4py", "cuda-python", "nvidia-cuda", "tensorboard", "safetensors")


def run(command):
    """(return code, stdout, stderr) of a command list; (127, '', why) if it cannot run."""
    try:
        p = subprocess.run(command, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as e:
        return 127, "", str(e)
    return p.returncode, p.stdout.strip(), p.stderr.strip()


def _version(dist):
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def get_os():
    if sys.platform.startswith("linux"):
        try:
            with open("/etc/os-release") as f:
                fields = dict(line.rstrip().split("=", 1) for line in f if "=" in line)
            name = fields.get("PRETTY_NAME", "Linux").strip('"')
        except OSError:
            name = "Linux"
        return f"{name} ({platform.machine()})"
    if sys.platform == "darwin":
        return f"macOS {platform.mac_ver()[0]} ({platform.machine()})"
    return f"{platform.system()} {platform.release()} ({platform.machine()})"


def get_cpu_info():
    if shutil.which("lscpu"):
        rc, out, _ = run(["lscpu"])
        if rc == 0:
            return out
    return platform.processor() or platform.machine()


def _cuda():
    """(available, gpus, driver version, runtime version) as numba-cuda sees them."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return False, "N/A (NUMBA_ENABLE_CUDASIM=1: the CUDA simulator)", "N/A", "N/A"
    try:
        from numba import cuda
        available = bool(cuda.is_available())
    except Exception:                       # noqa: BLE001 - no CUDA stack at all
        return False, "N/A", "N/A", "N/A"
    gpus, driver, runtime = "N/A", "N/A", "N/A"
    if available:
        try:
            gpus = "\n".join(f"GPU {i}: {g.name.decode() if isinstance(g.name, bytes) else g.name}"
                             for i, g in enumerate(cuda.gpus))
            driver = ".".join(map(str, cuda.cudadrv.driver.driver.get_version()))
            runtime = ".".join(map(str, cuda.runtime.get_version()))
        except Exception:                   # noqa: BLE001 - report what could be read
            pass
    if shutil.which("nvidia-smi"):
        rc, out, _ = run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        if rc == 0 and out:
            driver = out.splitlines()[0]
    return available, gpus, driver, runtime


def _threads():
    import numba
    from numba import config
    try:
        layer = numba.threading_layer()
    except ValueError:                      # no parallel kernel has run yet
        layer = f"not loaded yet (NUMBA_THREADING_LAYER={config.THREADING_LAYER})"
    env = ", ".join(f"{k}={os.environ[k]}" for k in
                    ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OMP_WAIT_POLICY",
                     "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS") if k in os.environ)
    return layer, numba.get_num_threads(), env or "none set"


def get_pip_packages():
    from importlib import metadata
    found = set()
    for dist in metadata.distributions():
        name = dist.metadata["Name"] or ""
        low = name.lower()
        if any(low == r or low.startswith(r) for r in _RELEVANT) or low.startswith("nvidia-"):
            found.add(f"[pip3] {name}=={dist.version}")
    return "\n".join(sorted(found, key=str.lower))


def get_env_info():
    """The report's fields, as a SystemEnv namedtuple."""
    import nbtorch
    available, gpus, driver, runtime = _cuda()
    layer, numba_threads, env = _threads()
    libc = "-".join(x for x in platform.libc_ver() if x) or "N/A"
    return SystemEnv(
        nbtorch_version=nbtorch.__version__, is_debug_build=False,
        numpy_version=_version("numpy"), numba_version=_version("numba"),
        llvmlite_version=_version("llvmlite"),
        numba_cuda_version=_version("numba-cuda") or _version("numba_cuda") or "N/A",
        os=get_os(), libc_version=libc,
        python_version=f"{sys.version.replace(chr(10), ' ')} "
                       f"({sys.maxsize.bit_length() + 1}-bit runtime)",
        python_platform=platform.platform(), is_cuda_available=available,
        gpu_models_and_configuration=gpus, nvidia_driver_version=driver,
        cuda_runtime_version=runtime, threading_layer=layer, numba_num_threads=numba_threads,
        nbtorch_num_threads=nbtorch.get_num_threads(), cpu_count=os.cpu_count(),
        thread_env=env, cpu_info=get_cpu_info(), pip_packages=get_pip_packages())


_TEMPLATE = """\
nbtorch version: {nbtorch_version}
Is debug build: {is_debug_build}
NumPy version: {numpy_version}
Numba version: {numba_version}
llvmlite version: {llvmlite_version}
numba-cuda version: {numba_cuda_version}

OS: {os}
Libc version: {libc_version}

Python version: {python_version}
Python platform: {python_platform}
Is CUDA available: {is_cuda_available}
CUDA runtime version: {cuda_runtime_version}
GPU models and configuration: {gpu_models_and_configuration}
Nvidia driver version: {nvidia_driver_version}

Numba threading layer: {threading_layer}
Numba threads: {numba_num_threads}
nbtorch threads (torch.get_num_threads): {nbtorch_num_threads}
CPU count: {cpu_count}
Thread environment variables: {thread_env}

CPU:
{cpu_info}

Versions of relevant libraries:
{pip_packages}
"""


def get_pretty_env_info():
    """The report as text (what ``python -m nbtorch.utils.collect_env`` prints)."""
    return _TEMPLATE.format(**get_env_info()._asdict())


def main():
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
