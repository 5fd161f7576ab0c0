"""Constructors: ``nested_tensor``, ``as_nested_tensor``, ``nested_tensor_from_jagged``,
``narrow`` and ``masked_select`` (jagged layout, and the strided layout's list form)."""
import warnings

import numpy as np

from .._tensor import Tensor
from ._tensor import from_values, make_njt

__all__ = ["nested_tensor", "as_nested_tensor", "nested_tensor_from_jagged", "narrow",
           "masked_select", "to_padded_tensor"]


def _layouts():
    from .._torch_extras import jagged, strided
    return jagged, strided


def _check_layout(layout):
    jagged, strided = _layouts()
    if layout is None:
        return strided
    if layout is not jagged and layout is not strided:
        raise RuntimeError(f"Specified layout is unsupported for nested tensors: {layout}")
    return layout


def _offsets_of(lengths, device):
    import nbtorch
    o = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=o[1:])
    return nbtorch.tensor(o, device=device)


def _check_list(ts):
    if len(ts) == 0:
        raise RuntimeError("Cannot construct a nested tensor from an empty tensor list")
    if any(t.dim() == 0 for t in ts):
        raise RuntimeError("Cannot construct a nested tensor from a list of zero-dim tensors")
    if any(t.dim() != ts[0].dim() for t in ts):
        raise RuntimeError("When constructing a nested tensor, all tensors in list must have "
                           "the same dim")
    if any(t.dtype is not ts[0].dtype for t in ts):
        raise RuntimeError("When constructing a nested tensor, all tensors in list must have "
                           "the same dtype")


def jagged_from_list(ts):
    """(values, offsets, ragged_idx) of components `ts`: the ragged dim is the one dim whose
    sizes differ (dim 1 of the nested tensor when none does); values keep the graph."""
    import nbtorch
    _check_list(ts)
    shapes = [tuple(t._shape) for t in ts]
    differ = [d for d in range(len(shapes[0])) if len({s[d] for s in shapes}) > 1]
    if len(differ) > 1:
        raise RuntimeError("Cannot represent given tensor list as a nested tensor with the "
                           "jagged layout. Note that the jagged layout only allows for a "
                           "single ragged dimension. For example: (B, *, D_0, D_1, ..., D_N),"
                           " with ragged * dim.")
    d = differ[0] if differ else 0
    values = ts[0] if len(ts) == 1 else nbtorch.cat(list(ts), d)
    return values, _offsets_of([s[d] for s in shapes], ts[0].device), d + 1


def _as_tensor(t, dtype, device):
    import nbtorch
    if isinstance(t, Tensor):
        return t.to(dtype=dtype or t.dtype, device=device or t.device)
    return nbtorch.tensor(t, dtype=dtype, device=device)


