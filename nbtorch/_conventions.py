"""PyTorch's argument conventions, applied once over the public namespaces.

- ``axis=`` is accepted wherever ``dim=`` is (PyTorch's argument parser aliases them);
- ``out=`` is accepted by every function PyTorch gives one (OUT_FUNCTIONS, taken from
  PyTorch's signatures; tests/api/test_conventions.py keeps the list in step): the
  result is written into `out` with PyTorch's rules (resized when its shape differs,
  a dtype the result cannot be cast to is an error, no autograd through `out=`).

A function whose signature has `axis` is left alone for it. Every function of
OUT_FUNCTIONS gets its out= handled here, whether or not it takes `out` itself (one
rule for all, and none ignores it): EXACT_DTYPE lists those whose `out` must have the
result's dtype, as PyTorch's structured kernels require. The wrapper keeps the
function's name, docstring and signature (``functools.wraps``); on a call without
keyword arguments it costs one branch.

Functions marked `native_out` (the elementwise ops) get `out` passed through when their
result is certain to need none of those rules (`_plain_out`: floating tensors of out's
dtype, shape and device, numbers, nothing requiring grad): they write it directly, where
the general rule computes a fresh tensor and copies it (1e6 floats: 311 us of copy).
Their `out` (and that of every OVERLAP_REFUSED function) is refused, as PyTorch refuses
it, when its elements share memory or it partly overlaps an input (nbtorch/_overlap.py).
"""
import functools
import inspect
import warnings

__all__ = ["install", "write_out", "OUT_FUNCTIONS", "native_out"]

_NUMBERS = (int, float, bool)


def native_out(fn):
    """Mark `fn` as writing `out=` itself correctly when `_plain_out` holds."""
    fn.__nbtorch_native_out__ = True
    return fn


def _check_overlap(out, args, kwargs):
    """PyTorch's refusals for the `out` of an OVERLAP_REFUSED op: elements sharing memory,
    or memory partly shared with an input (the result would depend on the order of the
    writes)."""
    from ._overlap import check_no_internal_overlap, check_no_partial_overlap
    from ._tensor import Tensor
    inputs = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, (list, tuple)):          # cat's and stack's tensors
            inputs.extend(a)
        else:
            inputs.append(a)
    for o in (out if isinstance(out, (list, tuple)) else (out,)):
        if o.__class__ is Tensor:
            check_no_internal_overlap(o)
            check_no_partial_overlap(o, inputs)


def _plain_out(args, kwargs, out):
    """True when every rule of `write_out` is moot: out a floating tensor, every tensor
    argument of its dtype, shape and device (no broadcasting, resizing or casting), the
    rest Python numbers, and nothing requiring grad while grad mode is on."""
    from ._tensor import Tensor
    from .autograd import grad_mode
    if out.__class__ is not Tensor or not out.dtype.is_floating_point:
        return False
    grad = grad_mode.STATE.enabled
    if grad and out._requires_grad:
        return False
    dtype, shape, device = out.dtype, out._shape, out.device
    for a in (*args, *kwargs.values()):
        if a.__class__ is Tensor:
            if (a.dtype is not dtype or a._shape != shape or (grad and a._requires_grad)
                    or not (a.device is device or a.device == device)):
                return False
        elif a.__class__ not in _NUMBERS:
            return False
    return True

