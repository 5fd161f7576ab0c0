"""Every op's CUDA kernel, in one table: ``op name -> "family.launcher"``.

The twin of `kernels/cpu/table.py`: the same op names, launchers with the CPU
kernels' contracts (device arrays instead of NumPy arrays) plus a ``stream=``
keyword, which the registry binds to the current stream
(`nbtorch/cuda/_register.py`). ``("family.factory", arg)`` is the launcher
``factory(arg)``. Every family module here also yields its kernels' argument
types from ``typecheck_signatures()`` for the PTX type check
(`nbtorch.cuda.typecheck`); `tests/cuda/test_parity.py` lists the CPU ops
that have no entry here, each with its reason.
"""
from ..elementwise import OPS as _ELEMENTWISE

__all__ = ["KERNELS", "FAMILIES"]

KERNELS = {
    # elementwise: the same scalar bodies in generated grid-stride kernels
    **{op: ("gridstride.kernel", op) for op in _ELEMENTWISE},
    # copies, fills, ranges
    "copy_": "copy.copy_", "fill_": "copy.fill_",
    "arange": "creation.arange", "linspace": "creation.linspace",
    # random streams (Philox on the device)
    "uniform_": "random.sample_uniform", "normal_": "random.sample_normal",
    "bernoulli_": "random.sample_bernoulli", "random_": "random.sample_integers",
    "standard_gamma": "sampling.standard_gamma", "poisson": "sampling.poisson",
    "binomial": "sampling.binomial", "standard_gamma_grad": "sampling.standard_gamma_grad",
    # indexing through storage offsets
    "take": "index.take", "put": "index.put", "scatter_reduce": "index.scatter_reduce",
    # reductions, scans, softmax
    "sum": "reduce.sum_", "prod": "reduce.prod", "count_nonzero": "reduce.count_nonzero",
    "amax": ("reduce.extreme", True), "amin": ("reduce.extreme", False),
    "argmax": ("reduce.arg_extreme", True), "argmin": ("reduce.arg_extreme", False),
    "var": "reduce_stats.var", "logsumexp": "reduce_stats.logsumexp",
    "norm": "reduce_stats.norm",
    "softmax": ("softmax.softmax", False), "log_softmax": ("softmax.softmax", True),
    "cumsum": "scan.cumsum", "cumprod": "scan.cumprod",
    "cummax": ("scan.cumextreme", True), "cummin": ("scan.cumextreme", False),
    "logcumsumexp": "scan.logcumsumexp",
    # sorting and counting
    "sort": "sort.sort", "mode": "sort.mode", "unique_runs": "sort.unique_runs",
    "bincount": "sort.bincount", "histc": "sort.histc", "searchsorted": "sort.searchsorted",
    # pairwise distances
    "cdist": "distance.cdist",
    # matmul
    "matmul": "matmul.matmul",
    # dense linear algebra: batched small LU, one thread per matrix
    "linalg_lu_factor": "linalg.lu_factor", "linalg_lu_solve": "linalg.lu_solve",
    "linalg_solve": "linalg.solve", "linalg_inv": "linalg.inv", "linalg_det": "linalg.det",
    "linalg_slogdet": "linalg.slogdet",
    # discrete Fourier transforms: radix-2 and Bluestein passes
    "fft_c2c": "fft.fft_c2c", "fft_r2c": "fft.fft_r2c", "fft_c2r": "fft.fft_c2r",
    # convolution
    "conv2d": "conv.conv2d_forward", "conv2d_grad_input": "conv.conv2d_grad_input",
    "conv2d_grad_weight": "conv.conv2d_grad_weight", "conv2d_bias_grad": "conv.channel_sum",
    "im2col": "conv.unfold", "col2im": "conv.fold",
    # pooling, resampling
    "max_pool2d": "pool.max_pool2d_forward", "max_pool2d_backward": "pool.max_pool2d_backward",
    "take_planes": "pool.take_planes",
    "avg_pool2d": "pool.avg_pool2d_forward", "avg_pool2d_backward": "pool.avg_pool2d_backward",
    "adaptive_avg_pool2d": "pool.adaptive_avg_pool2d_forward",
    "adaptive_avg_pool2d_backward": "pool.adaptive_avg_pool2d_backward",
    "adaptive_max_pool2d": "pool.adaptive_max_pool2d_forward",
    "gather_axis": "pool.gather_axis", "gather_axis_backward": "pool.gather_axis_backward",
    "lerp_axis": "pool.lerp_axis", "lerp_axis_backward": "pool.lerp_axis_backward",
    # normalization
    "batch_norm_forward_train": "norm.batch_norm_forward_train",
    "batch_norm_forward_eval": "norm.batch_norm_forward_eval",
    "batch_norm_update_running": "norm.batch_norm_update_running",
    "batch_norm_backward": "norm.batch_norm_backward",
    "layer_norm_forward": "norm.layer_norm_forward",
    "layer_norm_backward": "norm.layer_norm_backward",
    "group_norm_forward": "norm.group_norm_forward",
    "group_norm_backward": "norm.group_norm_backward",
    # embedding
    "embedding_forward": "embedding.embedding_forward",
    "embedding_backward": "embedding.embedding_backward",
    "embedding_renorm_": "embedding.embedding_renorm_",
    # CTC loss (alpha/beta recursions per sample)
    "ctc_loss_forward": "ctc.ctc_loss_forward", "ctc_loss_backward": "ctc.ctc_loss_backward",
    # grid_sample (per-point taps; bilinear/nearest/bicubic, 2-D and 3-D)
    "grid_sample_forward": "grid_sample.grid_sample_forward",
    "grid_sample_backward": "grid_sample.grid_sample_backward",
    # fused optimizer updates
    **{op: f"optim.{op}" for op in (
        "sgd_step", "adam_step", "rmsprop_step", "adagrad_step", "adadelta_step",
        "adamax_step", "nadam_step", "radam_step", "asgd_step", "rprop_step")},
}


def _families():
    names = {(ref if isinstance(ref, str) else ref[0]).split(".")[0]
             for ref in KERNELS.values()}
    return sorted(names - {"gridstride"})


# The family modules behind the table (the PTX type check compiles each one's
# typecheck_signatures(); the elementwise kernels are checked from their own table).
FAMILIES = _families()
