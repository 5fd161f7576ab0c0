"""CUDA kernels (numba.cuda.jit). Imported only when a CUDA tensor is used."""
