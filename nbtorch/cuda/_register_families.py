"""Registers the CUDA kernels of the op families beyond elementwise/copy/creation/random.

Imported at the end of `nbtorch/cuda/_register.py` (first CUDA dispatch). Each
launcher in ``kernels/cuda/<family>.py`` has the contract of the CPU kernel
registered under the same op name (device arrays instead of NumPy arrays) and
runs on the current stream (``_on_stream``).
"""
from .._registry import register_kernel
from ._register import _on_stream

# kernels/cuda modules holding these families (their typecheck_signatures() feed compile_ptx)
FAMILIES = ["reduce", "reduce_stats", "softmax", "scan", "matmul", "optim", "index",
            "embedding", "conv", "pool", "norm", "sort", "sampling"]


def _register_reductions():
    from nbtorch.kernels.cuda import reduce as k, reduce_stats as r, softmax as s, scan as c
    table = {
        "sum": k.sum_, "prod": k.prod, "count_nonzero": k.count_nonzero,
        "amax": k.extreme(True), "amin": k.extreme(False),
        "argmax": k.arg_extreme(True), "argmin": k.arg_extreme(False),
        "var": r.var, "logsumexp": r.logsumexp, "norm": r.norm,
        "softmax": s.softmax(False), "log_softmax": s.softmax(True),
        "cumsum": c.cumsum, "cumprod": c.cumprod,
        "cummax": c.cumextreme(True), "cummin": c.cumextreme(False),
    }
    for op, launcher in table.items():
        register_kernel(op, "cuda", _on_stream(launcher))


def _register_matmul():
    from nbtorch.kernels.cuda import matmul as k
    register_kernel("matmul", "cuda", _on_stream(k.matmul))


def _register_optim():
    from nbtorch.kernels.cuda import optim as k
    for op in ("sgd_step", "adam_step", "rmsprop_step", "adagrad_step", "adadelta_step",
               "adamax_step", "nadam_step", "radam_step", "asgd_step", "rprop_step"):
        register_kernel(op, "cuda", _on_stream(getattr(k, op)))


def _register_indexing():
    from nbtorch.kernels.cuda import index as k, embedding as e
    register_kernel("take", "cuda", _on_stream(k.take))
    register_kernel("put", "cuda", _on_stream(k.put))
    for op in ("embedding_forward", "embedding_backward", "embedding_renorm_"):
        register_kernel(op, "cuda", _on_stream(getattr(e, op)))


def _register_conv():
    from nbtorch.kernels.cuda import conv as k
    table = {"conv2d": k.conv2d_forward, "conv2d_grad_input": k.conv2d_grad_input,
             "conv2d_grad_weight": k.conv2d_grad_weight, "conv2d_bias_grad": k.channel_sum,
             "im2col": k.unfold, "col2im": k.fold}
    for op, launcher in table.items():
        register_kernel(op, "cuda", _on_stream(launcher))


def _register_pool():
    from nbtorch.kernels.cuda import pool as k
    for name in ("max_pool2d_forward", "max_pool2d_backward", "take_planes",
                 "avg_pool2d_forward", "avg_pool2d_backward", "adaptive_avg_pool2d_forward",
                 "adaptive_avg_pool2d_backward", "adaptive_max_pool2d_forward",
                 "gather_axis", "gather_axis_backward", "lerp_axis", "lerp_axis_backward"):
        register_kernel(name.replace("_forward", ""), "cuda", _on_stream(getattr(k, name)))


def _register_norm():
    from nbtorch.kernels.cuda import norm as k
    for op in ("batch_norm_forward_train", "batch_norm_forward_eval",
               "batch_norm_update_running", "batch_norm_backward", "layer_norm_forward",
               "layer_norm_backward", "group_norm_forward", "group_norm_backward"):
        register_kernel(op, "cuda", _on_stream(getattr(k, op)))


def _register_sort():
    from nbtorch.kernels.cuda import sort as k
    for op in ("sort", "mode", "unique_runs", "bincount", "histc"):
        register_kernel(op, "cuda", _on_stream(getattr(k, op)))


def _register_sampling():
    """Gamma/Poisson/Binomial samplers: the CPU loops' per-element code, on the GPU."""
    from nbtorch.kernels.cuda import sampling as k
    for op in ("standard_gamma", "poisson", "binomial", "standard_gamma_grad"):
        register_kernel(op, "cuda", _on_stream(getattr(k, op)))


_register_reductions()
_register_matmul()
_register_optim()
_register_indexing()
_register_conv()
_register_pool()
_register_norm()
_register_sort()
_register_sampling()
