"""torch.autograd.profiler: PyTorch's older profiler API, over `nbtorch.profiler`.

``with torch.autograd.profiler.profile() as prof:`` and ``record_function`` are what
older PyTorch code and many tutorials use; here they are nbtorch.profiler's, with the
legacy keyword arguments accepted (``use_cuda``/``use_device``: CUDA kernels are always
recorded, synchronized; the others as in `nbtorch.profiler.profile`).
"""
from ..profiler.profiler import profile as _profile, record_function

__all__ = ["profile", "record_function"]


class profile(_profile):
    """`nbtorch.profiler.profile` with ``torch.autograd.profiler.profile``'s arguments."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False,
                 with_modules=False, use_kineto=False, use_cpu=True, **kwargs):
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, enabled=enabled)
