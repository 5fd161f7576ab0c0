"""`autocast`: per-thread mixed-precision state and the context manager that sets it.

The state (enabled and dtype per device type, the weight cast cache, the nesting
depth) is per thread, as PyTorch's. Ops read it only through the cast hooks of
`nbtorch.amp._hooks`, which are installed while some autocast region is open
(or a thread switched autocast on by hand) and taken out again afterwards, so
code outside autocast runs the plain, unwrapped ops.

Example:
    >>> with nbtorch.autocast("cpu"):                 # bfloat16 on the CPU
    ...     y = model(x)                              # Linear/conv in bfloat16
    ...     loss = F.cross_entropy(y, target)         # losses in float32
"""
import contextlib
import functools
import sys
import warnings

from .. import _dtype
from . import _hooks

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available",
           "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype",
           "set_autocast_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache", "autocast_increment_nesting",
           "autocast_decrement_nesting", "get_autocast_cpu_dtype", "get_autocast_gpu_dtype",
           "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "set_autocast_cpu_dtype",
           "set_autocast_gpu_dtype"]

_DEVICES = ("cpu", "cuda")
_SUPPORTED = (_dtype.bfloat16, _dtype.float16)
STATE = _hooks.STATE


def is_autocast_available(device_type):
    """True for the device types autocast supports here ('cpu', 'cuda')."""
    return device_type in _DEVICES


# PyTorch's device type names (its error for any other name lists them)
_TORCH_DEVICE_TYPES = ("cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, "
                       "maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone")


def _check_device(device_type):
    if device_type in _DEVICES:
        return
    if device_type in _TORCH_DEVICE_TYPES.split(", "):
        raise RuntimeError(f"User specified an unsupported autocast device_type "
                           f"'{device_type}'")
    raise RuntimeError(f"Expected one of {_TORCH_DEVICE_TYPES} device type at start of "
                       f"device string: {device_type}")


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for `device_type` in this thread (no argument: 'cuda')."""
    if device_type is None:
        device_type = "cuda"
    _check_device(device_type)
    return STATE.enabled[device_type]


def set_autocast_enabled(device_type, enabled=None):
    """Switch autocast on or off for `device_type` in this thread (one argument: 'cuda')."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _check_device(device_type)
    STATE.enabled[device_type] = bool(enabled)
    _hooks.refresh(STATE)


def get_autocast_dtype(device_type):
    """The low-precision dtype of `device_type` (bfloat16 on 'cpu', float16 on 'cuda')."""
    _check_device(device_type)
    return STATE.dtype[device_type]


def set_autocast_dtype(device_type, dtype):
    _check_device(device_type)
    STATE.dtype[device_type] = dtype


def is_autocast_cache_enabled():
    return STATE.cache_enabled


def set_autocast_cache_enabled(enabled):
    STATE.cache_enabled = bool(enabled)


def clear_autocast_cache():
    """Drop this thread's cached low-precision copies of the weights."""
    STATE.cache.clear()


def autocast_increment_nesting():
    STATE.nesting += 1
    return STATE.nesting


def autocast_decrement_nesting():
    STATE.nesting -= 1
    return STATE.nesting


def _deprecated(old, new):
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def is_autocast_cpu_enabled():
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def set_autocast_cpu_dtype(dtype):
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype):
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def _tracer():
    """The tracer recording this thread's code (jit.trace, nbtorch.compile, fx), unless
    it is running a layer for real (then the layer's own code runs autocast)."""
    patch = sys.modules.get("nbtorch.fx._patch")
    tracer = getattr(patch.RECORDING, "tracer", None) if patch is not None else None
    return tracer if tracer is not None and not tracer._executing else None


def _enter_autocast(device, dtype, enabled, cache_enabled):
    """A graph node: enter the autocast region the traced code entered here (PyTorch's
    graphs hold the same pair); returns it for `_exit_autocast`. Replaying the graph runs
    the ops after it through autocast's casts, as the code did."""
    region = autocast(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)
    region.__enter__()
    return region


def _exit_autocast(region):
    """A graph node: leave the region `_enter_autocast` entered."""
    region.__exit__(None, None, None)


_enter_autocast._fx_impure = _exit_autocast._fx_impure = True   # kept by dead-code passes


class autocast:
    """Run the ops of a region in mixed precision: matmuls and convolutions in the
    low-precision dtype, precision-sensitive ops (losses, reductions...) in float32,
    multi-input ops in the widest input type (PyTorch's op lists, `nbtorch.amp._policies`).

    A context manager and a decorator; regions nest (``enabled=False`` inside switches
    it off). Low-precision copies of leaf tensors that require grad (the weights) are
    cached until the outermost region exits (``cache_enabled``).
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: "
                             f"`{type(device_type)}`")
        _check_device(device_type)
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = (is_autocast_cache_enabled() if cache_enabled is None
                               else cache_enabled)
        if enabled and device_type == "cuda":
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                              "autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype is _dtype.bfloat16:     # nbtorch's CUDA has no bfloat16
                raise RuntimeError("Current CUDA Device does not support bfloat16. Please "
                                   "switch dtype to float16.")
        elif enabled and self.fast_dtype not in _SUPPORTED:
            name = device_type.upper()
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. "
                          f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                          "torch.bfloat16, torch.float16 currently.", stacklevel=2)
            enabled = False
        self._enabled = enabled

    def __enter__(self):
        tracer = _tracer()
        self._node = None if tracer is None else tracer.create_proxy(
            "call_function", _enter_autocast,
            (self.device, self.fast_dtype, self._enabled, self._cache_enabled), {})
        _hooks.retain()                 # the cast hooks stay in while the region is open
        self.prev_suspended = STATE.suspended   # a region opened inside an op or backward
        STATE.suspended = 0                     # (checkpoint's recompute) autocasts
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        STATE.suspended = self.prev_suspended
        _hooks.refresh(STATE)
        _hooks.release()
        node = getattr(self, "_node", None)
        if node is not None:            # traced code left the region: so does the graph
            self._node = None
            node.tracer.create_proxy("call_function", _exit_autocast, (node,), {})
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                "Did you mean to use autocast as a context manager? For example:\n"
                "    with torch.autocast(device_type=...):\n"
                "        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


def _autocast_state():
    """This thread's autocast settings, to re-enter later (checkpoint's recomputation)."""
    return ({d: (STATE.enabled[d], STATE.dtype[d]) for d in _DEVICES},
            STATE.cache_enabled)


@contextlib.contextmanager
def _autocast_restored(state):
    """Run the block with the autocast settings `_autocast_state` returned."""
    per_device, cache_enabled = state
    with contextlib.ExitStack() as stack:
        for device_type, (enabled, dtype) in per_device.items():
            if enabled or STATE.enabled[device_type]:
                stack.enter_context(autocast(device_type, dtype=dtype, enabled=enabled,
                                             cache_enabled=cache_enabled))
        yield


def _cast(value, device_type, dtype):
    """`value` with its floating (non-double) tensors on `device_type` cast to `dtype`,
    looking into lists, tuples and dicts."""
    from .._tensor import Tensor
    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype is not _dtype.float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorate a custom Function's forward: with `cast_inputs`, inside an autocast
    region its floating inputs are cast to that dtype and it runs with autocast off."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs),
                           **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorate a custom Function's backward: it runs with the autocast state its
    forward ran with."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
