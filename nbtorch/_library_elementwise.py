"""`nbtorch.library.elementwise`: one scalar function, a CPU ufunc and a CUDA kernel.

The scalar function (plain Python over numbers, no arrays) is compiled twice,
lazily and per dtype, like the built-in elementwise ops of `kernels/scalar.py`:

- CPU: ``numba.vectorize`` turns it into a NumPy ufunc (a DUFunc); NumPy's
  ufunc machinery handles strides and broadcasting, at NumPy's speed;
- CUDA: `nbtorch.kernels.cuda.gridstride` compiles it as a ``cuda.jit(device=True)``
  function inlined into its grid-stride elementwise kernels (built on first use).

The op is a `CustomOp` whose forward goes through the same `run_elementwise` path
as ``nbtorch.add`` (broadcasting, type promotion, scalars, float16/bfloat16 computed in
float32). Its gradient is either a backward formula (as for any custom op)
or, with ``grads=``, one scalar derivative per input, each compiled into its
own elementwise op: ``grad_i = grad_out * d_i(*inputs)``.
"""
import numba
import numpy as np

from . import _dtype
from ._tensor import Tensor
from ._library_op import (CustomOp, TensorSpec, _OPS, _check_new_name, _current_stream,
                          _register)
from .ops._common import broadcast_shapes
from .ops._elementwise import float_dtype, run_elementwise, shape_of

__all__ = ["elementwise", "ElementwiseOp"]

_FASTMATH = {"contract"}        # as the built-in ufuncs: fused multiply-add, IEEE NaN/inf




class CpuUfuncKernel:
    """CPU kernel ``fn(out, *args)`` running a user's scalar function as a Numba ufunc."""

    def __init__(self, op, scalar_fn):
        self.op = op
        self.scalar_fn = scalar_fn
        self.ufunc = numba.vectorize(fastmath=_FASTMATH)(scalar_fn)   # a lazy DUFunc
        self.__kernels__ = (self.ufunc,)
        self.__wrapped__ = scalar_fn
        self.__name__ = scalar_fn.__name__
        self.__qualname__ = f"library.{op}.cpu"

    def __call__(self, out, *args):
        if out.dtype.name in ("float16", "bfloat16"):               # Numba has no half floats: compute in float32
            tmp = np.empty(out.shape, np.float32)
            self(tmp, *args)
            out[...] = tmp
            return
        types = "".join(a.dtype.char for a in args) + "->" + out.dtype.char
        u = self.ufunc
        if types not in u.ufunc.types:
            ins = [numba.from_dtype(a.dtype) for a in args]
            u.add(numba.from_dtype(out.dtype)(*ins))
        with np.errstate(all="ignore"):
            u.ufunc(*args, out, signature=types)

    def __repr__(self):
        return f"<cpu ufunc kernel {self.__name__} of {self.op}>"


class CudaElementwiseKernel:
    """CUDA kernel ``fn(out, *args)``: the scalar function in the shared elementwise kernels."""

    def __init__(self, op, scalar_fn):
        self.op = op
        self.scalar_fn = scalar_fn
        self.body = "user_" + "".join(c if c.isalnum() else "_" for c in op)
        self.__wrapped__ = scalar_fn
        self.__name__ = scalar_fn.__name__
        self.__qualname__ = f"library.{op}.cuda"
        self._registered = False

    def __call__(self, out, *args):
        from nbtorch.kernels.cuda import gridstride as cuda_gridstride
        if not self._registered:
            cuda_gridstride.register_body(self.body, self.scalar_fn)
            self._registered = True
        cuda_gridstride.launch(self.body, out, args, _current_stream())

    def __repr__(self):
        return f"<cuda elementwise kernel {self.__name__} of {self.op}>"


