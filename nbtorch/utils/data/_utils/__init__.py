"""PyTorch's ``torch.utils.data._utils`` import paths (``_utils.collate`` is where
PyTorch's documentation imports ``collate`` and ``default_collate_fn_map`` from)."""
from nbtorch.utils.data._utils import collate  # noqa: F401
