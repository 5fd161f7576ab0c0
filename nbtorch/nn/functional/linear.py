"""`linear` and `bilinear`: the affine maps behind nn.Linear and nn.Bilinear."""
import nbtorch as torch
from nbtorch._registry import get_kernel
from nbtorch._tensor import empty
from nbtorch.autograd.function import Function, unrecorded
from nbtorch.ops.linalg import add_rows_, mm_nt, mm_tn, small_blas_product

__all__ = ["linear", "bilinear"]


class Addmm(Function):
    """x (N, in) @ w.T + b as one node (PyTorch's AddmmBackward0 for nn.Linear).

    The weight gradient is computed as g.T @ x, already in w's (out, in)
    layout: a fresh contiguous tensor that `.grad` takes without a copy (going
    through `w.t()`'s view node would hand back a transposed view to copy).
    """

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None,
                              w if ctx.needs_input_grad[0] else None)
        if x.dtype.is_half:         # product and bias added in float32, rounded once
            work = x.dtype.compute
            return torch.mm(x.to(work), w.t().to(work)).add_(b.to(work)).to(x.dtype)
        return add_rows_(mm_nt(x, w), b)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (g.mm(w) if need[0] else None, mm_tn(g, x) if need[1] else None,
                g.sum(0) if need[2] else None)


def _plain_affine(input, weight, bias):
    """True for the case `Addmm` covers: 2-D input, (out, in) weight, (out,) bias, one
    dtype and device (anything else takes the general path and its error messages)."""
    si, sw, sb = input._shape, weight._shape, bias._shape
    if len(si) != 2 or len(sw) != 2 or len(sb) != 1:
        return False
    (_, k), (n, k2), (n2,) = si, sw, sb
    d = input.device
    return (k == k2 and n == n2 and input.dtype is weight.dtype is bias.dtype
            and input.dtype.is_floating_point
            and (weight.device is d or weight.device == d)
            and (bias.device is d or bias.device == d))


def _folded(input, weight, bias):
    """linear over (..., in) as one 2-D product on (prod(...), in), as PyTorch folds it:
    the weight gradient is then one GEMM over all rows, not a product per leading index
    summed afterwards."""
    lead = tuple(input.shape[:-1])
    rows = 1
    for s in lead:
        rows *= s
    out = linear(input.reshape(rows, input.shape[-1]), weight, bias)
    return out.reshape(lead + (weight.shape[0],))


def _cpu_affine(input, weight, bias):
    """Addmm's forward on the CPU with nothing to record (`unrecorded` has held): the
    matmul kernel into a fresh tensor, the bias added into its array (what `mm_nt` and
    `add_rows_` do, a few Python calls fewer: 8x16 @ 16x16 + 16 ~0.5 us of ~6)."""
    out = empty((input._shape[0], weight._shape[0]), input.dtype, input.device)
    a = out._arr
    if not small_blas_product(input, weight, a, True):
        get_kernel("matmul", "cpu")(input._array, weight._array.T, a)
    a += bias._array
    return out


def linear(input, weight, bias=None):
    """y = input @ weight.T + bias over the last dimension of `input`.

    Example:
        >>> F.linear(torch.randn(4, 3), torch.randn(2, 3)).shape
        torch.Size([4, 2])
    """
    if len(input._shape) == 2 and bias is not None:
        if _plain_affine(input, weight, bias):
            if unrecorded(input, weight, bias) and not input.dtype.is_half:
                if input.device.type == "cpu":
                    return _cpu_affine(input, weight, bias)
                return add_rows_(mm_nt(input, weight), bias)   # Addmm's forward, no node
            return Addmm.apply(input, weight, bias)
        return torch.addmm(bias, input, weight.t())
    if input.dim() > 2 and weight.dim() == 2 and input.shape[-1] == weight.shape[1]:
        return _folded(input, weight, bias)
    if bias is not None and input.dtype.is_half and input.dtype is weight.dtype is bias.dtype:
        work = input.dtype.compute  # product and bias added in float32, rounded once
        out = torch.matmul(input.to(work), weight.t().to(work)) + bias.to(work)
        return out.to(input.dtype)
    out = torch.matmul(input, weight.t())
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    """y[..., k] = input1 @ weight[k] @ input2 + bias[k].

    `input1` is (..., in1), `input2` (..., in2), `weight` (out, in1, in2).
    """
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} "
                           f"and {input2.dim()}")
    for d in range(input1.dim() - 1):
        if input1.shape[d] != input2.shape[d]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {d}: "
                               f"got {input1.shape[d]} and {input2.shape[d]}")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # (B, in1) @ (in1, out*in2) -> (B, out, in2), then contract in2 with x2.
    w = weight.permute(1, 0, 2).reshape(in1, out_f * in2)
    y = (torch.matmul(x1, w).reshape(-1, out_f, in2) * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(tuple(lead) + (out_f,))
