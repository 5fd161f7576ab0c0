"""The CTC loss recursions for one sample, written once for both devices.

``register_jitable`` bodies (see `shared.py`): the CPU loop (`cpu/ctc.py`) and the
CUDA kernel (`cuda/ctc.py`, one thread per sample) call them on sample n of a batch.
They follow Graves et al. (2006) in log space as PyTorch's CPU kernel does, over the
extended target l' = (blank, l1, blank, l2, ..., lL, blank) of S = 2L + 1 symbols:

    alpha[0, 0] = lp[0, blank], alpha[0, 1] = lp[0, l1]
    alpha[t, s] = logsumexp(alpha[t-1, s], alpha[t-1, s-1],
                            alpha[t-1, s-2] if l'[s] != l'[s-2]) + lp[t, l'[s]]
    nll = -logsumexp(alpha[T-1, S-1], alpha[T-1, S-2])
    beta: the same recursion from the end; the gradient PyTorch returns is
    grad[t, c] = exp(lp[t, c]) - exp(logsumexp_{s: l'[s] = c} alpha[t, s] + beta[t, s]
                                      + nll - lp[t, c])
    (the derivative through a log_softmax that produced lp; PyTorch's convention).

Arrays: lp (T, N, C); targets flat int64, sample n's labels at [off, off + L);
alpha/beta (T, S) slices of the caller's scratch; grad (T, N, C).
"""
import math

from numba.extending import register_jitable

__all__ = ["ctc_alpha_one", "ctc_grad_one"]

NEG_INF = -math.inf


@register_jitable
def _label(targets, off, s, blank):
    """l'[s]: blank at even s, the (s // 2)-th label at odd s."""
    if s % 2 == 0:
        return blank
    return targets[off + s // 2]


@register_jitable
def _lse3(a, b, c):
    """log(exp(a) + exp(b) + exp(c)) as PyTorch computes it (-inf when all three are)."""
    m = max(a, max(b, c))
    if m == NEG_INF:
        return NEG_INF           # log(0); the simulator's math.log(0) would raise
    return math.log(math.exp(a - m) + math.exp(b - m) + math.exp(c - m)) + m


@register_jitable
def ctc_alpha_one(lp, n, targets, off, L, T, blank, alpha):
    """Fill alpha[:T, :2L+1] for sample n; return its negative log-likelihood."""
    S = 2 * L + 1
    if T == 0:
        return 0.0 if L == 0 else math.inf
    for s in range(S):
        alpha[0, s] = NEG_INF
    alpha[0, 0] = lp[0, n, blank]
    if L > 0:
        alpha[0, 1] = lp[0, n, targets[off]]
    for t in range(1, T):
        for s in range(S):
            cur = _label(targets, off, s, blank)
            a1 = alpha[t - 1, s]
            a2 = alpha[t - 1, s - 1] if s > 0 else NEG_INF
            a3 = NEG_INF
            if s > 1 and _label(targets, off, s - 2, blank) != cur:
                a3 = alpha[t - 1, s - 2]
            alpha[t, s] = _lse3(a1, a2, a3) + lp[t, n, cur]
    l2 = alpha[T - 1, S - 2] if L > 0 else NEG_INF
    return -_lse3(alpha[T - 1, S - 1], l2, NEG_INF)


@register_jitable
def ctc_grad_one(lp, n, targets, off, L, T, blank, alpha, beta, nll, gout, zero_inf, grad):
    """grad[:, n, :] for sample n (gout: d loss / d nll[n]); beta is scratch like alpha."""
    Tmax, C = grad.shape[0], grad.shape[2]
    if zero_inf and nll == math.inf:
        T = 0
    for t in range(T, Tmax):
        for c in range(C):
            grad[t, n, c] = 0.0
    if T == 0:
        return
    S = 2 * L + 1
    for t in range(T):
        for c in range(C):
            grad[t, n, c] = NEG_INF
    for s in range(S):
        beta[T - 1, s] = NEG_INF
    beta[T - 1, S - 1] = lp[T - 1, n, blank]
    grad[T - 1, n, blank] = alpha[T - 1, S - 1] + beta[T - 1, S - 1]
    if L > 0:
        last = targets[off + L - 1]
        beta[T - 1, S - 2] = lp[T - 1, n, last]
        grad[T - 1, n, last] = alpha[T - 1, S - 2] + beta[T - 1, S - 2]
    for t in range(T - 2, -1, -1):
        for s in range(S - 1, -1, -1):
            cur = _label(targets, off, s, blank)
            b1 = beta[t + 1, s]
            b2 = beta[t + 1, s + 1] if s < S - 1 else NEG_INF
            b3 = NEG_INF
            if s < S - 2 and _label(targets, off, s + 2, blank) != cur:
                b3 = beta[t + 1, s + 2]
            beta[t, s] = _lse3(b1, b2, b3) + lp[t, n, cur]
            ab = alpha[t, s] + beta[t, s]
            acc = grad[t, n, cur]
            if acc == NEG_INF:
                grad[t, n, cur] = ab
            else:
                m = max(acc, ab)
                grad[t, n, cur] = math.log(math.exp(acc - m) + math.exp(ab - m)) + m
    for t in range(T):
        for c in range(C):
            v = lp[t, n, c]
            grad[t, n, c] = (math.exp(v) - math.exp(grad[t, n, c] + nll - v)) * gout
