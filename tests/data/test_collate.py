"""default_collate / default_convert: structure, dtypes, and errors for bad batches."""
import collections

import numpy as np
import pytest

import nbtorch
from nbtorch.utils.data import collate, default_collate, default_convert

Point = collections.namedtuple("Point", ["x", "y"])


def test_tensors_are_stacked():
    batch = default_collate([nbtorch.tensor([1.0, 2.0]), nbtorch.tensor([3.0, 4.0])])
    assert isinstance(batch, nbtorch.Tensor)
    assert batch.shape == (2, 2) and batch.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_numpy_arrays_become_tensors_of_their_dtype():
    batch = default_collate([np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32)])
    assert batch.dtype == nbtorch.int32 and batch.shape == (2, 3)
    scalars = default_collate([np.float32(1.5), np.float32(2.5)])
    assert scalars.dtype == nbtorch.float32 and scalars.tolist() == [1.5, 2.5]


def test_python_numbers_get_pytorch_dtypes():
    assert default_collate([1.5, 2.0]).dtype == nbtorch.float64
    assert default_collate([1, 2]).dtype == nbtorch.int64
    flags = default_collate([True, False])
    assert flags.dtype == nbtorch.bool and flags.tolist() == [True, False]


def test_strings_pass_through():
    assert default_collate(["a", "b"]) == ["a", "b"]


def test_dicts_tuples_and_namedtuples():
    samples = [{"image": np.zeros(2), "label": 1, "name": "a"},
               {"image": np.ones(2), "label": 0, "name": "b"}]
    batch = default_collate(samples)
    assert set(batch) == {"image", "label", "name"}
    assert batch["image"].tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert batch["label"].tolist() == [1, 0] and batch["name"] == ["a", "b"]

    xs, ys = default_collate([(1.0, 2), (3.0, 4)])
    assert xs.tolist() == [1.0, 3.0] and ys.tolist() == [2, 4]
    assert isinstance(default_collate([(1, 2), (3, 4)]), list)  # as PyTorch: tuple -> list

    points = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(points, Point)
    assert points.x.tolist() == [1, 3] and points.y.dtype == nbtorch.float64


def test_nested_lists_are_transposed():
    batch = default_collate([[1, [2.0]], [3, [4.0]]])
    assert batch[0].tolist() == [1, 3] and batch[1][0].tolist() == [2.0, 4.0]


def test_unequal_tensor_sizes_are_a_clear_error():
    with pytest.raises(RuntimeError, match=r"equal size.*\[2\] at entry 0 and \[3\] at entry 1"):
        default_collate([nbtorch.zeros(2), nbtorch.zeros(3)])


def test_unequal_sequence_lengths_are_a_clear_error():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])


def test_unsupported_types_are_a_clear_error():
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays, numbers"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_collate_with_a_custom_type_map():
    class Box:
        def __init__(self, v):
            self.v = v

    def collate_boxes(batch, *, collate_fn_map=None):
        return sum(box.v for box in batch)

    batch = collate([(Box(1), 2), (Box(5), 3)], collate_fn_map={Box: collate_boxes, int: lambda b, **k: b})
    assert batch == [6, (2, 3)]             # the zip tuple, as PyTorch passes it


def test_default_convert_converts_without_batching():
    converted = default_convert({"a": np.arange(3), "b": (np.float64(2.0), "s"), "p": Point(np.zeros(1), 1)})
    assert isinstance(converted["a"], nbtorch.Tensor) and converted["a"].tolist() == [0, 1, 2]
    assert isinstance(converted["b"], list) and converted["b"][0].item() == 2.0
    assert converted["b"][1] == "s"
    assert isinstance(converted["p"], Point) and isinstance(converted["p"].x, nbtorch.Tensor)
    tensor = nbtorch.zeros(2)
    assert default_convert(tensor) is tensor and default_convert(3) == 3


def test_tensors_that_require_grad_are_stacked_differentiably():
    a, b = nbtorch.ones(2, requires_grad=True), nbtorch.zeros(2, requires_grad=True)
    batch = default_collate([a, b])
    assert batch.requires_grad
    batch.backward(nbtorch.ones(2, 2))
    assert a.grad.tolist() == [1.0, 1.0]


def test_stacked_batch_does_not_alias_the_samples():
    sample = nbtorch.zeros(3)
    batch = default_collate([sample, sample])
    batch.numpy()[0, 0] = 5.0
    assert sample.tolist() == [0.0, 0.0, 0.0]


def test_unequal_numpy_shapes_and_unsupported_numpy_dtypes():
    with pytest.raises(RuntimeError, match=r"equal size.*\[2\] at entry 0 and \[1\] at entry 1"):
        default_collate([np.zeros(2), np.zeros(1)])
    # uint16 is a tensor dtype now (PyTorch 2.13 collates it too); strings are not
    assert default_collate([np.zeros(2, np.uint16), np.zeros(2, np.uint16)]).dtype == \
        nbtorch.uint16
    with pytest.raises(TypeError, match="<U1"):
        default_collate([np.array(["a"]), np.array(["b"])])


def test_numbers_led_by_an_int_or_bool_take_the_inferred_dtype():
    """PyTorch's torch.tensor(batch): a later float is not cut to an int (a DataLoader's
    targets [3, 2.5] came back as [3, 2])."""
    for batch, dtype, values in (([2, 1.5], nbtorch.float32, [2.0, 1.5]),
                                 ([True, 2], nbtorch.int64, [1, 2]),
                                 ([True, 0.5], nbtorch.float32, [1.0, 0.5]),
                                 ([True, False], nbtorch.bool, [True, False]),
                                 ([1, 2], nbtorch.int64, [1, 2])):
        out = default_collate(batch)
        assert out.dtype is dtype and out.tolist() == values
    assert default_collate([(1, "a"), (2, "b")])[1] == ("a", "b")
