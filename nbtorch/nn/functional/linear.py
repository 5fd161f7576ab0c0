"""`linear` and `bilinear`: the affine maps behind nn.Linear and nn.Bilinear."""
import nbtorch as torch

__all__ = ["linear", "bilinear"]


def linear(input, weight, bias=None):
    """y = input @ weight.T + bias over the last dimension of `input`.

    Example:
        >>> F.linear(torch.randn(4, 3), torch.randn(2, 3)).shape
        torch.Size([4, 2])
    """
    if input.dim() == 2 and bias is not None:
        return torch.addmm(bias, input, weight.t())
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
