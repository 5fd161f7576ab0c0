"""`flex_attention`: scaled dot-product attention with a user's score and mask functions.

PyTorch's FlexAttention takes ``score_mod(score, b, h, q_idx, kv_idx)`` and
``mask_mod(b, h, q_idx, kv_idx)`` written for one score, and a `BlockMask`
recording which (query block, key block) tiles are computed: partial tiles apply
the mask_mod, full tiles skip it, tiles not listed are masked out. PyTorch vmaps the
mods over scalars; here they are called once with broadcast index tensors
(``b`` of shape (B,1,1,1), ``h`` (1,H,1,1), ``q_idx`` (1,1,L,1), ``kv_idx`` (1,1,1,S),
int32), which gives the same values for mods written with tensor ops (arithmetic,
comparisons, ``torch.where``, indexing a table with the indices) and lets autograd flow
through them. The attention itself is the math path over the materialised (B,H,L,S)
scores (what PyTorch runs eagerly too); the block structure decides what is masked,
not what is skipped, so ``kernel_options`` are accepted and ignored.
"""
import math
from typing import NamedTuple, Optional

import numpy as np

from ... import _dtype
from ..._tensor import Tensor

__all__ = ["BlockMask", "flex_attention", "create_block_mask", "create_mask", "and_masks",
           "or_masks", "noop_mask", "AuxRequest", "AuxOutput"]

_DEFAULT_SPARSE_BLOCK_SIZE = 128


class AuxRequest(NamedTuple):
    """Which auxiliary outputs `flex_attention` returns (``return_aux=``)."""
    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """Auxiliary outputs of `flex_attention`: None where not requested."""
    lse: Optional[Tensor] = None
    max_scores: Optional[Tensor] = None


# -- mask functions --------------------------------------------------------------------------

def noop_mask(batch, head, token_q, token_kv):
    """A mask_mod that keeps every score."""
    return batch.new_ones((), dtype=_dtype.bool)


def _noop_score(score, batch, head, token_q, token_kv):
    return score


def and_masks(*mask_mods):
    """A mask_mod keeping a score where every one of `mask_mods` keeps it."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b, h, q_idx, kv_idx):
        result = b.new_ones((), dtype=_dtype.bool)
        for mod in mask_mods:
            result = result & mod(b, h, q_idx, kv_idx)
        return result
    return and_mask


def or_masks(*mask_mods):
    """A mask_mod keeping a score where any one of `mask_mods` keeps it."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b, h, q_idx, kv_idx):
        result = b.new_zeros((), dtype=_dtype.bool)
        for mod in mask_mods:
            result = result | mod(b, h, q_idx, kv_idx)
        return result
    return or_mask


def _index_grids(B, H, L, S, device):
    """The broadcast int32 index tensors a mod is called with."""
    import nbtorch
    ar = lambda n: nbtorch.arange(n, dtype=_dtype.int32, device=device)  # noqa: E731
    return (ar(B).view(B, 1, 1, 1), ar(H).view(1, H, 1, 1), ar(L).view(1, 1, L, 1),
            ar(S).view(1, 1, 1, S))


def _takes_score(mod):
    """True for a score_mod (five parameters), False for a mask_mod (four)."""
    import inspect
    try:
        params = inspect.signature(mod).parameters.values()
    except (TypeError, ValueError):
        return False
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return False
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
               for p in params) == 5


def _apply_mask_mod(mask_mod, B, H, L, S, device):
    """mask_mod over the whole (B, H, L, S) grid, as a bool tensor."""
    value = mask_mod(*_index_grids(B, H, L, S, device))
    if not isinstance(value, Tensor):
        import nbtorch
        value = nbtorch.tensor(bool(value), device=device)
    return value.to(_dtype.bool).expand(B, H, L, S)


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device=None):
    """The dense (B, H, Q_LEN, KV_LEN) result of a mask_mod (bool) or score_mod (applied to
    zero scores); B or H None means 1."""
    import nbtorch
    B, H = B or 1, H or 1
    if _takes_score(mod_fn):
        score = nbtorch.zeros(B, H, Q_LEN, KV_LEN, device=device)
        return mod_fn(score, *_index_grids(B, H, Q_LEN, KV_LEN, score.device)).expand(
            B, H, Q_LEN, KV_LEN)
    return _apply_mask_mod(mod_fn, B, H, Q_LEN, KV_LEN, device)


