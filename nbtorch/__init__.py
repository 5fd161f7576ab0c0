"""nbtorch: PyTorch's architecture in readable Python, every kernel written with Numba.

``import nbtorch as torch`` and ordinary PyTorch code runs: strided tensors over
storages, a device registry that sends each op to a Numba kernel, a tape
autograd, and nn / optim / utils.data above them.
"""
from ._threads import configure_openmp_waits as _configure_openmp_waits

# Numba's OpenMP workers spin while idle by default; on a busy 2-core machine that made a
# ~70 us parallel reduction average 2-10 ms. They are made to sleep instead, by a policy given
# to Numba's OpenMP runtime alone: the environment other libraries see is left as it is.
_configure_openmp_waits()

from ._dtype import (dtype, float16, half, bfloat16, float32, float64, double, int8, int16,
                     short, int32, int64, long, uint8, bool, get_default_dtype, set_default_dtype,
                     promote_types, result_type, can_cast, iinfo, finfo, complex64, cfloat,
                     complex128, cdouble, uint16, uint32, uint64, float8_e4m3fn, float8_e5m2,
                     float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
from ._dtype import float, int  # noqa: F401  (torch.float / torch.int are dtypes)
from ._device import device
from ._tensor import Tensor, Size
from ._tensor_str import set_printoptions
from ._qtensor import (qint8, quint8, qint32, qscheme, per_tensor_affine,  # noqa: F401
                       per_channel_affine, per_tensor_symmetric, per_channel_symmetric,
                       per_channel_affine_float_qparams, quantize_per_tensor,
                       quantize_per_channel, quantize_per_tensor_dynamic, dequantize,
                       q_scale, q_zero_point, q_per_channel_scales, q_per_channel_zero_points,
                       q_per_channel_axis, int_repr, fake_quantize_per_tensor_affine,
                       fake_quantize_per_channel_affine)
from . import autograd
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled
from .autograd.grad_mode import is_inference_mode_enabled
from .ops.creation import *  # noqa: F401,F403
from .ops.copy import *  # noqa: F401,F403
from .ops import transfer as _transfer  # noqa: F401  (Tensor.to/cpu/cuda, pin_memory)
from .ops.views import *  # noqa: F401,F403
from .ops.arithmetic import *  # noqa: F401,F403
from .ops.reduction import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .ops.random import *  # noqa: F401,F403
from . import random  # noqa: F401
from .ops.indexing import *  # noqa: F401,F403  (also installs Tensor.__getitem__)
from .ops.indexing_gather import *  # noqa: F401,F403
from .ops.joining import *  # noqa: F401,F403
from .ops.pointwise_math import *  # noqa: F401,F403
from .ops.pointwise_special import *  # noqa: F401,F403
from .ops.pointwise_float import *  # noqa: F401,F403
from .ops.sampling import *  # noqa: F401,F403
from .ops.pointwise_activation import *  # noqa: F401,F403
from .ops.pointwise_more import *  # noqa: F401,F403
from .ops.pointwise_select import *  # noqa: F401,F403
from .ops.logical import *  # noqa: F401,F403
from .ops.reduction_minmax import *  # noqa: F401,F403
from .ops.reduction_stats import *  # noqa: F401,F403
from .ops.scan import *  # noqa: F401,F403
from .ops.softmax import *  # noqa: F401,F403
from .ops.sorting import *  # noqa: F401,F403
from .ops.linalg import *  # noqa: F401,F403
from .ops.linalg_aliases import *  # noqa: F401,F403  (torch.det, torch.svd, ...)
from .ops.einsum import *  # noqa: F401,F403
from .ops.rearranging import *  # noqa: F401,F403
from .ops.products import *  # noqa: F401,F403
from .ops.diagonal import *  # noqa: F401,F403
from .ops.indexing_reduce import *  # noqa: F401,F403
from .ops.calculus import *  # noqa: F401,F403
from .ops.searching import *  # noqa: F401,F403
from .ops.statistics import *  # noqa: F401,F403
from .ops.distance import *  # noqa: F401,F403
from .ops.windows import *  # noqa: F401,F403
from .ops.creation_layout import *  # noqa: F401,F403
from .ops.views_extra import *  # noqa: F401,F403
from .ops.method_forms import *  # noqa: F401,F403
from .ops.complex import *  # noqa: F401,F403  (real/imag views, conj, angle, sgn, polar)
from .ops.torch_aliases import *  # noqa: F401,F403  (torch.conv2d, torch.layer_norm...)
from .ops.torch_dropout_loss import *  # noqa: F401,F403  (torch.dropout, torch.kl_div...)
from .ops.torch_inplace import *  # noqa: F401,F403  (torch.abs_, torch.clamp_, ...)
from .ops.torch_rnn import *  # noqa: F401,F403  (torch.lstm, torch.gru_cell, ...)
from .ops.torch_batch_norm import *  # noqa: F401,F403  (native_*_norm, batch_norm_stats...)
from .ops.foreach import *  # noqa: F401,F403  (torch._foreach_add_, ...)
from .storage import *  # noqa: F401,F403  (TypedStorage, FloatStorage, ...)
from ._torch_extras import *  # noqa: F401,F403  (Stream, Event, strided, cond, ...)
from ._symbolic import *  # noqa: F401,F403,E402  (_check, _assert, sym_max, SymInt, ...)
from ._torch_function import install as _install_torch_function  # noqa: E402
_install_torch_function()   # Tensor.__torch_function__, subclass hook (before nn.Parameter)
from .ops.lowrank import svd_lowrank, pca_lowrank  # noqa: F401
from .ops.lobpcg import lobpcg  # noqa: F401
from ._memory_format import (memory_format, contiguous_format, channels_last,  # noqa: F401
                             channels_last_3d, preserve_format, legacy_contiguous_format)
from .serialization import save, load
from ._dlpack import from_dlpack  # noqa: F401  (also Tensor.__dlpack__, __cuda_array_interface__)
from ._threads import set_num_threads, get_num_threads
from . import utils  # noqa: F401
from . import nn, optim  # noqa: F401
from . import library, profiler  # noqa: F401
from .autograd import profiler as _autograd_profiler  # noqa: F401  (torch.autograd.profiler)
from . import _inspect  # noqa: F401  (installs nbtorch.kernels.inspect)
from . import linalg  # noqa: F401
from . import sparse  # noqa: F401  (torch.sparse; Tensor.to_sparse/to_dense...)
from .sparse import sparse_coo_tensor, sparse_csr_tensor, spmm  # noqa: F401
from .ops.fft_stft import stft, istft  # noqa: F401  (also Tensor.stft/istft)
from .ops import _return_types as return_types  # noqa: F401
from . import cuda  # noqa: F401  (light: numba.cuda is imported on first CUDA use)
from . import amp  # noqa: F401  (autocast, GradScaler; nbtorch.cpu.amp/cuda.amp: aliases)
from .amp.autocast_mode import (autocast, is_autocast_enabled, set_autocast_enabled,  # noqa
                                get_autocast_dtype, set_autocast_dtype,
                                is_autocast_cache_enabled, set_autocast_cache_enabled,
                                clear_autocast_cache, autocast_increment_nesting,
                                autocast_decrement_nesting, get_autocast_cpu_dtype,
                                get_autocast_gpu_dtype, is_autocast_cpu_enabled,
                                set_autocast_cpu_enabled, set_autocast_cpu_dtype,
                                set_autocast_gpu_dtype)
from ._registry import register_kernel, get_kernel, registered_ops

from ._tensor_types import (FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor,  # noqa
                            ByteTensor, CharTensor, ShortTensor, IntTensor, LongTensor,
                            BoolTensor)
from ._device import set_default_device, get_default_device
from ._settings import (use_deterministic_algorithms, are_deterministic_algorithms_enabled,
                        is_deterministic_algorithms_warn_only_enabled,
                        set_deterministic_debug_mode, get_deterministic_debug_mode,
                        set_float32_matmul_precision, get_float32_matmul_precision)


def broadcast_shapes(*shapes):
    """The shape that `shapes` broadcast to, like ``torch.broadcast_shapes``."""
    from .ops._common import broadcast_shapes as _bs
    import builtins   # `int` here is nbtorch.int, the dtype
    return Size(_bs(*((s,) if isinstance(s, builtins.int) else tuple(s) for s in shapes)))

__version__ = "0.1.0"


def is_tensor(obj):
    """True for a Tensor (and, in traced code, for a traced value standing for one)."""
    return isinstance(obj, Tensor) or (getattr(type(obj), "_carries_value", False)
                                       and isinstance(obj.value, Tensor))


def numel(input):
    return input.numel()


def is_floating_point(input):
    return input.dtype.is_floating_point


# Imported on first attribute access (import nbtorch stays fast).
_LAZY_SUBMODULES = {"testing", "multiprocessing", "fx", "jit", "distributions", "_dynamo",
                    "compiler", "backends", "func", "hub", "safetensors", "special",
                    "accelerator", "ao", "quantization", "fft", "onnx",
                    "cpu", "version", "torch_version", "types", "functional", "distributed",
                    "signal", "windows", "futures", "masked", "export", "quasirandom",
                    "overrides", "_C", "nested"}


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``torch.vmap``: `nbtorch.func.vmap`."""
    from .func import vmap as _vmap
    return _vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="numba", mode=None,
            options=None, disable=False):
    """Compile a model or function into fused Numba kernels behind guards (see
    `nbtorch.jit._compile`); like ``torch.compile``."""
    from .jit._compile import compile as _compile
    return _compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                    options=options, disable=disable)


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'nbtorch' has no attribute '{name}'")


# Last: axis= for dim= and out= where PyTorch has them, over every public function above.
from ._conventions import install as _install_conventions  # noqa: E402
_install_conventions()
