"""GPU health counters read through NVML, as ``nvidia-smi`` shows them (``torch.cuda.utilization``
and friends).

Like PyTorch's, these need the ``nvidia-ml-py`` package (module ``pynvml``),
which is not a dependency of nbtorch: without it they raise PyTorch's
ModuleNotFoundError (`list_gpu_processes` returns PyTorch's message instead).
Device numbers are CUDA's, mapped to NVML's through ``CUDA_VISIBLE_DEVICES``.
"""
import os

from . import _runtime

__all__ = ["utilization", "temperature", "power_draw", "clock_rate", "memory_usage",
           "device_memory_used", "list_gpu_processes"]


def _pynvml():
    try:
        import pynvml
    except ImportError as err:
        raise ModuleNotFoundError("nvidia-ml-py does not seem to be installed or it can't "
                                  "be imported.") from err
    return pynvml


def _visible_devices():
    """CUDA_VISIBLE_DEVICES as ints (parsed as CUDA does) or as GPU-/MIG- UUID strings."""
    var = os.environ.get("CUDA_VISIBLE_DEVICES")
    if var is None:
        return list(range(64))
    items = [e.strip() for e in var.split(",")]
    if var.startswith(("GPU-", "MIG-")):
        prefix = var[:4]
        out = []
        for e in items:
            if e in out:
                return []
            if not e.startswith(prefix):
                break
            out.append(e)
        return out
    out = []
    for e in items:
        digits = e[:len(e) - len(e.lstrip("+-0123456789"))] if e else ""
        try:
            x = int(digits)
        except ValueError:
            break
        if x in out:
            return []
        if x < 0:
            break
        out.append(x)
    return out


def _handle(device):
    """The NVML handle of a CUDA device (None: current)."""
    return _nvml_device(device)[0]


def _nvml_device(device):
    """(NVML handle, NVML index or UUID) of a CUDA device (None: current)."""
    nvml = _pynvml()
    try:
        nvml.nvmlInit()
    except nvml.NVMLError_DriverNotLoaded as e:
        raise RuntimeError("cuda driver can't be loaded, is cuda enabled?") from e
    idx = _runtime.device_index(device, optional=True)
    visible = _visible_devices()
    if not 0 <= idx < len(visible):
        raise RuntimeError(f"device {idx} is not visible (CUDA_VISIBLE_DEVICES={visible})")
    target = visible[idx]
    if isinstance(target, str):
        return nvml.nvmlDeviceGetHandleByUUID(target), target
    return nvml.nvmlDeviceGetHandleByIndex(target), target


def utilization(device=None):
    """Percent of the last sample period during which a kernel ran on the GPU."""
    return _pynvml().nvmlDeviceGetUtilizationRates(_handle(device)).gpu


def memory_usage(device=None):
    """Percent of the last sample period during which device memory was read or written."""
    return _pynvml().nvmlDeviceGetUtilizationRates(_handle(device)).memory


def temperature(device=None):
    """The GPU die's temperature in degrees C."""
    return _pynvml().nvmlDeviceGetTemperature(_handle(device), 0)


def power_draw(device=None):
    """The GPU's average power draw in milliwatts."""
    return _pynvml().nvmlDeviceGetPowerUsage(_handle(device))


def clock_rate(device=None):
    """The SM clock in MHz."""
    return _pynvml().nvmlDeviceGetClockInfo(_handle(device), 1)


def device_memory_used(device=None):
    """Device memory in use (bytes, all processes), as nvidia-smi reports it."""
    return _pynvml().nvmlDeviceGetMemoryInfo(_handle(device)).used


def list_gpu_processes(device=None):
    """The processes using the GPU and their memory, one line each (PyTorch's format)."""
    try:
        nvml = _pynvml()
    except ModuleNotFoundError:
        return "pynvml module not found, please install nvidia-ml-py"
    try:
        nvml.nvmlInit()
    except nvml.NVMLError_DriverNotLoaded:
        return "cuda driver can't be loaded, is cuda enabled?"
    handle, nvml_device = _nvml_device(device)
    procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    lines = [f"GPU:{nvml_device}"]
    if not procs:
        lines.append("no processes are running")
    for p in procs:
        mem = (p.usedGpuMemory or 0) / (1024 * 1024)
        lines.append(f"process {p.pid:>10d} uses {mem:>12.3f} MB GPU memory")
    return "\n".join(lines)