# -- block masks -----------------------------------------------------------------------------

def _dense_to_ordered(dense):
    """Per (b, h, row): how many blocks are set, and the set block indices first (ascending),
    then the others - PyTorch's layout of kv_indices / q_indices."""
    import nbtorch
    counts = dense.sum(-1).astype(np.int32)
    order = np.argsort(-dense, axis=-1, kind="stable").astype(np.int32)
    return nbtorch.from_numpy(counts), nbtorch.from_numpy(order)


def _ordered_to_dense(num_blocks, indices, n_cols):
    """The 0/1 (B, H, rows, n_cols) block matrix that (num_blocks, indices) lists."""
    num = num_blocks.cpu().numpy()
    idx = indices.cpu().numpy()
    dense = np.zeros(num.shape + (n_cols,), np.int32)
    take = np.arange(idx.shape[-1]) < num[..., None]
    b, h, r, k = np.nonzero(take)
    dense[b, h, r, idx[b, h, r, k]] = 1
    return dense


def _pair(block_size):
    if isinstance(block_size, int):
        return (block_size, block_size)
    if isinstance(block_size, (tuple, list)) and len(block_size) == 2:
        return tuple(int(b) for b in block_size)
    raise ValueError(f"BLOCK_SIZE must be an int or a pair of ints, got {block_size!r}")


