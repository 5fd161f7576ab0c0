"""Distances between vectors: cosine_similarity, pairwise_distance, pdist."""
import nbtorch as torch
from nbtorch.ops.distance_cosine import cosine_composite, cosine_similarity_rows
from nbtorch.ops.reduction import dtype_label as _dtype_label

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps)) along `dim` (inputs broadcast), as
    PyTorch 2.x: each vector scaled by its norm first, the clamp invisible to autograd (a
    zero vector gets finite gradients, not NaN).

    Example:
        >>> F.cosine_similarity(torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 1.0]]))
        tensor([0.7071])
    """
    common = torch.result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{_dtype_label(common)}")
    shape = torch.broadcast_shapes(x1.shape, x2.shape)     # norms of the broadcast inputs
    x1, x2 = (x if x.shape == shape and x.dtype is common else x.to(common).expand(shape)
              for x in (x1, x2))
    if isinstance(dim, int) and -len(shape) <= dim < len(shape):
        return cosine_similarity_rows(x1, x2, dim % len(shape), eps)   # fused on the CPU
    return cosine_composite(x1, x2, dim, eps)


def _p_norm(diff, p, dim, keepdim):
    """The p-norm over `dim` (vector_norm: its gradient is 0 at a zero distance, as
    PyTorch's, where sqrt(sum(d^2)) gave NaN)."""
    return torch.linalg.vector_norm(diff, p, dim, keepdim=keepdim)


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
