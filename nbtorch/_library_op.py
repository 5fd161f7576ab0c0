"""The machinery behind `nbtorch.library.custom_op`: CustomOp, its autograd Function, Launcher.

A `CustomOp` owns a meta function (signature + output rule), a generated
`autograd.Function` subclass named after the op (so its tape node is
``<namespace>::<name>Backward``), and registry entries (one `Launcher` per
device) that adapt a user's kernel to the registry's calling convention.
See `nbtorch.library` for the user-facing story.
"""
import inspect as _pyinspect
import sys
from collections import namedtuple

from . import _dtype, _registry
from ._device import device as _device_cls
from ._tensor import Tensor, empty, wrap
from .autograd.function import Function
from .ops._common import check_same_device, sum_to

__all__ = ["TensorSpec", "CustomOp", "Launcher", "check_device", "DEVICES"]

DEVICES = ("cpu", "cuda")
_OPS = {}                        # qualified name -> CustomOp


class TensorSpec(namedtuple("TensorSpec", "shape dtype")):
    """What a meta function returns for one output: its shape and nbtorch dtype."""

    def __new__(cls, shape, dtype):
        return super().__new__(cls, tuple(int(s) for s in shape), _dtype.to_dtype(dtype))


def check_device(device):
    """'cpu' or 'cuda' from a device type string or `nbtorch.device`; ValueError otherwise."""
    name = device.type if isinstance(device, _device_cls) else str(device).split(":")[0]
    if name not in DEVICES:
        raise ValueError(f"unknown device type '{device}' (expected one of: "
                         f"{', '.join(DEVICES)})")
    return name


def _register(op, device, fn, override):
    """`register_kernel`, then let a running profiler time the new kernel too."""
    _registry.register_kernel(op, device, fn, override=override)
    prof_mod = sys.modules.get("nbtorch.profiler.profiler")
    if prof_mod is not None:
        prof_mod.rewrap()


# ---- kernels: how the registry calls a user's function -------------------------------

def _positional_count(fn):
    """How many positional parameters the Python function behind `fn` takes (None: *args)."""
    py = getattr(fn, "py_func", fn)
    try:
        params = _pyinspect.signature(py).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def _is_cuda_kernel(fn):
    """True for a ``numba.cuda.jit`` kernel (real or simulated): it needs a launch config."""
    mod = type(fn).__module__
    return mod.startswith("numba.cuda") and hasattr(fn, "__getitem__")


