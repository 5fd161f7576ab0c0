"""Registry parity: every CPU op has a CUDA kernel, or is listed here with a reason."""
import pytest

import nbtorch

pytestmark = pytest.mark.cuda

# Ops allowed to lack a CUDA kernel. Nothing is CPU-only by design yet: every entry below is
# a kernel family not written for CUDA so far. Remove an op from this list when its CUDA
# kernel lands (the test fails if a listed op has one, so the list cannot go stale).
CPU_ONLY = {
    # TODO(cuda-kernels): reductions (sum/prod/var/norm/logsumexp/count_nonzero, min/max family)
    "sum", "prod", "var", "norm", "logsumexp", "count_nonzero",
    "amax", "amin", "argmax", "argmin",
    # TODO(cuda-kernels): scans
    "cumsum", "cumprod", "cummax", "cummin",
    # TODO(cuda-kernels): softmax
    "softmax", "log_softmax",
    # TODO(cuda-kernels): matmul
    "matmul",
    # TODO(cuda-kernels): convolution (im2col/col2im and the conv2d family)
    "conv2d", "conv2d_bias_grad", "conv2d_grad_input", "conv2d_grad_weight", "im2col", "col2im",
    # TODO(cuda-kernels): pooling and resampling
    "avg_pool2d", "avg_pool2d_backward", "max_pool2d", "max_pool2d_backward",
    "adaptive_avg_pool2d", "adaptive_avg_pool2d_backward", "adaptive_max_pool2d",
    "gather_axis", "gather_axis_backward", "lerp_axis", "lerp_axis_backward", "take_planes",
    # TODO(cuda-kernels): normalisation
    "batch_norm_forward_train", "batch_norm_forward_eval", "batch_norm_backward",
    "batch_norm_update_running", "layer_norm_forward", "layer_norm_backward",
    "group_norm_forward", "group_norm_backward",
    # TODO(cuda-kernels): indexing and embedding
    "take", "put", "embedding_forward", "embedding_backward", "embedding_renorm_",
    # TODO(cuda-kernels): sorting and counting
    "sort", "bincount", "histc", "mode", "unique_runs",
    # TODO(cuda-kernels): optimizer updates
    "sgd_step", "adam_step", "adagrad_step", "rmsprop_step",
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
    op = min(CPU_ONLY) if CPU_ONLY else pytest.skip("every CPU op has a CUDA kernel")
    with pytest.raises(NotImplementedError, match=f"{op} has no cuda kernel \\(have: cpu\\)"):
        nbtorch.get_kernel(op, "cuda")
