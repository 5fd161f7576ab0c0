"""Tensor API behaviour a sweep against PyTorch 2.13 found different: NumPy operands,
dtype inference of tensor(), Python type dtypes, complex casts and samples."""
import numpy as np
import pytest

import nbtorch


def test_numpy_operands_give_tensors_with_their_graph():
    x = nbtorch.ones(2, requires_grad=True)
    y = np.float64(2.0) * x                     # an ndarray without a graph before
    assert isinstance(y, nbtorch.Tensor) and y.grad_fn is not None
    assert isinstance(np.float32(1.0) < nbtorch.arange(3.0), nbtorch.Tensor)
    for got in (nbtorch.ones(2) + np.ones(2), np.ones(2) + nbtorch.ones(2),
                np.ones(2) - nbtorch.ones(2), np.ones(2) / nbtorch.full((2,), 2.0)):
        assert isinstance(got, nbtorch.Tensor) and got.dtype is nbtorch.float64
    t = nbtorch.zeros(3)
    a = np.array(t)
    a[0] = 5                                    # wrote into the tensor before
    assert t.tolist() == [0.0, 0.0, 0.0]


def test_tensor_infers_the_promoted_dtype_of_its_elements():
    assert nbtorch.tensor([nbtorch.tensor(1.5), 2]).tolist() == [1.5, 2.0]   # int64 before
    assert nbtorch.tensor([nbtorch.tensor(1.5, dtype=nbtorch.float64), 2]).dtype is \
        nbtorch.float64
    assert nbtorch.tensor([np.float64(2.5), 1.0]).dtype is nbtorch.float64
    assert nbtorch.tensor([np.int32(2)]).dtype is nbtorch.int32
    assert nbtorch.tensor([nbtorch.tensor(1 + 1j), 2]).dtype is nbtorch.complex64
    assert nbtorch.ones(2, dtype=float).dtype is nbtorch.float64     # float32 before
    assert nbtorch.ones(2, dtype=complex).dtype is nbtorch.complex128


def test_complex_casts_and_samples():
    x = nbtorch.tensor([2j, 0j, 1 + 0j])
    assert x.bool().tolist() == [True, False, True]   # the imaginary part was dropped
    assert nbtorch.logical_not(x).tolist() == [False, True, False]
    fixed = nbtorch.nan_to_num(nbtorch.tensor([complex(float("nan"), float("inf"))]))
    assert fixed.real.item() == 0.0 and fixed.imag.item() > 1e38
    nbtorch.manual_seed(0)
    z = nbtorch.randn(3, dtype=nbtorch.complex64)   # imaginary parts were 0
    nbtorch.manual_seed(0)
    pairs = nbtorch.randn(6) / 2 ** 0.5
    assert nbtorch.allclose(nbtorch.view_as_real(z).flatten(), pairs)
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    want = torch.randn(3, dtype=torch.complex64)
    np.testing.assert_allclose(z.numpy(), want.numpy(), rtol=1e-6)


def test_tensor_split_repeat_interleave_and_print_profiles():
    x = nbtorch.arange(8)
    assert [t.tolist() for t in x.tensor_split(nbtorch.tensor([1, 5]))] == \
        [[0], [1, 2, 3, 4], [5, 6, 7]]                          # ValueError before
    assert len(x.tensor_split(nbtorch.tensor(3))) == 3
    assert [t.tolist() for t in x.tensor_split([5, 2])] == [[0, 1, 2, 3, 4], [],
                                                           [2, 3, 4, 5, 6, 7]]
    assert [t.tolist() for t in x.tensor_split([-2])] == [[0, 1, 2, 3, 4, 5], [6, 7]]
    assert nbtorch.repeat_interleave(nbtorch.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    assert nbtorch.tensor([1, 2]).repeat_interleave(nbtorch.tensor([1, 3]),
                                                    output_size=4).tolist() == [1, 2, 2, 2]
    try:
        nbtorch.set_printoptions(profile="full")
        assert "..." not in repr(nbtorch.arange(2000))
    finally:
        nbtorch.set_printoptions(profile="default")
    assert "..." in repr(nbtorch.arange(2000))


def test_tensor_and_asarray_inputs():
    assert nbtorch.tensor(range(4)).tolist() == [0, 1, 2, 3]
    assert nbtorch.tensor(memoryview(b"ab")).tolist() == [97, 98]
    assert nbtorch.tensor([np.ones(2), np.zeros(2)]).dtype is nbtorch.float64
    a = np.ones(3)
    t = nbtorch.asarray(a, copy=True)
    t[0] = 5
    assert a[0] == 1.0                                  # copy= was a TypeError
    shared = nbtorch.as_tensor(a, dtype=nbtorch.float64)
    shared[1] = 7
    assert a[1] == 7.0                                  # the array's own dtype: shared
    assert nbtorch.asarray([1.0, 2.0], requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="copy=False"):
        nbtorch.asarray(a, dtype=nbtorch.float32, copy=False)
