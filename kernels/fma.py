"""Fused multiply-add and lerp for scalar bodies, on both Numba targets.

PyTorch's vectorised CPU kernels round some compound updates once, with an
FMA instruction: ``add(x, alpha=a)`` is ``fma(x, a, self)``, ``addcmul`` is
``fma(value * t1, t2, self)``, ``lerp`` is ``fma(weight, end - start, start)``
(for ``|weight| < 0.5``; else ``fma(start - end, 1 - weight, end)``), while
``addcdiv``, ``mul`` and ``add`` round each operation. An optimizer formula
written with these matches PyTorch's result bit for bit instead of drifting
by an ulp per step.

`fma` and `lerp` are plain Python functions (two roundings: what the CUDA
simulator and ``NUMBA_DISABLE_JIT=1`` run) with a Numba overload that
lowers to LLVM's ``llvm.fma``: one instruction on the CPU (vectorised) and
``fma.rn`` in PTX, so the same scalar body compiles for both targets.
"""
from numba import types
from numba.extending import intrinsic, overload

__all__ = ["fma", "lerp"]


def fma(a, b, c):
    """``a * b + c``, rounded once when compiled (a, b, c of one float type)."""
    return a * b + c


def lerp(start, end, weight):
    """``start + weight * (end - start)`` as torch.lerp rounds it when compiled."""
    if abs(weight) < 0.5:
        return fma(weight, end - start, start)
    return fma(start - end, 1 - weight, end)


def _same_float(*args):
    return isinstance(args[0], types.Float) and all(a == args[0] for a in args)


@intrinsic
def _llvm_fma(typingctx, a, b, c):
    if not _same_float(a, b, c):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return a(a, b, c), codegen


@overload(fma)
def _fma_overload(a, b, c):
    if _same_float(a, b, c):
        return lambda a, b, c: _llvm_fma(a, b, c)


@overload(lerp)
def _lerp_overload(start, end, weight):
    if not _same_float(start, end, weight):
        return None
    dtype = start

    def impl(start, end, weight):
        if abs(weight) < 0.5:
            return _llvm_fma(weight, end - start, start)
        return _llvm_fma(start - end, dtype(1) - weight, end)
    return impl
