"""``torch.functional``: the module where PyTorch defines a few torch-level functions
(einsum, split, meshgrid, norm, unique, ...); here they are nbtorch's own, re-exported
(imported lazily, after nbtorch itself)."""
import nbtorch as _nb

_NAMES = ("atleast_1d", "atleast_2d", "atleast_3d", "align_tensors", "broadcast_shapes",
          "broadcast_tensors", "cartesian_prod", "block_diag", "cdist", "chain_matmul",
          "einsum", "istft", "lu", "norm", "meshgrid", "pca_lowrank", "split", "stft",
          "svd_lowrank", "tensordot", "unique", "unique_consecutive", "unravel_index")

__all__ = [n for n in _NAMES if hasattr(_nb, n)]
globals().update({n: getattr(_nb, n) for n in __all__})
