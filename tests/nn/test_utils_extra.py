"""nn.utils: conv/linear-BN fusion, conv weight memory formats, skip_init,
clip_grads_with_norm_, stateless.NamedMemberAccessor."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
from nbtorch.nn.utils.stateless import NamedMemberAccessor


def _trained_bn(bn, x):
    bn(x)
    with nbtorch.no_grad():
        bn.weight.uniform_(0.5, 2)
        bn.bias.uniform_(-1, 1)
    return bn.eval()


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_matches_the_pair(transpose):
    conv = (nn.ConvTranspose2d(3, 4, 3) if transpose else nn.Conv2d(3, 4, 3)).double().eval()
    x = nbtorch.randn(2, 3, 6, 6, dtype=nbtorch.float64)
    bn = _trained_bn(nn.BatchNorm2d(4).double(), conv(x))
    fused = nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(),
                               atol=1e-12)
    assert isinstance(fused.weight, nn.Parameter) and fused is not conv
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        nn.utils.fuse_conv_bn_eval(conv.train(), bn)


def test_fuse_linear_bn_matches_the_pair():
    lin = nn.Linear(5, 4, bias=False).double().eval()
    x = nbtorch.randn(8, 5, dtype=nbtorch.float64)
    bn = _trained_bn(nn.BatchNorm1d(4).double(), lin(x))
    fused = nn.utils.fuse_linear_bn_eval(lin, bn)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(lin(x)).detach().numpy(),
                               atol=1e-12)
    with pytest.raises(AssertionError, match="To fuse, linear.out_features == bn.num_features"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(5, 3).eval(), bn)


def test_memory_format_skip_init_and_clip_grads_with_norm():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Sequential(nn.Conv2d(4, 2, 1)), nn.Linear(2, 2))
    w = model[0].weight.detach().numpy().copy()
    nn.utils.convert_conv2d_weight_memory_format(model, nbtorch.channels_last)
    assert model[0].weight.is_contiguous(memory_format=nbtorch.channels_last)
    assert model[1][0].weight.is_contiguous(memory_format=nbtorch.channels_last)
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), w)
    m = nn.utils.skip_init(nn.Linear, 5, 3, bias=True)
    assert m.weight.shape == (3, 5) and isinstance(m.weight, nn.Parameter)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        nn.utils.skip_init(int)
    p = nn.Parameter(nbtorch.ones(4))
    p.grad = nbtorch.full((4,), 3.0)
    total = nn.utils.get_total_norm([p.grad])
    nn.utils.clip_grads_with_norm_([p], 1.0, total)
    np.testing.assert_allclose(p.grad.numpy(), 3.0 / (6.0 + 1e-6), rtol=1e-6)


def test_named_member_accessor():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    acc = NamedMemberAccessor(model)
    assert acc.get_submodule("1") is model[1]
    new = nbtorch.zeros(3, 2)
    old = acc.swap_tensor("0.weight", new)
    assert model[0].weight is new and old.shape == (3, 2)
    acc.set_tensors(["0.bias", "1.running_mean"], [nbtorch.ones(3), nbtorch.ones(3)])
    assert model[1].running_mean.sum().item() == 3
    missing, unexpected = acc.check_keys(["0.weight", "foo"])
    assert "0.bias" in missing and unexpected == ["foo"]
    orig, miss = acc.swap_tensors_dict({"0.weight": old})
    assert miss == [] and orig["0.weight"] is new and model[0].weight is old
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        acc.get_submodule("nope")
    with pytest.raises(TypeError, match="is not an instance of torch.Tensor"):
        acc.set_tensor("0.weight", 3)