class BlockMask:
    """Which (query block, key block) tiles of the score matrix attention computes.

    ``kv_num_blocks[b, h, i]`` / ``kv_indices[b, h, i, :]`` list the partial key blocks of
    query block i (the mask_mod decides inside them), ``full_kv_*`` the full ones (no
    mask_mod); ``q_*`` are the same by key block. Build it with `create_block_mask` or
    `BlockMask.from_kv_blocks`.
    """

    def __init__(self, seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks,
                 full_kv_indices, q_num_blocks, q_indices, full_q_num_blocks, full_q_indices,
                 BLOCK_SIZE, mask_mod):
        self.seq_lengths = tuple(seq_lengths)
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.q_num_blocks, self.q_indices = q_num_blocks, q_indices
        self.full_q_num_blocks, self.full_q_indices = full_q_num_blocks, full_q_indices
        self.BLOCK_SIZE = BLOCK_SIZE
        self.mask_mod = mask_mod if mask_mod is not None else noop_mask

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks, kv_indices, full_kv_num_blocks=None,
                       full_kv_indices=None, BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                       mask_mod=None, seq_lengths=None, compute_q_blocks=True, **_ignored):
        """A BlockMask from its key-block lists (the query-block lists are derived)."""
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise ValueError("full_kv_num_blocks and full_kv_indices must be both provided "
                             "or omitted")
        block = _pair(BLOCK_SIZE)
        n_q, n_kv = kv_indices.shape[-2], kv_indices.shape[-1]
        if seq_lengths is None:
            seq_lengths = (n_q * block[0], n_kv * block[1])
        q_lists = [None] * 4
        if compute_q_blocks:
            partial = _ordered_to_dense(kv_num_blocks, kv_indices, n_kv)
            q_lists[:2] = _dense_to_ordered(partial.swapaxes(-1, -2))
            if full_kv_num_blocks is not None:
                full = _ordered_to_dense(full_kv_num_blocks, full_kv_indices, n_kv)
                q_lists[2:] = _dense_to_ordered(full.swapaxes(-1, -2))
        return cls(seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                   *q_lists, block, mask_mod)

    @property
    def shape(self):
        return tuple(self.kv_indices.shape[:-2]) + self.seq_lengths

    def as_tuple(self, flatten=True):
        """The mask's tensors and block size, as PyTorch's ``as_tuple``."""
        block = tuple(self.BLOCK_SIZE) if flatten else (self.BLOCK_SIZE,)
        return (*self.seq_lengths, self.kv_num_blocks, self.kv_indices,
                self.full_kv_num_blocks, self.full_kv_indices, self.q_num_blocks,
                self.q_indices, self.full_q_num_blocks, self.full_q_indices, *block,
                self.mask_mod)

    def numel(self):
        """The number of elements of the (B, H, Q_LEN, KV_LEN) score matrix."""
        return int(np.prod(self.shape))

    def sparsity(self):
        """Percentage of the score matrix not computed, counted in whole blocks (as
        PyTorch's: negative when the blocks are larger than the sequence)."""
        computed = int(self.kv_num_blocks.sum().item())
        if self.full_kv_num_blocks is not None:
            computed += int(self.full_kv_num_blocks.sum().item())
        return 100 * (1 - computed * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1] / self.numel())

    def _dense_parts(self):
        n_kv = self.kv_indices.shape[-1]
        partial = _ordered_to_dense(self.kv_num_blocks, self.kv_indices, n_kv)
        full = (np.zeros_like(partial) if self.full_kv_num_blocks is None else
                _ordered_to_dense(self.full_kv_num_blocks, self.full_kv_indices, n_kv))
        return partial, full

    def to_dense(self):
        """The (B, H, query blocks, key blocks) int32 matrix of computed blocks."""
        import nbtorch
        partial, full = self._dense_parts()
        return nbtorch.from_numpy(partial | full).to(self.kv_indices.device)

    def to_string(self, grid_size=(20, 20), limit=4):
        """Each (b, h)'s block matrix drawn with block characters, at most `limit` of them."""
        dense = self.to_dense().cpu().numpy()
        shades = [" ", "░", "▒", "▓", "█"]
        rows, cols = dense.shape[-2:]
        step_r = max(1, math.ceil(rows / grid_size[0]))
        step_c = max(1, math.ceil(cols / grid_size[1]))
        blocks = []
        for n, (b, h) in enumerate(np.ndindex(*dense.shape[:2])):
            if n >= limit:
                blocks.append("...")
                break
            m = dense[b, h]
            rows_text = ["".join(shades[int(round(m[r:r + step_r, c:c + step_c].mean() *
                                                  (len(shades) - 1)))] * 2
                                 for c in range(0, cols, step_c))
                         for r in range(0, rows, step_r)]
            blocks.append("\n".join([f"{(b, h)}"] + rows_text))
        return "\n\n".join(blocks)

    def __str__(self):
        return (f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
                f"{self.to_string()}\n)")

    __repr__ = __str__

    def __getitem__(self, index):
        """Select batches, heads or query blocks (PyTorch's indexing of the kv lists)."""
        pick = lambda t: None if t is None else t[index]  # noqa: E731
        kv_num, kv_idx = self.kv_num_blocks[index], self.kv_indices[index]
        if kv_idx.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions after indexing")
        return BlockMask.from_kv_blocks(kv_num, kv_idx, pick(self.full_kv_num_blocks),
                                        pick(self.full_kv_indices), self.BLOCK_SIZE,
                                        self.mask_mod, self.seq_lengths)

    def to(self, device):
        """The mask with its tensors on `device`."""
        move = lambda t: None if t is None else t.to(device)  # noqa: E731
        return BlockMask(self.seq_lengths, *(move(t) for t in (
            self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
            self.full_kv_indices, self.q_num_blocks, self.q_indices,
            self.full_q_num_blocks, self.full_q_indices)), self.BLOCK_SIZE, self.mask_mod)

    def _adjust(self, new_q_len, new_kv_len):
        """The mask for shorter sequences: its first blocks, the same mask_mod."""
        n_q = math.ceil(new_q_len / self.BLOCK_SIZE[0])
        n_kv = math.ceil(new_kv_len / self.BLOCK_SIZE[1])
        partial, full = self._dense_parts()
        return _from_dense_blocks(partial[..., :n_q, :n_kv], full[..., :n_q, :n_kv],
                                  (new_q_len, new_kv_len), self.BLOCK_SIZE, self.mask_mod,
                                  self.kv_indices.device, self.full_kv_num_blocks is not None)

    def element_mask(self, B, H, L, S, device):
        """The (B, H, L, S) bool mask attention applies: full blocks, and the mask_mod
        inside partial blocks."""
        import nbtorch
        partial, full = self._dense_parts()
        bq, bkv = self.BLOCK_SIZE

        def expand(blocks):
            grid = np.repeat(np.repeat(blocks.astype(bool), bq, axis=-2), bkv, axis=-1)
            return np.broadcast_to(grid[..., :L, :S], (B, H, L, S))
        keep_full = nbtorch.from_numpy(np.ascontiguousarray(expand(full))).to(device)
        keep_partial = nbtorch.from_numpy(np.ascontiguousarray(expand(partial))).to(device)
        if not keep_partial.any().item():
            return keep_full
        return keep_full | (keep_partial & _apply_mask_mod(self.mask_mod, B, H, L, S, device))


