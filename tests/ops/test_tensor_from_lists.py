"""torch.tensor from lists of plain Python numbers (the set-of-types inference) and the
collate of tensors through nbtorch.stack: the dtypes, values and errors of the general
paths, and PyTorch's where it is installed."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch.ops import creation
from nbtorch.utils.data import default_collate

CASES = [
    [1, 2, 3], [1.0, 2, 3], [True, False], [True, 2], [True, 2.5], [], [[], []],
    [[1, 2], [3, 4]], ((1, 2), (3, 4)), [[1, 2.0], [3, 4]], [[[1], [2]], [[3], [4]]],
    [[True], [False]], (5,), [0] * 64, list(range(100)), [float(i) / 3 for i in range(64)],
    [-(1 << 62), 1 << 62], [1e39, -1e39], [float("nan"), float("inf")], [[1, 2], (3, 4)],
]
FALLBACK = [
    [np.float64(1.0), 2], [np.int32(3), 4], [1 + 2j, 3], [1, [2]], [torch.tensor(1.5), 2],
    [1, None],
]


@pytest.mark.parametrize("data", CASES, ids=repr)
def test_plain_numbers_infer_like_the_general_walk(data):
    fast = creation._plain_numbers_dtype(data)
    assert fast is creation._infer_dtype(data)
    t = torch.tensor(data)
    assert t.dtype is fast
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(t.numpy(), np.array(data, dtype=fast.np))


@pytest.mark.parametrize("data", FALLBACK, ids=repr)
def test_other_data_takes_the_general_walk(data):
    assert creation._plain_numbers_dtype(data) is None


def test_default_dtype_and_explicit_dtype():
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.tensor([1.5, 2]).dtype is torch.float64
        assert torch.tensor([1, 2]).dtype is torch.int64
    finally:
        torch.set_default_dtype(torch.float32)
    t = torch.tensor([1, 2, 3], dtype=torch.float16)
    assert t.dtype is torch.float16 and t.tolist() == [1.0, 2.0, 3.0]
    assert torch.tensor([[1, 2]], dtype=torch.int8).dtype is torch.int8


def test_errors_unchanged():
    with pytest.raises(ValueError):
        torch.tensor([[1, 2], [3]])                      # ragged
    with pytest.raises(ValueError, match="Overflow"):
        torch.tensor([1 << 70])
    with pytest.raises(RuntimeError, match="Could not infer dtype of NoneType"):
        torch.tensor([1, None])
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        torch.tensor(["a"])


def test_matches_pytorch():
    th = pytest.importorskip("torch")
    for data in CASES:
        ours, theirs = torch.tensor(data), th.tensor(data)
        assert str(ours.dtype) == str(theirs.dtype), data
        assert tuple(ours.shape) == tuple(theirs.shape)


def test_collate_of_tensors_is_a_stack():
    batch = [torch.randn(1, 4, 4) for _ in range(8)]
    out = default_collate(batch)
    assert out.shape == (8, 1, 4, 4) and out.is_contiguous()
    np.testing.assert_array_equal(out.numpy(), np.stack([t.numpy() for t in batch]))
    out.add_(1.0)                                       # its own memory
    assert not np.array_equal(out[0].numpy(), batch[0].numpy())
    pairs = default_collate([(torch.ones(2), 3), (torch.zeros(2), 4)])
    assert pairs[1].dtype is torch.int64 and pairs[1].tolist() == [3, 4]
    with pytest.raises(RuntimeError, match=r"equal size, but got \[2\] at entry 0 and \[3\] "
                                           r"at entry 1"):
        default_collate([torch.ones(2), torch.ones(3)])
    g = [torch.ones(2, requires_grad=True), torch.ones(2)]
    assert default_collate(g).requires_grad