def _default_grid(*arrays):
    """(blocks, threads) for a grid-stride kernel over the largest array argument."""
    n = max([a.size for a in arrays if getattr(a, "ndim", None) is not None] or [1])
    try:
        from nbtorch.kernels.cuda._launch import grid
        return grid(max(n, 1))
    except ImportError:          # pragma: no cover - CUDA kernels package absent
        return min(max((n + 255) // 256, 1), 65535), 256


def _current_stream():
    try:
        from .cuda import _runtime
        return _runtime.raw_stream()
    except (ImportError, AttributeError):   # pragma: no cover - no CUDA runtime module
        return 0


class Launcher:
    """The registry entry of a user kernel: adapts it to ``kernel(*args, *outs)``.

    Attributes: `fn` (the user's function), `device`, `op` (qualified name),
    `passes_outputs` (whether `fn` receives the preallocated outputs).
    """

    def __init__(self, op, device, fn, n_args, grid=None):
        self.op, self.device, self.fn, self.grid = op, device, fn, grid
        count = _positional_count(fn)
        self.passes_outputs = count is None or count > n_args
        self.cuda = device == "cuda" and _is_cuda_kernel(fn)
        self.__wrapped__ = fn
        self.__kernels__ = (fn,)
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__qualname__ = f"library.{op}.{device}"
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, n_outputs=0):
        call = args if self.passes_outputs else args[:len(args) - n_outputs]
        if self.cuda:
            config = self.grid(*args) if callable(self.grid) else (self.grid or
                                                                   _default_grid(*args))
            return self.fn[config[0], config[1], _current_stream()](*call)
        return self.fn(*call)

    def __repr__(self):
        return f"<kernel {self.__name__} of {self.op} on {self.device}>"


# ---- custom ops ----------------------------------------------------------------------

class CustomOp:
    """A user-defined op: signature and output rule (meta), kernels per device, backward.

    Create one with `custom_op` or `Library.define`; call it like a function.
    """

    def __init__(self, name, meta, *, contiguous=True, signature_of=None):
        self.name = name
        self.meta = meta
        self.contiguous = contiguous
        self._sig = _pyinspect.signature(getattr(signature_of, "py_func", signature_of) or meta)
        self.arg_names = tuple(self._sig.parameters)
        self._backward = None
        self._setup_context = None
        self.__doc__ = meta.__doc__
        self.__name__ = name.split("::")[-1]
        module = getattr(meta, "__module__", None) or "__main__"
        self.function = type(name, (Function,), {
            "__module__": module, "__qualname__": name, "_op": self,
            "forward": staticmethod(_forward), "backward": staticmethod(_backward)})

    # -- registration --
    def register_kernel(self, device, fn=None, *, override=False, grid=None):
        """Register `fn` as this op's kernel on `device` ('cpu' or 'cuda'); a decorator too.

        Args:
            grid: CUDA launch configuration ``(blocks, threads)`` or a function of the
                kernel's arguments returning one (default: cover the largest array).

        Example:
            >>> @op.register_kernel("cpu")
            ... @numba.njit
            ... def _(x, out):
            ...     out[:] = 2 * x
        """
        dev = check_device(device)

        def deco(f):
            launcher = Launcher(self.name, dev, f, len(self.arg_names), grid)
            _register(self.name, dev, launcher, override)
            return f
        return deco if fn is None else deco(fn)

    def register_backward(self, backward=None, *, setup_context=None):
        """Set the backward: ``backward(ctx, *grad_outputs) -> one gradient per argument``.

        Without `setup_context`, every tensor argument and output is saved and
        the backward reads them as ``ctx.inputs`` (all arguments, in order),
        ``ctx.output`` / ``ctx.outputs``. With ``setup_context(ctx, inputs,
        output)`` (PyTorch's `register_autograd` style) you save what you need
        with ``ctx.save_for_backward``. Return None for non-tensor arguments.
        A backward may call other custom ops, which is how a backward *kernel*
        is written.
        """
        def deco(f):
            self._backward, self._setup_context = f, setup_context
            return f
        return deco if backward is None else deco(backward)

    register_autograd = register_backward

    # -- queries --
    def kernel(self, device):
        """The registered kernel's user function on `device` (NotImplementedError if none)."""
        k = _registry.get_kernel(self.name, check_device(device))
        return getattr(k, "fn", k)

    @property
    def devices(self):
        """Device types with a kernel for this op."""
        return tuple(d for d in DEVICES if (self.name, d) in _registry._KERNELS)

    def __repr__(self):
        return (f"<custom op {self.name}{self._sig} on {', '.join(self.devices) or 'no device'}"
                f"{', with backward' if self._backward else ''}>")

    # -- calling --
    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != len(self.arg_names):
            try:
                bound = self._sig.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{self.name}(): {e}") from None
            bound.apply_defaults()
            args = tuple(bound.arguments[n] for n in self.arg_names)
        return self.function.apply(*args)

    def output_specs(self, args):
        """The meta rule's outputs for `args` as a list of TensorSpec, and whether single."""
        res = self.meta(*args)
        return _as_specs(self.name, res, args)

    def delete(self):
        """Unregister this op (its kernels on every device and its name)."""
        for d in DEVICES:
            while (self.name, d) in _registry._KERNELS:
                _registry.unregister_kernel(self.name, d)
        _OPS.pop(self.name, None)

    # -- the autograd Function's bodies --
    def run_forward(self, ctx, args):
        """Allocate outputs from the meta rule, run the device's kernel, check its result."""
        specs, single = self.output_specs(args)
        dev = check_same_device(self.name, *args)
        outs = [empty(s.shape, s.dtype, dev) for s in specs]
        raw = [(a.contiguous() if self.contiguous else a)._array if isinstance(a, Tensor)
               else a for a in args]
        launcher = _registry.get_kernel(self.name, dev.type)
        arrays = [o._array for o in outs]
        if isinstance(getattr(launcher, "__nbtorch_profiled__", launcher), Launcher):
            result = launcher(*raw, *arrays, n_outputs=len(outs))
        else:                        # a plain function registered through the registry
            result = launcher(*raw, *arrays)
        if result is not None:
            outs = self._check_result(result, specs, dev, launcher)
        if self._backward is not None and any(
                isinstance(a, Tensor) and a._requires_grad for a in args):
            self._save(ctx, args, outs, single)
        return outs[0] if single else tuple(outs)

    def _check_result(self, result, specs, dev, launcher):
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        kname = getattr(getattr(launcher, "fn", launcher), "__name__", "kernel")
        if len(results) != len(specs):
            raise RuntimeError(f"{self.name}: the {dev.type} kernel '{kname}' returned "
                               f"{len(results)} output(s) but the meta function declares "
                               f"{len(specs)}")
        outs = []
        for i, (r, s) in enumerate(zip(results, specs)):
            shape, np_dtype = tuple(getattr(r, "shape", ())), getattr(r, "dtype", None)
            if shape != s.shape or np_dtype != s.dtype.np:
                raise RuntimeError(
                    f"{self.name}: the {dev.type} kernel '{kname}' returned output {i} with "
                    f"shape {list(shape)} and dtype {np_dtype}, but the meta function "
                    f"declares shape {list(s.shape)} and dtype {s.dtype.name}")
            outs.append(r if isinstance(r, Tensor) else wrap(r, dev))
        return outs

    def _save(self, ctx, args, outs, single):
        if self._setup_context is not None:
            self._setup_context(ctx, args, outs[0] if single else tuple(outs))
            return
        tensors = [a for a in args if isinstance(a, Tensor)]
        ctx.save_for_backward(*tensors, *outs)
        ctx._tensor_mask = tuple(isinstance(a, Tensor) for a in args)
        ctx._template = tuple(None if t else a for a, t in zip(args, ctx._tensor_mask))
        ctx._n_in, ctx._single = len(tensors), single

    def run_backward(self, ctx, grads):
        """Call the user's backward, then check the number and shapes of its gradients."""
        if self._backward is None:
            raise RuntimeError(f"{self.name} has no backward: register one with "
                               f"@<op>.register_backward before differentiating it")
        if self._setup_context is None:
            saved = ctx.saved_tensors
            it = iter(saved[:ctx._n_in])
            ctx.inputs = tuple(next(it) if is_t else a
                               for a, is_t in zip(ctx._template, ctx._tensor_mask))
            ctx.outputs = saved[ctx._n_in:]
            ctx.output = ctx.outputs[0] if ctx._single else ctx.outputs
        result = self._backward(ctx, *grads)
        result = result if isinstance(result, tuple) else (result,)
        n = len(self.arg_names)
        if len(result) != n:
            raise RuntimeError(
                f"{self.name}: backward returned {len(result)} gradient(s), expected {n} "
                f"(one per argument: {', '.join(self.arg_names)}; None for non-tensor "
                "arguments)")
        metas = [None] * n                 # the engine keeps one meta per tensor argument
        for i, meta in zip(ctx._arg_pos or range(n), ctx._input_meta):
            metas[i] = meta
        return tuple(self._check_grad(i, g, meta)
                     for i, (g, meta) in enumerate(zip(result, metas)))

    def _check_grad(self, i, g, meta):
        if g is None or meta is None:
            return None
        if not isinstance(g, Tensor):
            raise TypeError(f"{self.name}: backward returned a {type(g).__name__} for "
                            f"argument '{self.arg_names[i]}'; expected a Tensor or None")
        shape = meta[0]
        if g._shape != shape:
            try:
                g = sum_to(g, shape)
            except RuntimeError:
                raise RuntimeError(
                    f"{self.name}: backward returned a gradient of shape {list(g._shape)} "
                    f"for argument '{self.arg_names[i]}', which has shape "
                    f"{list(shape)}") from None
        return g


def _forward(ctx, *args):
    return ctx._forward_cls._op.run_forward(ctx, args)


def _backward(ctx, *grads):
    return ctx._forward_cls._op.run_backward(ctx, grads)


def _as_specs(name, res, args):
    """Normalise a meta function's result to ([TensorSpec], single)."""
    def one(r):
        if hasattr(r, "shape") and hasattr(r, "dtype"):
            return TensorSpec(r.shape, r.dtype)
        if isinstance(r, (tuple, list)) and len(r) == 2 and isinstance(r[1], _dtype.dtype):
            return TensorSpec(*r)
        if isinstance(r, (tuple, list)) and all(isinstance(s, int) for s in r):
            first = next((a for a in args if isinstance(a, Tensor)), None)
            if first is None:
                raise TypeError(f"{name}: the meta function returned a bare shape but no "
                                "argument is a tensor to take the dtype from")
            return TensorSpec(r, first.dtype)
        return None

    spec = one(res)
    if spec is not None:
        return [spec], True
    if isinstance(res, (tuple, list)) and res:
        specs = [one(r) for r in res]
        if all(s is not None for s in specs):
            return specs, False
    raise TypeError(f"{name}: the meta function must return a TensorSpec(shape, dtype), a "
                    f"(shape, dtype) pair, a shape, or a list of those; got {res!r}")


def _check_new_name(name, override):
    if "::" not in name or not all(name.split("::")):
        raise ValueError(f"op name '{name}' must be qualified as 'namespace::name'")
    if name in _OPS and not override:
        raise RuntimeError(f"op '{name}' is already defined; pass override=True to "
                           "redefine it (e.g. when re-running a notebook cell)")
    if name in _OPS:
        _OPS[name].delete()