class ElementwiseOp(CustomOp):
    """A custom op made from a scalar function; forward through `run_elementwise`."""

    def __init__(self, name, scalar_fn, keep_int=False):
        super().__init__(name, self._meta, signature_of=scalar_fn)
        self.scalar_fn = scalar_fn
        self.keep_int = keep_int
        self.derivatives = ()

    def result_dtype(self, args):
        d = _dtype.result_type(*args)
        return d if self.keep_int else float_dtype(d)

    def _meta(self, *args):
        return TensorSpec(broadcast_shapes(*(shape_of(a) for a in args)),
                          self.result_dtype(args))

    def delete(self):
        for d in self.derivatives:
            d.delete()
        super().delete()

    def output_specs(self, args):
        return [self._meta(*args)], True

    def run_forward(self, ctx, args):
        for i, a in enumerate(args):
            if not isinstance(a, (Tensor, int, float, bool, np.number)):
                raise TypeError(f"{self.name}(): argument '{self.arg_names[i]}' must be a "
                                f"Tensor or a number, not {type(a).__name__}")
        if not any(isinstance(a, Tensor) for a in args):
            raise TypeError(f"{self.name}(): expected at least one Tensor argument")
        d = self.result_dtype(args)
        compute = d.compute
        out = run_elementwise(self.name, args, compute, d)
        if self._backward is not None and any(
                isinstance(a, Tensor) and a._requires_grad for a in args):
            self._save(ctx, args, [out], True)
        return out


def _grads_backward(ctx, g):
    """grad_i = g * d_i(*inputs) for every input that needs a gradient."""
    op = ctx._forward_cls._op
    need = ctx.needs_input_grad
    return tuple(g * d(*ctx.inputs) if need[i] else None
                 for i, d in enumerate(op.derivatives))


def elementwise(scalar_fn=None, *, name=None, grads=None, backward=None, keep_int=False,
                override=False):
    """An elementwise op from one scalar function: a CPU ufunc and a CUDA kernel.

    Args:
        scalar_fn: plain Python function of scalars (``@numba.njit`` accepted), e.g.
            ``def gelu(x): return 0.5 * x * (1 + math.erf(x / math.sqrt(2)))``.
        name: 'namespace::op' (default 'custom::<function name>').
        grads: one scalar function per input giving d(out)/d(input), each taking all
            the inputs; the op's gradient is then ``grad_out * d_i(*inputs)``.
        backward: instead of `grads`, a backward formula
            ``backward(ctx, grad) -> one gradient per input`` reading ``ctx.inputs``.
        keep_int: integer inputs stay integer (default: they compute in float32).
        override: replace an op of the same name.

    Inputs may be tensors (broadcast together) or Python numbers; the result
    dtype follows PyTorch's promotion. Usable as a decorator.

    Example:
        >>> @nbtorch.library.elementwise(name="myops::softsign",
        ...                               grads=[lambda x: 1 / (1 + abs(x)) ** 2])
        ... def softsign(x):
        ...     return x / (1 + abs(x))
        >>> softsign(nbtorch.tensor([1.0, -3.0]))
        tensor([ 0.5000, -0.7500])
    """
    def deco(f):
        py = getattr(f, "py_func", f)
        qual = name or f"custom::{py.__name__}"
        _check_new_name(qual, override)
        op = ElementwiseOp(qual, py, keep_int=keep_int)
        _register(qual, "cpu", CpuUfuncKernel(qual, py), False)
        _register(qual, "cuda", CudaElementwiseKernel(qual, py), False)
        if grads is not None:
            if backward is not None:
                raise ValueError(f"{qual}: give either grads= or backward=, not both")
            if len(grads) != len(op.arg_names):
                raise ValueError(f"{qual}: grads= needs one derivative per input "
                                 f"({len(op.arg_names)}), got {len(grads)}")
            op.derivatives = tuple(
                elementwise(d, name=f"{qual}_grad{i}", keep_int=keep_int, override=True)
                for i, d in enumerate(grads))
            op.register_backward(_grads_backward)
        elif backward is not None:
            op.register_backward(backward)
        _OPS[qual] = op
        return op
    return deco if scalar_fn is None else deco(scalar_fn)
