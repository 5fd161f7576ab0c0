"""Sequence helpers: `pad_sequence` and `unpad_sequence` (batching variable lengths)."""
__all__ = ["pad_sequence", "unpad_sequence"]


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