def _from_dense_blocks(partial, full, seq_lengths, block, mask_mod, device, separate_full):
    """A BlockMask from 0/1 (B, H, query blocks, key blocks) partial and full matrices."""
    if not separate_full:
        partial, full = partial | full, None
    kv = _dense_to_ordered(partial)
    q = _dense_to_ordered(partial.swapaxes(-1, -2))
    kv_full = q_full = (None, None)
    if full is not None:
        kv_full = _dense_to_ordered(full)
        q_full = _dense_to_ordered(full.swapaxes(-1, -2))
    move = lambda t: None if t is None else t.to(device)  # noqa: E731
    tensors = [move(t) for t in (*kv, *kv_full, *q, *q_full)]
    return BlockMask(seq_lengths, *tensors, block, mask_mod)


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None,
                      BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE, _compile=False,
                      separate_full_blocks=True, **_ignored):
    """The BlockMask of `mask_mod` over (B, H, Q_LEN, KV_LEN) (B or H None: broadcast over
    it): blocks where the mask keeps everything are full, where it keeps something partial."""
    if _takes_score(mask_mod):
        raise AssertionError("create_block_mask expects a mask_mod (b, h, q_idx, kv_idx), "
                             "not a score_mod")
    block = _pair(BLOCK_SIZE)
    B, H = B or 1, H or 1
    dense = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device).cpu().numpy()
    n_q, n_kv = math.ceil(Q_LEN / block[0]), math.ceil(KV_LEN / block[1])
    padded = np.zeros((B, H, n_q * block[0], n_kv * block[1]), bool)
    padded[..., :Q_LEN, :KV_LEN] = dense
    tiles = padded.reshape(B, H, n_q, block[0], n_kv, block[1])
    any_kept = tiles.any(axis=(3, 5))
    full = tiles.all(axis=(3, 5))
    partial = (any_kept & ~full).astype(np.int32)
    import nbtorch
    target = nbtorch.device(device) if device is not None else nbtorch.get_default_device()
    return _from_dense_blocks(partial, full.astype(np.int32), (Q_LEN, KV_LEN), block,
                              mask_mod, target, separate_full_blocks)


# -- attention -------------------------------------------------------------------------------

