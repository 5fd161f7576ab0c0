"""PyTorch's repr of sparse tensors: the index and value tensors, then size, nnz, dtype,
layout and autograd suffixes, e.g.

    tensor(indices=tensor([[0, 1],
                           [1, 0]]),
           values=tensor([1., 2.]),
           size=(2, 2), nnz=2, layout=torch.sparse_coo)
"""
from .. import _dtype
from .._tensor_str import PRINT_OPTS, render_values

__all__ = ["sparse_repr"]

_INDENT = len("tensor(")


def _part(name, t, indent):
    """``name=tensor([...])`` with continuation lines under the first value; an empty
    tensor shows its size, as PyTorch's does."""
    prefix = f"{name}=tensor("
    body = render_values(t.detach()._host(), t.dtype, indent + len(prefix))
    if t.numel() == 0:
        body += f", size={tuple(t.shape)}"
    return prefix + body + ")"


def sparse_repr(t):
    if t.is_sparse:
        parts = [("indices", t._idx), ("values", t._vals)]
    else:
        parts = [("crow_indices", t._crow), ("col_indices", t._col), ("values", t._vals)]
    body = (",\n" + " " * _INDENT).join(_part(n, x, _INDENT) for n, x in parts)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    suffixes += [f"size={tuple(t.shape)}", f"nnz={t._nnz()}"]
    if t.dtype not in (_dtype.get_default_dtype(), _dtype.int64, _dtype.bool):
        suffixes.append(f"dtype={t.dtype}")
    suffixes.append(f"layout={t.layout}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes("tensor(" + body, suffixes, force_newline=t.is_sparse)


def _add_suffixes(text, suffixes, force_newline):
    """PyTorch's rule: a suffix goes on a new line where it would pass the line width;
    COO's first one always does."""
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if force_newline or last + len(s) + 2 > PRINT_OPTS["linewidth"]:
            parts.append(",\n" + " " * _INDENT + s)
            last, force_newline = _INDENT + len(s), False
        else:
            parts.append(", " + s)
            last += len(s) + 2
    return "".join(parts) + ")"
