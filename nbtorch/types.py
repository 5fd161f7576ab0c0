"""``torch.types``: the type aliases PyTorch's annotations use."""
import builtins
from typing import List, Sequence, Tuple, Union

from ._device import device as _device
from ._dtype import dtype as _dtype
from ._tensor import Size, Tensor

__all__ = ["Number", "Device", "Storage", "FileLike", "_TensorOrTensors", "_int", "_float",
           "_bool", "_complex", "_dtype", "_device", "_size", "IntLikeType",
           "FloatLikeType", "BoolLikeType", "PySymType", "py_sym_types"]

_int, _float, _bool, _complex = builtins.int, builtins.float, builtins.bool, builtins.complex
Number = Union[_int, _float, _bool]
Device = Union[_device, str, _int, None]
_size = Union[Size, List[_int], Tuple[_int, ...]]
_TensorOrTensors = Union[Tensor, Sequence[Tensor]]
IntLikeType = _int
FloatLikeType = _float
BoolLikeType = _bool
PySymType = Union[_int, _float, _bool]
py_sym_types = (_int, _float, _bool)
FileLike = Union[str, "os.PathLike[str]", "typing.IO[bytes]"]


def __getattr__(name):
    if name == "Storage":
        from .storage import UntypedStorage
        return UntypedStorage
    raise AttributeError(f"module 'nbtorch.types' has no attribute '{name}'")