def nested_tensor(tensor_list, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """``torch.nested.nested_tensor``: a nested tensor holding copies of the components
    (tensors or nested lists), a leaf outside any graph.

    Example:
        >>> nt = nbtorch.nested.nested_tensor([nbtorch.ones(2, 3), nbtorch.ones(4, 3)],
        ...                                   layout=nbtorch.jagged)
        >>> nt.shape
        torch.Size([2, j1, 3])
    """
    import nbtorch
    layout = _check_layout(layout)
    with nbtorch.no_grad():
        ts = [_as_tensor(t, dtype, device).detach() for t in tensor_list]
        if layout is _layouts()[1]:
            from ._strided import make_strided
            _strided_warning()
            out = make_strided([t.clone() for t in ts])
        else:
            values, offsets, r = jagged_from_list(ts)
            out = make_njt(values.clone() if values is ts[0] else values, offsets=offsets,
                           ragged_idx=r)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _strided_warning():
    warnings.warn("The PyTorch API of nested tensors is in prototype stage and will change in "
                  "the near future. We recommend specifying layout=torch.jagged when "
                  "constructing a nested tensor, as this layout receives active development,"
                  " has better operator coverage, and works with torch.compile.", UserWarning,
                  stacklevel=3)


def as_nested_tensor(ts, dtype=None, device=None, layout=None):
    """``torch.nested.as_nested_tensor``: like `nested_tensor`, but the components stay in
    the autograd graph (a tensor of shape (B, L, ...) becomes B components of length L)."""
    import nbtorch
    layout = _check_layout(layout)
    jagged, strided = _layouts()
    if isinstance(ts, Tensor):
        if getattr(ts, "is_nested", False):
            if ts.layout is not layout:
                raise RuntimeError("as_nested_tensor(): converting between nested layouts "
                                   "is not supported by nbtorch")
            return ts.to(dtype=dtype or ts.dtype, device=device or ts.device)
        if ts.dim() < 2:
            raise RuntimeError("as_nested_tensor(): Expected tensor argument to have dim() "
                               "> 1")
        ts = _as_tensor(ts, dtype, device)
        if layout is jagged:
            b, n = ts._shape[0], ts._shape[1]
            offsets = nbtorch.arange(0, b * n + 1, max(n, 1), device=ts.device) if n else \
                nbtorch.zeros(b + 1, dtype=nbtorch.int64, device=ts.device)
            return from_values(ts.flatten(0, 1), offsets=offsets, ragged_idx=1)
        ts = list(ts.unbind(0))
    elif not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError("as_nested_tensor(): Expected first argument to be a tensor or a "
                        "list / tuple of tensors ")
    ts = [_as_tensor(t, dtype, device) for t in ts]
    if layout is strided:
        from ._strided import from_components
        _strided_warning()
        _check_list(ts)
        return from_components(ts)
    values, offsets, r = jagged_from_list(ts)
    return from_values(values, offsets=offsets, ragged_idx=r)


def nested_tensor_from_jagged(values, offsets=None, lengths=None, jagged_dim=None,
                              min_seqlen=None, max_seqlen=None):
    """``torch.nested.nested_tensor_from_jagged``: a jagged nested tensor viewing `values`
    (the graph kept) with component i at rows ``offsets[i]:offsets[i+1]`` (or
    ``offsets[i]:offsets[i]+lengths[i]``) of dim `jagged_dim` - 1 (default 1)."""
    import nbtorch
    if offsets is None:
        if lengths is None:
            raise RuntimeError("nested_tensor_from_jagged(): At least one of offsets or "
                               "lengths is required.")
        offsets = _offsets_of(lengths.cpu().numpy().astype(np.int64), values.device)
        lengths = None
    r = 1 if jagged_dim is None else int(jagged_dim)
    if not 1 <= r <= values.dim():
        raise RuntimeError(f"nested_tensor_from_jagged(): jagged_dim={jagged_dim} is out of "
                           f"range for values of dim {values.dim()}")
    if offsets.dim() != 1 or offsets._shape[0] < 1:
        raise RuntimeError("nested_tensor_from_jagged(): expected offsets to be a 1D tensor "
                           "of B + 1 entries")
    offsets = offsets.to(nbtorch.int64)
    if lengths is not None:
        lengths = lengths.to(nbtorch.int64)
    out = from_values(values, offsets=offsets, lengths=lengths, ragged_idx=r)
    if min_seqlen is not None:
        out.__dict__["_min_seqlen_given"] = int(min_seqlen)
    if max_seqlen is not None:
        out.__dict__["_max_seqlen_given"] = int(max_seqlen)
    return out


def _per_batch(x, b, name):
    import nbtorch
    if isinstance(x, Tensor):
        x = x.to(nbtorch.int64).reshape(-1)
        if x._shape[0] != b:
            raise RuntimeError(f"narrow(): expected {name} to have {b} entries, got "
                               f"{x._shape[0]}")
        return x
    return nbtorch.full((b,), int(x), dtype=nbtorch.int64)


def narrow(tensor, dim, start, length, layout=None):
    """``torch.nested.narrow``: component i is ``tensor[i, start_i:start_i + length_i]``
    (starts and lengths ints or tensors), a jagged view of `tensor` (with holes)."""
    import nbtorch
    jagged, strided = _layouts()
    layout = _check_layout(layout)
    if layout is strided:
        if dim != 0:
            raise RuntimeError(f"narrow(): only dim=0 supported for nested tensors, but got: "
                               f"{dim}")
        if isinstance(start, Tensor) or isinstance(length, Tensor):
            raise RuntimeError("narrow(): start and length must be ints for the strided "
                               "layout")
        return as_nested_tensor(tensor.narrow(0, start, length))
    if dim != 1:
        raise RuntimeError("jagged layout only supports dim=1")
    b, n = tensor._shape[0], tensor._shape[1]
    start = _per_batch(start, b, "start")
    length = _per_batch(length, b, "length")
    s, ln = start.cpu().numpy(), length.cpu().numpy()
    if (s < 0).any() or (ln < 0).any() or (s + ln > n).any():
        raise RuntimeError(f"narrow(): start + length exceeds dimension size ({n})")
    o = np.append(s + np.arange(b) * n, (s[-1] + ln[-1] + (b - 1) * n) if b else 0)
    offsets = nbtorch.tensor(o.astype(np.int64), device=tensor.device)
    return from_values(tensor.flatten(0, 1), offsets=offsets, lengths=length.to(tensor.device),
                       ragged_idx=1)


def masked_select(tensor, mask):
    """``torch.nested.masked_select``: one component per row of `tensor` (its last dim made
    ragged): the entries of that row where `mask` (broadcast to `tensor`) is True."""
    mask = mask.expand(tensor.shape) if tuple(mask._shape) != tuple(tensor._shape) else mask
    values = tensor.masked_select(mask)
    counts = mask.reshape(-1, tensor._shape[-1] if tensor.dim() else 1).sum(-1)
    offsets = _offsets_of(counts.cpu().numpy().astype(np.int64), tensor.device)
    return from_values(values, offsets=offsets, ragged_idx=1)


def to_padded_tensor(input, padding, output_size=None):
    """``torch.nested.to_padded_tensor``: `input`'s components padded and stacked."""
    return input.to_padded_tensor(padding, output_size)


def _rebuild_njt(values, offsets, lengths, ragged_idx, requires_grad):
    """Unpickling: a jagged nested tensor from its parts."""
    t = make_njt(values, offsets=offsets, lengths=lengths, ragged_idx=ragged_idx)
    if requires_grad:
        t.requires_grad_(True)
    return t
