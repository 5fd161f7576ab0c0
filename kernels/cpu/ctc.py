"""CTC loss kernels for the CPU: the alpha recursion (forward) and the beta recursion with
the gradient (backward), a sample at a time, with the bodies of `kernels/ctc.py`.

Contracts (raw C-contiguous arrays; the op layer allocates every output and scratch
array, checks lengths and labels, and passes float32 or float64 log-probabilities)::

    ctc_loss_forward(lp (T,N,C), targets (M,) int64, offsets (N,), target_lengths (N,),
                     input_lengths (N,), blank, alpha (N,T,S), nll (N,))
        for n: nll[n] = -log p(targets of n | lp[:input_lengths[n], n]), alpha[n] kept
    ctc_loss_backward(lp, targets, offsets, target_lengths, input_lengths, blank,
                      alpha, beta (N,T,S) scratch, nll, grad_nll (N,), zero_infinity,
                      grad (T,N,C))
        for n: grad[:, n, :] = grad_nll[n] * d nll[n] / d lp (PyTorch's convention)
"""
import numba

from nbtorch.kernels.ctc import ctc_alpha_one, ctc_grad_one

__all__ = ["ctc_loss_forward", "ctc_loss_backward"]


@numba.njit(cache=True)
def _forward(lp, targets, offsets, target_lengths, input_lengths, blank, alpha, nll):
    for n in range(lp.shape[1]):
        nll[n] = ctc_alpha_one(lp, n, targets, offsets[n], target_lengths[n],
                               input_lengths[n], blank, alpha[n])


@numba.njit(cache=True)
def _backward(lp, targets, offsets, target_lengths, input_lengths, blank, alpha, beta, nll,
              grad_nll, zero_infinity, grad):
    for n in range(lp.shape[1]):
        ctc_grad_one(lp, n, targets, offsets[n], target_lengths[n], input_lengths[n], blank,
                     alpha[n], beta[n], nll[n], grad_nll[n], zero_infinity, grad)


def ctc_loss_forward(lp, targets, offsets, target_lengths, input_lengths, blank, alpha, nll):
    _forward(lp, targets, offsets, target_lengths, input_lengths, blank, alpha, nll)


def ctc_loss_backward(lp, targets, offsets, target_lengths, input_lengths, blank, alpha, beta,
                      nll, grad_nll, zero_infinity, grad):
    _backward(lp, targets, offsets, target_lengths, input_lengths, blank, alpha, beta, nll,
              grad_nll, bool(zero_infinity), grad)