# Functions of the torch namespace with an `out=` argument (PyTorch 2.13: the aten
# schemas with an `out` overload, and the Python functions documenting one).
OUT_FUNCTIONS = frozenset("""
    abs absolute acos acosh adaptive_avg_pool1d add addbmm addcdiv addcmul addmm addmv
    addr affine_grid_generator alias_copy all amax amin aminmax angle any arange arccos
    arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argsort as_strided_copy
    as_strided_scatter asin asinh atan atan2 atanh avg_pool1d baddbmm bartlett_window
    batch_norm_backward_elemt batch_norm_elemt bernoulli
    binary_cross_entropy_with_logits bincount binomial bitwise_and bitwise_left_shift
    bitwise_not bitwise_or bitwise_right_shift bitwise_xor blackman_window block_diag
    bmm bucketize cat ccol_indices_copy ceil celu chain_matmul channel_shuffle cholesky
    cholesky_inverse cholesky_solve clamp clamp_max clamp_min clip clone
    col_indices_copy column_stack complex concat concatenate conj_physical
    constant_pad_nd conv_tbc convolution copysign cos cosh count_nonzero cross
    crow_indices_copy cudnn_affine_grid_generator cudnn_convolution
    cudnn_convolution_add_relu cudnn_convolution_relu cudnn_convolution_transpose
    cudnn_grid_sampler cummax cummin cumprod cumsum deg2rad dequantize detach_copy diag
    diag_embed diagonal_copy diagonal_scatter diff digamma dist div divide dot dstack
    embedding empty empty_like empty_permuted empty_quantized empty_strided eq erf erfc
    erfinv exp exp2 expand_copy expm1 eye fill fix flip float_power floor floor_divide
    fmax fmin fmod frac frexp frobenius_norm from_file full full_like gather gcd ge
    geqrf ger greater greater_equal grid_sampler_2d grid_sampler_3d gt hamming_window
    hann_window hardshrink hash_tensor heaviside histc histogram histogramdd hspmm
    hstack hypot i0 igamma igammac index_add index_copy index_fill index_put
    index_reduce index_select indices_copy inner int_repr inverse isin
    isneginf isposinf kaiser_window kron kthvalue lcm ldexp le lerp less less_equal
    lgamma linspace log log10 log1p log2 log_softmax logaddexp logaddexp2 logcumsumexp
    logical_and logical_not logical_or logical_xor logit logspace logsumexp lt lu_solve
    lu_unpack masked_fill masked_scatter masked_select matmul matrix_power max maximum
    mean median min minimum miopen_convolution miopen_convolution_transpose
    miopen_depthwise_convolution mkldnn_adaptive_avg_pool2d mkldnn_convolution
    mkldnn_max_pool2d mkldnn_max_pool3d mm mode msort mul multinomial multiply mv
    mvlgamma nan_to_num nanmean nanmedian nanquantile nansum narrow_copy
    native_batch_norm native_norm ne neg negative nextafter nonzero nonzero_static norm
    normal not_equal nuclear_norm ones ones_like orgqr ormqr outer permute_copy
    pixel_shuffle pixel_unshuffle poisson polar polygamma pow prod put
    q_per_channel_scales q_per_channel_zero_points quantile quantize_per_channel
    quantize_per_tensor quantize_per_tensor_dynamic quantized_batch_norm
    quantized_max_pool1d quantized_max_pool2d quantized_max_pool3d rad2deg rand
    rand_like randint randint_like randn randn_like randperm range reciprocal relu
    remainder renorm repeat_interleave roll rot90 round row_indices_copy row_stack rsqrt
    rsub scalar_tensor scatter scatter_add scatter_reduce searchsorted segment_reduce
    select_copy select_scatter sgn sigmoid sign signbit sin sinc sinh slice_copy
    slice_scatter softmax sort sparse_coo_tensor split_copy split_with_sizes_copy sqrt
    square squeeze_copy sspaddmm stack std std_mean sub subtract sum svd t_copy take
    take_along_dim tan tanh tensordot threshold topk trace transpose_copy
    triangular_solve tril tril_indices triu triu_indices true_divide trunc unbind_copy
    unfold_copy unsafe_split unsafe_split_with_sizes unsqueeze_copy values_copy var
    var_mean vdot view_as_complex_copy view_as_real_copy view_copy vstack where xlogy
    zeros zeros_like
""".split())


