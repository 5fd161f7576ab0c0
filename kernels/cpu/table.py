"""Every op's CPU kernel, in one table: ``op name -> "family.launcher"``.

The registry (`nbtorch/_registry.py`) reads this table on the first CPU
dispatch and imports a family (`kernels/cpu/<family>.py`) when one of its ops
is first called. An entry ``("family.factory", arg)`` is the kernel
``factory(arg)`` (the elementwise ops: one ufunc kernel per scalar body).
A kernel's arguments are raw arrays and Python numbers, never Tensors; each
family's module states its contract. Replacing one op's kernel is one line
here, or ``nbtorch.library.override(op, "cpu", fn)`` at run time.
"""
from ..elementwise import OPS as _ELEMENTWISE

__all__ = ["KERNELS"]

KERNELS = {
    # elementwise: the scalar bodies of kernels/scalar.py as Numba ufuncs
    **{op: ("ufuncs.kernel", op) for op in _ELEMENTWISE},
    # copies, fills, ranges
    "copy_": "copy.copy_", "fill_": "copy.fill_",
    "arange": "creation.arange", "linspace": "creation.linspace",
    # random streams (PyTorch's MT19937 samplers, or NumPy's PCG64 when chosen); the
    # host samplers (randperm ... cauchy_) draw here for every device
    "uniform_": "random.uniform", "normal_": "random.normal",
    "bernoulli_": "random.bernoulli", "random_": "random.integers",
    "randperm": "random.randperm", "multinomial": "random.multinomial",
    "exponential_": "random.exponential", "geometric_": "random.geometric",
    "log_normal_": "random.log_normal", "cauchy_": "random.cauchy",
    "standard_gamma": "sampling.standard_gamma", "poisson": "sampling.poisson",
    "binomial": "sampling.binomial", "standard_gamma_grad": "sampling.standard_gamma_grad",
    # indexing through storage offsets
    "take": "index.take_any", "put": "index.put_any", "nonzero": "index.nonzero",
    "scatter_reduce": "index.scatter_reduce",
    # reductions, scans, softmax
    "sum": "reduce.sum_", "prod": "reduce.prod", "count_nonzero": "reduce.count_nonzero",
    "amax": "reduce.amax", "amin": "reduce.amin",
    "argmax": "reduce.argmax", "argmin": "reduce.argmin",
    "var": "reduce_stats.var", "logsumexp": "reduce_stats.logsumexp",
    "norm": "reduce_stats.norm",
    "softmax": "softmax.softmax", "log_softmax": "softmax.log_softmax",
    # fused attention (BLAS on strided views around one softmax/mask/dropout row kernel)
    "sdpa": "attention.sdpa", "sdpa_backward": "attention.sdpa_backward",
    "relu_dropout": "dropout_fused.relu_dropout",
    "relu_dropout_backward": "dropout_fused.relu_dropout_backward",
    "dropout_add": "dropout_fused.dropout_add", "dropout_grad": "dropout_fused.dropout_grad",
    "cumsum": "scan.cumsum", "cumprod": "scan.cumprod",
    "cummax": "scan.cummax", "cummin": "scan.cummin", "logcumsumexp": "scan.logcumsumexp",
    # sorting and counting
    "sort": "sort.sort", "mode": "sort.mode", "unique_runs": "sort.unique_runs",
    "bincount": "sort.bincount", "histc": "sort.histc", "searchsorted": "sort.searchsorted",
    # pairwise distances
    "cdist": "distance.cdist",
    # matmul (BLAS through NumPy; the Numba GEMM: ops.linalg.use_cpu_matmul("numba"))
    "matmul": "matmul.matmul_blas",
    # dense linear algebra: LAPACK through NumPy; LU and triangular solves in Numba
    "linalg_cholesky": "linalg.cholesky",
    "linalg_solve_triangular": "triangular.solve_triangular",
    "linalg_lu_factor": "linalg.lu_factor", "linalg_lu_solve": "linalg.lu_solve",
    "linalg_solve": "linalg.solve", "linalg_inv": "linalg.inv", "linalg_det": "linalg.det",
    "linalg_slogdet": "linalg.slogdet", "linalg_eigh": "linalg.eigh",
    "linalg_svd": "linalg.svd", "linalg_qr": "linalg.qr", "linalg_geqrf": "linalg.geqrf",
    "linalg_lstsq": "linalg.lstsq", "linalg_eig": "linalg_eig.eig",
    "linalg_ldl_factor": "linalg_ldl.ldl_factor", "linalg_ldl_solve": "linalg_ldl.ldl_solve",
    "linalg_det_complex": "linalg.det",
    "linalg_slogdet_complex": "linalg.slogdet",
    # discrete Fourier transforms (NumPy's pocketfft)
    "fft_c2c": "fft.fft_c2c", "fft_r2c": "fft.fft_r2c", "fft_c2r": "fft.fft_c2r",
    # convolution
    "conv2d": "conv.conv2d_forward", "conv2d_grad_input": "conv.conv2d_grad_input",
    "conv2d_grad_weight": "conv.conv2d_grad_weight", "conv2d_bias_grad": "conv.channel_sum",
    "im2col": "conv.unfold", "col2im": "conv.fold",
    # pooling, resampling
    "max_pool2d": "pool.max_pool2d_forward", "max_pool2d_backward": "pool.max_pool2d_backward",
    "take_planes": "pool.take_planes",
    "avg_pool2d": "pool.avg_pool2d_forward", "avg_pool2d_backward": "pool.avg_pool2d_backward",
    "adaptive_avg_pool2d": "pool_adaptive.adaptive_avg_pool2d_forward",
    "adaptive_avg_pool2d_backward": "pool_adaptive.adaptive_avg_pool2d_backward",
    "adaptive_max_pool2d": "pool_adaptive.adaptive_max_pool2d_forward",
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
    # sparse tensors (nbtorch/sparse/): CSR row pointers, SpMM, its values' gradient, to_dense
    "sparse_row_pointers": "sparse.row_pointers", "sparse_csr_mm": "sparse.csr_mm",
    "sparse_sampled_dot": "sparse.sampled_dot", "sparse_scatter_add": "sparse.scatter_add_rows",
    # CTC loss (alpha/beta recursions per sample)
    "ctc_loss_forward": "ctc.ctc_loss_forward", "ctc_loss_backward": "ctc.ctc_loss_backward",
    # grid_sample (per-point taps; bilinear/nearest/bicubic, 2-D and 3-D)
    "grid_sample_forward": "grid_sample.grid_sample_forward",
    "grid_sample_backward": "grid_sample.grid_sample_backward",
    # fused optimizer updates: SGD family, Adam family, running-RMS family
    "sgd_step": "optim.sgd_step", "asgd_step": "optim.asgd_step",
    "rprop_step": "optim.rprop_step",
    "adam_step": "optim_split.adam_step", "adamax_step": "optim_adam.adamax_step",
    "nadam_step": "optim_adam.nadam_step", "radam_step": "optim_adam.radam_step",
    "rmsprop_step": "optim_adaptive.rmsprop_step", "adagrad_step": "optim_adaptive.adagrad_step",
    "adadelta_step": "optim_adaptive.adadelta_step",
    # int8 (quantized) GEMMs, requantization fused: nbtorch.ao.nn.quantized
    "quantized_linear": "qgemm.linear_requant",
    "quantized_linear_dynamic": "qgemm.linear_dynamic",
    "quantized_conv2d": "qgemm.conv2d_requant",
}
