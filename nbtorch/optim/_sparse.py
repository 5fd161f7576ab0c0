"""Sparse (COO) gradients in the optimizers, as PyTorch handles them.

A sparse gradient touches some rows of its parameter (e.g. the looked-up rows
of an ``nn.Embedding(sparse=True)``). SGD, Adagrad and SparseAdam update only
those rows; the other optimizers refuse such gradients with PyTorch's
RuntimeError. Rows are read and written by advanced indexing on the dense
state, after coalescing (each index once: the updates are not linear).
"""
__all__ = ["sparse_rows", "adagrad_sparse_update", "sparse_adam_update"]


def sparse_rows(grad):
    """``(index, values)`` of a coalesced sparse gradient: ``index`` is a tuple of
    index tensors (one per sparse dim) that selects the touched entries of a dense
    tensor, ``values`` their gradient."""
    g = grad.coalesce()
    return tuple(g.indices()), g.values()


def adagrad_sparse_update(param, grad, state_sum, clr, eps):
    """PyTorch's sparse Adagrad: for the touched entries only,
    ``sum += g^2; p -= clr * g / (sqrt(sum) + eps)``."""
    index, g = sparse_rows(grad)
    total = state_sum[index] + g * g
    state_sum[index] = total
    param[index] = param[index] - clr * (g / (total.sqrt() + eps))


def sparse_adam_update(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps):
    """PyTorch's SparseAdam (lazy Adam) on the touched entries:
    ``m += (1 - b1)(g - m)``, ``v += (1 - b2)(g^2 - v)``,
    ``p -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)``."""
    index, g = sparse_rows(grad)
    if g.numel() == 0:
        return
    old_m, old_v = exp_avg[index], exp_avg_sq[index]
    m_update = (g - old_m) * (1 - beta1)
    v_update = (g * g - old_v) * (1 - beta2)
    exp_avg[index] = old_m + m_update
    exp_avg_sq[index] = old_v + v_update
    numer = m_update + old_m
    denom = (v_update + old_v).sqrt() + eps
    step_size = lr * (1 - beta2 ** step) ** 0.5 / (1 - beta1 ** step)
    param[index] = param[index] + (-step_size) * (numer / denom)