# Functions whose `out` may not partly overlap an input nor have elements sharing memory
# (PyTorch's TensorIterator ops, joins, scans, sorts, gathers): measured on PyTorch 2.13,
# every OUT_FUNCTIONS entry called with out=x[1:] over x[:-1]. The reductions, matmul and
# softmax families accept such an `out` (they write a fresh result), and so does nbtorch.
OVERLAP_REFUSED = frozenset("""
    abs absolute acos acosh add addcdiv addcmul addmm addr angle arccos arccosh arcsin
    arcsinh arctan arctan2 arctanh asin asinh atan atan2 atanh bernoulli bitwise_and
    bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor cat ceil
    clamp clamp_max clamp_min clip column_stack concat concatenate conj_physical
    copysign cos cosh cumprod cumsum deg2rad diff digamma div divide dstack eq erf erfc
    erfinv exp exp2 expm1 fix floor floor_divide fmax fmin fmod frac gather gcd ge ger
    greater greater_equal gt hardshrink heaviside hstack hypot i0 igamma igammac
    index_select kron lcm ldexp le lerp less less_equal lgamma log log10 log1p log2
    logaddexp logaddexp2 logcumsumexp logical_and logical_not logical_or logical_xor
    logit lt maximum minimum msort mul multiply nan_to_num ne neg negative nextafter
    normal not_equal outer pow rad2deg reciprocal remainder round row_stack rsqrt sgn
    sigmoid sign sin sinc sinh sort sqrt square stack sub subtract take_along_dim tan
    tanh true_divide trunc vstack xlogy
""".split())

# aten has an out overload of these, but torch's Python functions refuse out= (TypeError).
PYTHON_REFUSES_OUT = frozenset({"isnan", "isinf"})

# Ops whose out= must be a bool tensor ("signbit does not support non-boolean outputs.").
BOOL_OUT = frozenset({"signbit", "isposinf", "isneginf"})


