"""CTC loss kernels on CUDA: one thread per sample runs the recursions of `kernels/ctc.py`
(the CPU's loop calls the same bodies) over alpha/beta scratch in global memory.

Contracts of `kernels/cpu/ctc.py` plus ``stream=``. A thread per sample is simple and
exact; it leaves most of a GPU idle for small batches (a block per sample with a thread
per extended-label position, synchronised per time step, is the faster design).
"""
from numba import cuda

from nbtorch.kernels.ctc import ctc_alpha_one, ctc_grad_one
from ._launch import grid

__all__ = ["ctc_loss_forward", "ctc_loss_backward", "typecheck_signatures"]


@cuda.jit(cache=True)
def ctc_forward_kernel(lp, targets, offsets, target_lengths, input_lengths, blank, alpha, nll):
    """for n (grid-stride): nll[n] = alpha recursion of sample n."""
    for n in range(cuda.grid(1), lp.shape[1], cuda.gridsize(1)):
        nll[n] = ctc_alpha_one(lp, n, targets, offsets[n], target_lengths[n],
                               input_lengths[n], blank, alpha[n])


@cuda.jit(cache=True)
def ctc_backward_kernel(lp, targets, offsets, target_lengths, input_lengths, blank, alpha, beta,
                        nll, grad_nll, zero_infinity, grad):
    """for n (grid-stride): grad[:, n, :] from the beta recursion of sample n."""
    for n in range(cuda.grid(1), lp.shape[1], cuda.gridsize(1)):
        ctc_grad_one(lp, n, targets, offsets[n], target_lengths[n], input_lengths[n], blank,
                     alpha[n], beta[n], nll[n], grad_nll[n], zero_infinity, grad)


def ctc_loss_forward(lp, targets, offsets, target_lengths, input_lengths, blank, alpha, nll,
                     stream=0):
    if lp.shape[1] == 0:
        return
    ctc_forward_kernel[grid(lp.shape[1]) + (stream,)](
        lp, targets, offsets, target_lengths, input_lengths, blank, alpha, nll)


def ctc_loss_backward(lp, targets, offsets, target_lengths, input_lengths, blank, alpha, beta,
                      nll, grad_nll, zero_infinity, grad, stream=0):
    if lp.shape[1] == 0:
        return
    ctc_backward_kernel[grid(lp.shape[1]) + (stream,)](
        lp, targets, offsets, target_lengths, input_lengths, blank, alpha, beta, nll,
        grad_nll, bool(zero_infinity), grad)


def typecheck_signatures():
    from numba import types as nt
    i1 = nt.Array(nt.int64, 1, "C")
    for t in (nt.float32, nt.float64):
        a3 = nt.Array(t, 3, "C")
        a1 = nt.Array(t, 1, "C")
        yield (f"ctc_forward[{t}]", ctc_forward_kernel.py_func,
               (a3, i1, i1, i1, i1, nt.int64, a3, a1))
        yield (f"ctc_backward[{t}]", ctc_backward_kernel.py_func,
               (a3, i1, i1, i1, i1, nt.int64, a3, a3, a1, a1, nt.boolean, a3))
