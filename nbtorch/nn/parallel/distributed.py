"""`nn.parallel.DistributedDataParallel`: needs a process group, which nbtorch does not
have yet (distributed training is planned on MPI, see DESIGN.md). Constructing one
raises a RuntimeError saying so, instead of an AttributeError at import time."""
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    """Raises: nbtorch has no ``torch.distributed`` process group yet."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, **kwargs):
        raise RuntimeError(
            "DistributedDataParallel needs torch.distributed: Default process group has not "
            "been initialized, and nbtorch has no distributed training yet (no "
            "init_process_group). Train in one process (nn.DataParallel splits a batch over "
            "the CUDA devices of one machine), or use PyTorch for multi-process training.")
