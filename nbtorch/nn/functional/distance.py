"""Distances between vectors: cosine_similarity, pairwise_distance, pdist."""
import nbtorch as torch

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 . x2 / max(|x1| |x2|, eps) along `dim` (inputs broadcast).

    Example:
        >>> F.cosine_similarity(torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 1.0]]))
        tensor([0.7071])
    """
    dot = (x1 * x2).sum(dim)
    norms = ((x1 * x1).sum(dim) * (x2 * x2).sum(dim)).sqrt()
    return dot / norms.clamp(min=eps)


def _p_norm(diff, p, dim, keepdim):
    a = diff.abs()
    if p == float("inf"):
        return a.amax(dim, keepdim=keepdim)
    if p == 1:
        return a.sum(dim, keepdim=keepdim)
    if p == 2:
        return (a * a).sum(dim, keepdim=keepdim).sqrt()
    return (a ** p).sum(dim, keepdim=keepdim) ** (1.0 / p)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """|x1 - x2 + eps|_p over the last dimension."""
    return _p_norm(x1 - x2 + eps, p, -1, keepdim)


def pdist(input, p=2):
    """Distances between all row pairs i < j of an (N, M) input, as a 1-D tensor."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    n = input.shape[0]
    rows = [i for i in range(n) for j in range(i + 1, n)]
    cols = [j for i in range(n) for j in range(i + 1, n)]
    if not rows:
        return input.new_zeros(0) if hasattr(input, "new_zeros") else \
            torch.zeros(0, dtype=input.dtype, device=input.device)
    idx_r = torch.tensor(rows, device=input.device)
    idx_c = torch.tensor(cols, device=input.device)
    return _p_norm(input[idx_r] - input[idx_c], p, -1, False)
