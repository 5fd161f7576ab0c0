"""`torch.backends.cpu`: the vector instruction set the CPU kernels are compiled for."""

__all__ = ["get_cpu_capability"]


def get_cpu_capability():
    """'AVX512', 'AVX2' or 'DEFAULT', read from LLVM's view of the host (Numba compiles
    for the host CPU)."""
    from llvmlite import binding
    features = binding.get_host_cpu_features()
    if features.get("avx512f") and features.get("avx512bw"):
        return "AVX512"
    if features.get("avx2"):
        return "AVX2"
    return "DEFAULT"