def _params(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None


def _takes(params, name):
    return params is not None and name in params


# Ops whose out= must have the result's dtype exactly (PyTorch's structured kernels; the
# elementwise ops, reductions, joins and factories cast into `out` instead).
EXACT_DTYPE = frozenset("""
    mm bmm matmul mv dot vdot addmm addbmm baddbmm addmv addr inner tensordot cross diag
    tril triu gather sort max min kthvalue mode topk median nanmedian cummax cummin aminmax
    index_select take masked_select where clamp clip searchsorted bucketize nonzero msort
    take_along_dim scatter scatter_add scatter_reduce index_add index_copy index_fill isin
""".split())

_C10 = {"float32": "float", "float64": "double", "float16": "c10::Half",
        "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int", "int16": "short int",
        "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}


def _wrap(fn, name, axis, out):
    native = getattr(fn, "__nbtorch_native_out__", False)
    checked = native or name in OVERLAP_REFUSED

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if kwargs:
            if axis and "axis" in kwargs:
                if "dim" in kwargs:
                    raise TypeError(f"{name}() got multiple values for argument 'dim'")
                kwargs["dim"] = kwargs.pop("axis")
            if out and "out" in kwargs:
                dest = kwargs.pop("out")
                if dest is not None:
                    if checked:
                        _check_overlap(dest, args, kwargs)
                    if native and _plain_out(args, kwargs, dest):
                        return fn(*args, out=dest, **kwargs)
                    return write_out(name, fn(*args, **kwargs), dest)
        return fn(*args, **kwargs)
    wrapper.__nbtorch_conventions__ = True
    return wrapper


def write_out(name, result, out):
    """Copy `result` (a tensor or a tuple of them) into `out` as PyTorch's out= does."""
    Tensor = _LAZY.get("Tensor")
    if Tensor is None:
        from ._tensor import Tensor
        _LAZY["Tensor"] = Tensor
    if isinstance(result, Tensor):
        if not isinstance(out, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not "
                            f"{type(out).__name__}")
        _write_one(name, result, out)
        return out
    if not isinstance(out, (tuple, list)) or len(out) != len(result):
        raise TypeError(f"{name}(): argument 'out' must be tuple of Tensors of length "
                        f"{len(result)}")
    for r, o in zip(result, out):
        _write_one(name, r, o)
    return type(result)(*out) if hasattr(result, "_fields") else tuple(out)


_LAZY = {}      # modules `_write_one` needs, imported on its first call (import cycles)


def _write_one(name, r, o):
    try:
        _dtype, grad_mode = _LAZY["dtype"], _LAZY["grad_mode"]
    except KeyError:            # a function-level import costs ~1 us per call, every call
        from . import _dtype
        from .autograd import grad_mode
        _LAZY.update(dtype=_dtype, grad_mode=grad_mode)
    if grad_mode.STATE.enabled and (r.requires_grad or o.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           f"automatic differentiation, but one of the arguments requires "
                           f"grad.")
    if o.device != r.device:
        raise RuntimeError(f"Expected out tensor to have device {r.device}, but got "
                           f"{o.device} instead")
    if name in BOOL_OUT and o.dtype is not _dtype.bool:
        raise RuntimeError(f"{name} does not support non-boolean outputs.")
    if name in EXACT_DTYPE and o.dtype is not r.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {_C10[r.dtype.name]}, but got "
                           f"{_C10[o.dtype.name]} instead")
    if not _dtype.can_cast(r.dtype, o.dtype):
        raise RuntimeError(f"result type {_dtype.type_name(r.dtype)} can't be cast to the "
                           f"desired output type {_dtype.type_name(o.dtype)}")
    if tuple(o.shape) != tuple(r.shape):
        if o.numel():
            warnings.warn(f"An output with one or more elements was resized since it had "
                          f"shape {list(o.shape)}, which does not match the required output "
                          f"shape {list(r.shape)}. This behavior is deprecated, and in a "
                          f"future PyTorch release outputs will not be resized unless they "
                          f"have zero elements. You can explicitly reuse an out tensor t by "
                          f"resizing it, inplace, to zero elements with t.resize_(0).",
                          UserWarning, stacklevel=4)
        o.resize_(r.shape)
    with grad_mode.no_grad():
        o.copy_(r.detach())


def _install_on(holder, names, is_class, wrapped):
    for name in names:
        fn = holder.__dict__.get(name) if is_class else getattr(holder, name, None)
        if fn is None or getattr(fn, "__nbtorch_conventions__", False) or \
                not callable(fn) or inspect.isclass(fn):
            continue
        params = _params(fn)
        axis = _takes(params, "dim") and not _takes(params, "axis")
        out = not is_class and name in OUT_FUNCTIONS     # also where `out` is taken (and
                                                         # maybe ignored): one rule for all
        if axis or out:
            w = wrapped.get(id(fn))
            if w is None:
                w = wrapped[id(fn)] = (fn, _wrap(fn, name, axis, out))
            setattr(holder, name, w[1])


def install():
    """Wrap the public functions of nbtorch, nbtorch.linalg and the Tensor methods, and
    rebind every other name of a loaded nbtorch module that held one of them (F.relu is
    nbtorch.relu: one function, so fx spells it one way)."""
    import sys
    import nbtorch
    from ._tensor import Tensor
    wrapped = {}                                   # id(original) -> (original, wrapper)
    _install_on(nbtorch, [n for n in dir(nbtorch) if not n.startswith("_")], False, wrapped)
    _install_on(nbtorch.linalg, [n for n in dir(nbtorch.linalg) if not n.startswith("_")],
                False, wrapped)
    _install_on(Tensor, [n for n in list(Tensor.__dict__) if not n.startswith("_")], True,
                wrapped)
    for name, mod in list(sys.modules.items()):
        if mod is None or not name.startswith("nbtorch.") or name == __name__:
            continue
        for attr, value in list(vars(mod).items()):
            w = wrapped.get(id(value))
            if w is not None and w[0] is value:
                setattr(mod, attr, w[1])
