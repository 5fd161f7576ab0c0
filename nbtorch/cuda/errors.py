"""CUDA's error types as ``torch.cuda`` names them (`OutOfMemoryError` lives with the
allocator that raises it)."""

__all__ = ["CudaError", "DeferredCudaCallError", "check_error"]

# cudaError_t codes a user meets most, with the CUDA runtime's own strings
_MESSAGES = {
    1: "invalid argument", 2: "out of memory", 3: "initialization error",
    35: "CUDA driver version is insufficient for CUDA runtime version",
    100: "no CUDA-capable device is detected", 101: "invalid device ordinal",
    209: "no kernel image is available for execution on the device",
    700: "an illegal memory access was encountered",
    710: "device-side assert triggered", 719: "unspecified launch failure",
    900: "operation not permitted when stream is capturing",
}


class CudaError(RuntimeError):
    """A CUDA runtime error code, as ``torch.cuda.CudaError(code)``: its message is the
    runtime's string for the code, then the code in parentheses."""

    def __init__(self, code):
        self.code = int(code)
        super().__init__(f"{_MESSAGES.get(self.code, 'unknown error')} ({self.code})")


class DeferredCudaCallError(Exception):
    """A call queued until CUDA initialised failed when it ran (PyTorch's name)."""


def check_error(res):
    """Raise `CudaError` for a non-zero CUDA return code."""
    if int(res) != 0:
        raise CudaError(res)
