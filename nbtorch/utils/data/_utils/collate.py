"""``torch.utils.data._utils.collate``: the collate functions under PyTorch's names.

Example:
    >>> from nbtorch.utils.data._utils.collate import collate, default_collate_fn_map
    >>> table = {**default_collate_fn_map, str: lambda batch, *, collate_fn_map: "|".join(batch)}
    >>> collate([("a", 1), ("b", 2)], collate_fn_map=table)[0]
    'a|b'
"""
from nbtorch.utils.data.collate import (  # noqa: F401
    _collate_floats as collate_float_fn, _collate_ints as collate_int_fn,
    _collate_numpy_arrays as collate_numpy_array_fn,
    _collate_numpy_scalars as collate_numpy_scalar_fn, _collate_strings as collate_str_fn,
    _collate_tensors as collate_tensor_fn, collate, default_collate, default_collate_fn_map,
    default_convert,
)

import re  # noqa: E402

np_str_obj_array_pattern = re.compile(r"[SaUO]")
default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, "
                                  "numbers, dicts or lists; found {}")
