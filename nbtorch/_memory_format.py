"""`torch.memory_format`: contiguous_format, channels_last (NHWC), channels_last_3d (NDHWC),
preserve_format, and the strides each one means for a shape.

A memory format only decides the strides of a new tensor (nbtorch's kernels take any
strides); `strides_for` is the one place that turns a format into strides.
"""
__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d",
           "preserve_format", "legacy_contiguous_format", "strides_for", "is_format",
           "check_format", "infer_dense_strides", "sorted_dims", "strides_in_order",
           "is_plain"]


class memory_format:
    """A tensor memory layout (PyTorch's `torch.memory_format`)."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name

    def __reduce__(self):
        return self._name               # pickled as the module attribute


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = contiguous_format

_ORDER = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


def check_format(op, fmt):
    """`fmt` itself, or TypeError naming `op` when it is no memory format."""
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(fmt).__name__}")
    return fmt


def _dense(shape, order):
    """Strides of a dense layout whose dims, slowest to fastest, are `order`."""
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def non_overlapping_and_dense(shape, strides):
    """True when the elements of (shape, strides) fill a buffer of numel exactly once."""
    dims = sorted((s, n) for n, s in zip(shape, strides) if n != 1)
    expected = 1
    for s, n in dims:
        if s != expected:
            return False
        expected *= n
    return True


def is_plain(t):
    """True when tensor `t` has exactly the C-contiguous strides of its shape, so that
    preserve_format and contiguous_format give a copy of it the same layout."""
    layout = _LAYOUT[0]
    if layout is None:              # _tensor imports this module: bound on first use, not
        from ._tensor import _layout as layout      # per call (~0.3 us)
        _LAYOUT[0] = layout
    return t._strides == layout(t._shape)[1]


_LAYOUT = [None]


def strides_in_order(shape, fastest_first):
    """Dense strides whose dims, fastest first, are `fastest_first`."""
    strides = [0] * len(shape)
    step = 1
    for d in fastest_first:
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def sorted_dims(shape, operand_strides):
    """The dims of `shape`, fastest first, ordered by the strides of the operands (lists of
    full-rank strides): PyTorch's `reorder_dimensions`, an insertion sort in which a
    stride-0 (broadcast) dim gives no opinion, equal strides put the smaller dim first,
    and the first operand with an opinion decides."""
    ndim = len(shape)

    def should_swap(d0, d1):
        for strides in operand_strides:
            s0, s1 = strides[d0], strides[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                return -1
            if s0 > s1:
                return 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm


def infer_dense_strides(shape, strides):
    """Dense strides in the dim order of (shape, strides): what `preserve_format` gives a
    copy of a tensor that is not dense (PyTorch's `infer_dense_strides`)."""
    return strides_in_order(shape, sorted_dims(shape, [strides]))


def strides_for(shape, fmt, like=None):
    """The strides a new tensor of `shape` gets in format `fmt` (None: contiguous).

    preserve_format keeps the strides of `like` when it is dense and non-overlapping
    and its dim order otherwise (as PyTorch's *_like, clone and to do).
    """
    shape = tuple(shape)
    if fmt is None or fmt is contiguous_format:
        return _dense(shape, range(len(shape)))
    if fmt is preserve_format:
        if like is not None and tuple(like._shape) == shape:
            if non_overlapping_and_dense(shape, like._strides):
                return tuple(like._strides)
            return infer_dense_strides(shape, like._strides)
        return _dense(shape, range(len(shape)))
    rank, order = _ORDER[fmt]
    if len(shape) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt._name} format")
    return _dense(shape, order)


def is_format(shape, strides, fmt):
    """Whether (shape, strides) is laid out in `fmt` (size-1 dims may have any stride)."""
    if fmt in _ORDER:
        rank, order = _ORDER[fmt]
        if len(shape) != rank:
            return False
    else:
        order = range(len(shape))
    expected = 1
    for d in reversed(tuple(order)):
        if shape[d] != 1 and strides[d] != expected:
            return False
        expected *= shape[d]
    return True
