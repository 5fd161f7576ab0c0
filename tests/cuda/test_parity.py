"""Registry parity: every CPU op has a CUDA kernel, or is listed here with a reason."""
import pytest

import nbtorch

pytestmark = pytest.mark.cuda

# Ops allowed to lack a CUDA kernel. Nothing is CPU-only by design yet: every entry below is
# a kernel family not written for CUDA so far. Remove an op from this list when its CUDA
# kernel lands (the test fails if a listed op has one, so the list cannot go stale).
# Ops that keep a CPU kernel only, each with the reason. Empty: every CPU op has a CUDA kernel.
CPU_ONLY = {
    # LAPACK-class factorisations (blocked, multi-threaded algorithms; the CPU's engine is
    # LAPACK through NumPy): no Numba CUDA kernel yet. The LU family (solve, inv, det,
    # slogdet, lu_factor, lu_solve) has one (kernels/cuda/linalg.py, a thread per matrix).
    "linalg_cholesky", "linalg_solve_triangular", "linalg_eigh", "linalg_svd", "linalg_qr",
    "linalg_geqrf", "linalg_lstsq", "linalg_eig",
    "linalg_ldl_factor", "linalg_ldl_solve", "linalg_det_complex", "linalg_slogdet_complex",
    # nonzero's output size depends on the data: it is counted on a host copy of the input
    "nonzero",
    # host samplers: PyTorch's CPU algorithms on the CPU stream for every device (their
    # result is copied over), so a seed gives one permutation/sample everywhere
    "randperm", "multinomial", "exponential_", "geometric_", "log_normal_", "cauchy_",
    # int8 quantized kernels: PyTorch's x86 (fbgemm) arithmetic; PyTorch has no CUDA
    # backend for eager quantized modules either
    "quantized_linear", "quantized_linear_dynamic", "quantized_conv2d",
    # fused attention: a CPU fast path (BLAS on strided views); CUDA runs the composite
    # attention (batched matmul, softmax, dropout kernels)
    "sdpa", "sdpa_backward",
    # dropout fused with relu or with a residual add before a LayerNorm: CPU fast paths of
    # the Transformer layers; CUDA runs the separate kernels
    "relu_dropout", "relu_dropout_backward", "dropout_add", "dropout_grad",
    # sparse tensors live on the CPU only so far (nbtorch.sparse refuses CUDA with a
    # NotImplementedError): their kernels have no CUDA version yet
    "sparse_row_pointers", "sparse_csr_mm", "sparse_sampled_dot", "sparse_scatter_add",
}


def test_every_cpu_op_has_a_cuda_kernel_or_is_listed():
    cpu = set(nbtorch.registered_ops("cpu"))
    cuda = set(nbtorch.registered_ops("cuda"))
    missing = sorted(cpu - cuda - CPU_ONLY)
    assert not missing, f"CPU ops without a CUDA kernel (write one, or list it in CPU_ONLY " \
                        f"with a reason): {missing}"


def test_cpu_only_list_is_not_stale():
    cpu = set(nbtorch.registered_ops("cpu"))
    cuda = set(nbtorch.registered_ops("cuda"))
    landed = sorted(CPU_ONLY & cuda)
    assert not landed, f"these ops now have a CUDA kernel; remove them from CPU_ONLY: {landed}"
    unknown = sorted(CPU_ONLY - cpu)
    assert not unknown, f"CPU_ONLY lists ops that have no CPU kernel: {unknown}"


def test_missing_kernel_error_names_op_and_devices():
    op = "parity_test_cpu_only_op"
    nbtorch.register_kernel(op, "cpu", lambda *a: None)
    try:
        with pytest.raises(NotImplementedError,
                           match=f"{op} has no cuda kernel \\(have: cpu\\)"):
            nbtorch.get_kernel(op, "cuda")
    finally:
        nbtorch._registry.unregister_kernel(op, "cpu")
