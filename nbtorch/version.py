"""``torch.version``: the library's version and build facts (no CUDA/HIP toolkit is
compiled in: CUDA kernels are JIT-compiled by Numba)."""
__all__ = ["__version__", "debug", "cuda", "git_version", "hip"]

__version__ = "0.1.0"
debug = False
cuda = None
hip = None
git_version = "unknown"