def _check_inputs(query, key, value, enable_gqa):
    if not all(isinstance(t, Tensor) for t in (query, key, value)):
        raise TypeError("flex_attention expects query, key and value tensors")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    if not (query.device == key.device == value.device):
        raise ValueError("Expect query, key, and value to be on the same device, got "
                         f"{query.device}, {key.device} and {value.device}")
    if query.size(-1) != key.size(-1):
        raise ValueError("Expect query and key/value to have the same embedding dimension "
                         f"but got E={query.size(-1)} and E={key.size(-1)}.")
    if key.size(2) != value.size(2) or key.size(1) != value.size(1):
        raise ValueError(f"Expect key and value to have the same number of heads and sequence "
                         f"length but got {tuple(key.shape)} and {tuple(value.shape)}.")
    if not (query.size(0) == key.size(0) == value.size(0)):
        raise ValueError("Expect query, key, and value to have the same batch size but got "
                         f"Bq={query.size(0)}, Bk={key.size(0)} and Bv={value.size(0)}.")
    hq, hkv = query.size(1), key.size(1)
    if enable_gqa:
        if hq % hkv:
            raise ValueError("Expect number of query heads to be a multiple of kv heads for "
                             f"GQA but got Hq={hq} and Hkv={hkv}.")
    elif hq != hkv:
        raise ValueError("Expect query and key/value to have the same number of heads but got "
                         f"Hq={hq} and Hkv={hkv}. Try setting enable_gqa=True for GQA.")


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False, kernel_options=None, *,
                   return_aux=None):
    """softmax(score_mod(q k^T * scale) masked by `block_mask`) v over (B, H, L, E) inputs.

    Returns the (B, Hq, L, Ev) output; with ``return_lse=True`` also the (B, Hq, L)
    natural-log logsumexp of the kept scores (-inf, and a zero output row, where a row
    keeps none), with ``return_aux=AuxRequest(lse=, max_scores=)`` an `AuxOutput`.
    """
    import nbtorch
    _check_inputs(query, key, value, enable_gqa)
    if return_lse and return_aux is not None:
        raise ValueError("Cannot set both return_lse and return_aux; use "
                         "return_aux=AuxRequest(lse=True) instead")
    B, Hq, L, E = query.shape
    S = key.size(2)
    if block_mask is not None:
        if not isinstance(block_mask, BlockMask):
            raise TypeError(f"block_mask must be a BlockMask, got {type(block_mask).__name__}")
        if tuple(block_mask.seq_lengths) != (L, S):
            raise ValueError(
                f"block_mask was created for block_mask.shape={block_mask.shape} but got "
                f"q_len={L} and kv_len={S}. Create a new block mask with the correct lengths, "
                f"or adjust it with block_mask._adjust({L}, {S}).")
    dtype = nbtorch.promote_types(nbtorch.promote_types(query.dtype, key.dtype), value.dtype)
    work = _dtype.float32 if dtype in (_dtype.float16, _dtype.bfloat16) else dtype
    q, k, v = (t.to(work) for t in (query, key, value))
    if enable_gqa and Hq != key.size(1):
        k = k.repeat_interleave(Hq // key.size(1), dim=1)
        v = v.repeat_interleave(Hq // key.size(1), dim=1)
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = nbtorch.matmul(q, k.transpose(-2, -1)) * scale
    if score_mod is not None:
        scores = score_mod(scores, *_index_grids(B, Hq, L, S, scores.device))
        scores = scores.to(work).expand(B, Hq, L, S)
    if block_mask is not None:
        keep = block_mask.element_mask(B, Hq, L, S, scores.device)
        scores = scores.masked_fill(~keep, float("-inf"))
    row_max = scores.amax(-1, keepdim=True)
    shift = nbtorch.where(nbtorch.isinf(row_max), nbtorch.zeros_like(row_max), row_max).detach()
    weights = nbtorch.exp(scores - shift)
    total = weights.sum(-1, keepdim=True)
    safe_total = nbtorch.where(total == 0, nbtorch.ones_like(total), total)
    out = nbtorch.matmul(weights / safe_total, v).to(query.dtype)
    if not return_lse and return_aux is None:
        return out
    lse = (nbtorch.log(total) + shift).squeeze(-1)
    if return_lse:
        return out, lse
    if not isinstance(return_aux, AuxRequest):
        raise TypeError(f"return_aux must be an AuxRequest, got {type(return_aux).__name__}")
    return out, AuxOutput(lse if return_aux.lse else None,
                          row_max.squeeze(-1) if return_aux.max_scores else None)
