"""Nested tensors (``torch.nested``): B components of different lengths as one tensor.

The jagged layout (``layout=torch.jagged``, "NJT") is the primary one, as in PyTorch: a
`NestedTensor` of shape ``(B, ..., j1, ...)`` with one ragged dim whose size is a symbolic
nested int (``j1``), stored as one ``values`` tensor (the components end to end along the
ragged dim) plus int64 ``offsets`` (B+1) and optional ``lengths``. The strided nested
layout (the default of ``nested_tensor``, which PyTorch calls a prototype) keeps the
component list: constructors, ``unbind``, ``to_padded_tensor`` and per-component ops.

Why ``__torch_function__``: a nested tensor is a `Tensor` subclass (``isinstance(x,
torch.Tensor)``, ``requires_grad``, ``.grad``, hooks and the engine work unchanged) whose
``__torch_function__`` (``_dispatch.py``) sees every public op and Tensor method called on
it: ``torch.exp(nt)``, ``F.linear(nt, w)`` inside ``nn.Linear``, ``F.layer_norm``,
``F.scaled_dot_product_attention``, ``nt + dense``, ``nt.sum(1)``. Most nested ops are "run
the op on the values", so one table keyed by op name covers the public functions and the
methods alike, with no change to nn or to the ops, and an op missing from the table fails
with a NotImplementedError naming it and the layout instead of reading garbage. Explicit
methods would leave ``torch.*`` and ``F.*`` calls (which nn modules make) unhandled.
The cost: defining this class switches the protocol on for the process (see
``_torch_function.py``), so after ``import nbtorch.nested`` each public function call on
plain tensors pays the protocol's argument check, 0.2-0.4 us on the 2-core machine
(torch.add of two 4-element tensors 1.6 -> 1.9 us, F.relu 1.9 -> 2.1 us), as for any
Tensor subclass; operators and methods of plain tensors pay nothing. ``torch.nested`` is
a lazy submodule, so programs that never touch it pay nothing.

Modules: ``_int.py`` (the nested int ``j1``), ``_tensor.py`` (the jagged class, the
autograd bridges between values and nested tensor), ``_build.py`` (constructors),
``_dispatch.py`` (the op table, elementwise ops, casts), ``_reduce.py`` (sums, means,
softmax), ``_shape.py`` (transpose, unsqueeze, cat, indexing...), ``_ops.py`` (padding,
linear, norms, attention), ``_strided.py`` (the strided layout).

Not there: nested @ nested matmul, attention masks and ``is_causal`` on nested inputs
(PyTorch refuses them too), ``nn.MultiheadAttention``/``TransformerEncoderLayer`` on nested
inputs (PyTorch 2.13 refuses the jagged layout on CPU; its strided layout's inference fast
path is not reproduced), ``nbtorch.save`` of nested tensors (pickle, ``copy`` and
``deepcopy`` work), conversion between the two layouts, nested tensors with more than one
ragged dim in the jagged layout. CUDA values work through the ordinary CUDA ops (checked
on the simulator), with no kernel of their own.

Example:
    >>> nt = nbtorch.nested.nested_tensor([nbtorch.ones(2, 3), nbtorch.ones(4, 3)],
    ...                                   layout=nbtorch.jagged)
    >>> nt.shape
    torch.Size([2, j1, 3])
    >>> nt.sum(1).shape
    torch.Size([2, 3])
"""
from ._build import (as_nested_tensor, masked_select, narrow, nested_tensor,
                     nested_tensor_from_jagged, to_padded_tensor)
from ._int import NestedInt
from ._strided import NestedStridedTensor
from ._tensor import NestedTensor
from . import _dispatch  # noqa: F401  (the op table)

__all__ = ["nested_tensor", "as_nested_tensor", "nested_tensor_from_jagged",
           "to_padded_tensor", "narrow", "masked_select", "NestedTensor",
           "NestedStridedTensor", "NestedInt"]
