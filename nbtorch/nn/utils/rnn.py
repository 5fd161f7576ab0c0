"""Variable-length sequences: padding (`pad_sequence`, `unpad_sequence`) and packing
(`PackedSequence`, `pack_padded_sequence`, `pad_packed_sequence`, `pack_sequence`,
`unpack_sequence`), which RNN, LSTM and GRU accept as input.

A PackedSequence holds the time steps one after the other, each with only the
sequences still running (sorted longest first): ``data`` (sum of lengths, *),
``batch_sizes`` (T,) int64 on the CPU, and the sort permutation and its inverse.
Packing and unpacking are index gathers/scatters, so gradients flow through them.
"""
from typing import NamedTuple

import numpy as np

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence", "bind"]


class PackedSequence_(NamedTuple):
    data: object
    batch_sizes: object
    sorted_indices: object
    unsorted_indices: object


def bind(optional, fn):
    """fn(optional), or None for None."""
    if optional is None:
        return None
    return fn(optional)


class PackedSequence(PackedSequence_):
    """A batch of variable-length sequences packed time step by time step (see module doc).

    Build one with `pack_padded_sequence` or `pack_sequence`, not directly.
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError("batch_sizes should always be on CPU. Instances of "
                                 "PackedSequence should never be created manually. They should "
                                 "be instantiated by functions like pack_sequence and "
                                 "pack_padded_sequences in nn.utils.rnn. "
                                 "https://pytorch.org/docs/stable/nn.html"
                                 "#torch.nn.utils.rnn.pack_sequence")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        data, batch_sizes = data                     # PackedSequence((data, batch_sizes))
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """The same sequence with ``data`` (and the index tensors' device) moved/cast."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = lambda t: t.to(data.device)           # noqa: E731
        return type(self)(data, self.batch_sizes, bind(self.sorted_indices, move),
                          bind(self.unsorted_indices, move))

    def cuda(self, *args, **kwargs):
        return self.to(*args, device="cuda", **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to(*args, device="cpu", **kwargs)

    def _cast(self, dtype):
        return self.to(dtype=dtype)

    def double(self):
        from ... import float64
        return self._cast(float64)

    def float(self):
        from ... import float32
        return self._cast(float32)

    def half(self):
        from ... import float16
        return self._cast(float16)

    def long(self):
        from ... import int64
        return self._cast(int64)

    def int(self):
        from ... import int32
        return self._cast(int32)

    def short(self):
        from ... import int16
        return self._cast(int16)

    def char(self):
        from ... import int8
        return self._cast(int8)

    def byte(self):
        from ... import uint8
        return self._cast(uint8)

    def pin_memory(self):
        return self

    @property
    def is_cuda(self):
        return self.data.device.type == "cuda"

    def is_pinned(self):
        return False


def invert_permutation(permutation):
    """The inverse of a 1-D permutation tensor (None stays None)."""
    if permutation is None:
        return None
    from ... import arange, empty_like
    out = empty_like(permutation)
    return out.scatter_(0, permutation, arange(permutation.numel(), device=permutation.device))


def _host_lengths(lengths):
    from ..._tensor import Tensor
    if isinstance(lengths, Tensor):
        if lengths.device.type != "cpu" or lengths.dim() != 1:
            raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.dim()}D {lengths.device.type} "
                               f"{str(lengths.dtype).replace('torch.', '')} tensor")
        return lengths.numpy().astype(np.int64)
    return np.asarray(lengths, dtype=np.int64).reshape(-1)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (or (B, T, *)) of sequences of the given lengths.

    Example:
        >>> x = torch.tensor([[1, 2, 3], [4, 5, 0]])
        >>> pack_padded_sequence(x, [3, 2], batch_first=True).data
        tensor([1, 4, 2, 5, 3])
    """
    from ... import tensor
    lens = _host_lengths(lengths)
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        order = None
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
    if lens.size and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    x = input.transpose(0, 1) if batch_first else input
    B = x.shape[1]
    if lens.size != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lens.size} (batch_size={B})")
    if lens.size and lens[0] > x.shape[0]:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to the "
                           f"maximum length {lens[0]}, got {x.shape[0]}")
    sorted_indices = None
    if order is not None:
        sorted_indices = tensor(order, device=input.device)
        x = x.index_select(1, sorted_indices)
    T = int(lens[0]) if lens.size else 0
    batch_sizes = (lens[None, :] > np.arange(T)[:, None]).sum(1).astype(np.int64)
    rows = np.concatenate([t * B + np.arange(n) for t, n in enumerate(batch_sizes)]) \
        if T else np.zeros(0, np.int64)
    flat = x[:T].reshape((T * B,) + tuple(x.shape[2:]))
    data = flat.index_select(0, tensor(rows, device=input.device))
    return PackedSequence(data, tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Unpack a PackedSequence into (padded (T, B, *) or (B, T, *), lengths (B,) int64).

    Example:
        >>> packed = pack_sequence([torch.ones(3), torch.ones(2)])
        >>> pad_packed_sequence(packed, batch_first=True)[1]
        tensor([3, 2])
    """
    from ... import tensor, zeros
    data, bs = sequence.data, sequence.batch_sizes.numpy().astype(np.int64)
    T, B = bs.size, int(bs[0]) if bs.size else 0
    if total_length is not None:
        if total_length < T:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {T}")
    else:
        total_length = T
    rows = np.concatenate([t * B + np.arange(n) for t, n in enumerate(bs)]) \
        if T else np.zeros(0, np.int64)
    rows_t = tensor(rows, device=data.device)
    feat = tuple(data.shape[1:])
    out = zeros((total_length * B,) + feat, dtype=data.dtype, device=data.device)
    out = out.index_add(0, rows_t, data)
    if padding_value != 0:
        pad = np.ones(total_length * B, bool)
        pad[rows] = False
        mask = tensor(pad.reshape((-1,) + (1,) * len(feat)), device=data.device)
        out = out.masked_fill(mask, padding_value)
    out = out.reshape((total_length, B) + feat)
    lengths = (bs[None, :] > np.arange(B)[:, None]).sum(1).astype(np.int64)
    if sequence.unsorted_indices is not None:
        out = out.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu().numpy()]
    if batch_first:
        out = out.transpose(0, 1)
    return out, tensor(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shape (L_i, *) into (L_max, B, *) (or (B, L_max, *)), padded.

    Example:
        >>> pad_sequence([torch.ones(2), torch.ones(3)], batch_first=True)
        tensor([[1., 1., 0.],
                [1., 1., 1.]])
    """
    from ... import cat, full, stack
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', but got {padding_side}")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        extra = max_len - s.shape[0]
        if extra:
            fill = full((extra,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype,
                        device=s.device)
            parts = [s, fill] if padding_side == "right" else [fill, s]
            s = cat(parts, 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded batch back into the list of its unpadded sequences."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences, lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of (L_i, *) tensors (longest first unless enforce_sorted=False)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of (L_i, *) tensors a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
