"""Lazy modules (LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm*, LazyInstanceNorm*)
and UninitializedParameter/UninitializedBuffer: shape inference on the first call, the
class they become, state dicts both ways, device/dtype moves, PyTorch's weights for a seed."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn

CASES = [  # (constructor, PyTorch's class name it becomes, input shape)
    (lambda m: m.LazyLinear(4), "Linear", (3, 5)),
    (lambda m: m.LazyConv1d(4, 3), "Conv1d", (3, 6)),
    (lambda m: m.LazyConv2d(4, 3, groups=2, padding=1), "Conv2d", (2, 6, 5, 5)),
    (lambda m: m.LazyConv3d(2, 2, bias=False), "Conv3d", (1, 3, 3, 3, 3)),
    (lambda m: m.LazyConvTranspose1d(4, 3, stride=2), "ConvTranspose1d", (2, 3, 5)),
    (lambda m: m.LazyConvTranspose2d(2, 3, output_padding=1, stride=2), "ConvTranspose2d",
     (1, 3, 3, 3)),
    (lambda m: m.LazyConvTranspose3d(2, 2), "ConvTranspose3d", (1, 2, 2, 2, 2)),
    (lambda m: m.LazyBatchNorm1d(), "BatchNorm1d", (4, 3)),
    (lambda m: m.LazyBatchNorm2d(momentum=None), "BatchNorm2d", (2, 3, 4, 4)),
    (lambda m: m.LazyBatchNorm3d(bias=False), "BatchNorm3d", (2, 3, 2, 2, 2)),
    (lambda m: m.LazyInstanceNorm1d(), "InstanceNorm1d", (2, 3, 5)),
    (lambda m: m.LazyInstanceNorm2d(affine=False), "InstanceNorm2d", (2, 3, 4, 4)),
    (lambda m: m.LazyInstanceNorm3d(), "InstanceNorm3d", (1, 2, 3, 3, 3)),
]


@pytest.mark.parametrize("make, becomes, shape", CASES)
def test_lazy_module_against_torch(make, becomes, shape):
    torch = pytest.importorskip("torch")
    nbtorch.manual_seed(3)
    torch.manual_seed(3)
    ours, theirs = make(nn), make(torch.nn)
    assert repr(ours) == repr(theirs)
    assert ours.has_uninitialized_params()
    assert [type(v).__name__ for v in ours.state_dict().values()] == \
        [type(v).__name__ for v in theirs.state_dict().values()]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    yo, yt = ours(nbtorch.tensor(x)), theirs(torch.tensor(x))
    assert type(ours).__name__ == type(theirs).__name__ == becomes
    assert repr(ours) == repr(theirs)
    np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-4, atol=1e-5)
    for (k, v), (k2, v2) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert k == k2 and type(v) is nbtorch.Tensor
        np.testing.assert_allclose(v.numpy(), v2.numpy(), rtol=1e-5, atol=1e-6)   # same seed
    assert all(type(p) is nn.Parameter for p in ours.parameters())


def test_lazy_linear_without_torch_dtype_and_hooks():
    m = nn.LazyLinear(3).double()
    assert isinstance(m.weight, nn.UninitializedParameter) and m.weight.dtype == nbtorch.float64
    assert repr(m.weight) == "<UninitializedParameter>"
    y = m(nbtorch.randn(2, 7, dtype=nbtorch.float64))
    assert type(m) is nn.Linear and m.in_features == 7 and y.dtype == nbtorch.float64
    assert not hasattr(m, "_initialize_hook") and not m._forward_pre_hooks
    y.sum().backward()
    assert m.weight.grad.shape == (3, 7)


def test_lazy_modules_load_state_dict_both_ways():
    full = nn.Conv2d(6, 4, 3, groups=2)
    lazy = nn.LazyConv2d(4, 3, groups=2)
    lazy.load_state_dict(full.state_dict())
    assert not lazy.has_uninitialized_params() and lazy.in_channels == 6
    x = nbtorch.randn(1, 6, 5, 5)
    np.testing.assert_array_equal(lazy(x).detach().numpy(), full(x).detach().numpy())
    assert type(lazy) is nn.Conv2d
    bn = nn.LazyBatchNorm1d()
    bn.load_state_dict(nn.BatchNorm1d(5).state_dict())
    assert bn.num_features == 5 and type(bn.running_mean) is nbtorch.Tensor
    fresh = nn.LazyLinear(2)
    fresh.load_state_dict(nn.LazyLinear(2).state_dict())      # both still lazy
    assert fresh.has_uninitialized_params()


def test_uninitialized_placeholders_and_errors():
    p = nn.UninitializedParameter(requires_grad=False)
    p.materialize((2, 3), dtype=nbtorch.float64)
    assert type(p) is nn.Parameter and p.shape == (2, 3) and not p.requires_grad
    b = nn.UninitializedBuffer()
    b.materialize(4)
    assert b.shape == (4,) and not isinstance(b, nn.UninitializedBuffer)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input "
                                           r"to LazyConv2d, but got input of size"):
        nn.LazyConv2d(4, 3)(nbtorch.randn(5, 5))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(nbtorch.randn(1, 3, 5, 5))
