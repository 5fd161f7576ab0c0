"""Layers: forward against NumPy, gradients by gradcheck (float64), init statistics."""
import math
import re

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck
from harness import check_layer


def _t(a, requires_grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def _x(*shape, requires_grad=True, seed=0):
    rng = np.random.default_rng(seed)
    return _t(rng.standard_normal(shape), requires_grad)


# ---- Linear / Bilinear / Identity --------------------------------------------------

def test_linear_forward_matches_numpy():
    m = nn.Linear(3, 2)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    out = m(torch.from_numpy(x))
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), x @ w.T + b, rtol=1e-5, atol=1e-6)
    assert out.shape == (4, 2)


def test_linear_without_a_node_equals_the_recorded_one():
    """Inference (no_grad, or no tensor needing grad) skips Addmm's node: the same bits,
    nothing recorded; a non-contiguous input and a transposed weight too."""
    m = nn.Linear(6, 4)
    x = torch.randn(5, 6)
    recorded = m(x)
    assert recorded.grad_fn is not None
    with torch.no_grad():
        inferred = m(x)
    plain = F.linear(x, m.weight.detach(), m.bias.detach())
    for y in (inferred, plain):
        assert y.grad_fn is None and not y.requires_grad
        assert y.tolist() == recorded.tolist()
    xt = torch.randn(6, 5).t()
    wt = torch.randn(6, 4).t()
    np.testing.assert_allclose(F.linear(xt, wt, m.bias.detach()).numpy(),
                               xt.numpy() @ wt.numpy().T + m.bias.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_linear_nd_input_and_no_bias():
    m = nn.Linear(3, 5, bias=False)
    assert m.bias is None and [n for n, _ in m.named_parameters()] == ["weight"]
    x = np.random.default_rng(1).standard_normal((2, 4, 3)).astype(np.float32)
    out = m(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(out, x @ m.weight.detach().numpy().T, rtol=1e-5, atol=1e-6)


def test_linear_shape_error():
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        nn.Linear(3, 2)(torch.zeros(4, 5))


def test_linear_gradcheck():
    m = nn.Linear(3, 2).double()
    x = _x(4, 3)
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), (x, m.weight, m.bias))


def test_bilinear_forward_and_gradcheck():
    m = nn.Bilinear(3, 2, 4).double()
    x1, x2 = _x(5, 3, seed=1), _x(5, 2, seed=2)
    out = m(x1, x2).detach().numpy()
    ref = np.einsum("bi,kij,bj->bk", x1.detach().numpy(), m.weight.detach().numpy(),
                    x2.detach().numpy()) + m.bias.detach().numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-10)
    assert gradcheck(lambda a, b, w, c: F.bilinear(a, b, w, c),
                     (x1, x2, m.weight, m.bias))
    assert repr(m) == "Bilinear(in1_features=3, in2_features=2, out_features=4, bias=True)"


def test_identity_returns_input():
    x = torch.zeros(2)
    assert nn.Identity(54, unused="x")(x) is x


def test_linear_default_init_bounds():
    m = nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    # U(-bound, bound) has std bound / sqrt(3)
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound
    assert m.weight.dtype == torch.float32
    assert nn.Linear(2, 2, dtype=torch.float64).weight.dtype == torch.float64


# ---- activations ----------------------------------------------------------------

def _np_erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


ACTIVATIONS = [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    (nn.ELU(alpha=0.5), lambda x: np.where(x > 0, x, 0.5 * (np.exp(x) - 1))),
    (nn.GELU(), lambda x: 0.5 * x * (1 + _np_erf(x / math.sqrt(2)))),
    (nn.GELU(approximate="tanh"),
     lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    (nn.Tanh(), np.tanh),
    (nn.Softplus(beta=2.0, threshold=3.0),
     lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2)),
    (nn.Softmax(dim=1), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
    (nn.LogSoftmax(dim=1), lambda x: x - np.log(np.exp(x).sum(1, keepdims=True))),
    (nn.Hardtanh(-0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5)),
    (nn.ReLU6(), lambda x: np.clip(x, 0, 6)),
    (nn.Mish(), lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    (nn.LogSigmoid(), lambda x: -np.log1p(np.exp(-x))),
    (nn.SELU(), lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * (np.exp(x) - 1))),
    (nn.Hardswish(), lambda x: x * np.clip(x + 3, 0, 6) / 6),
    (nn.Softsign(), lambda x: x / (1 + np.abs(x))),
]


@pytest.mark.parametrize("module,ref", ACTIVATIONS, ids=lambda v: repr(v)[:24])
def test_activation_forward_and_gradcheck(module, ref, device):
    check_layer(lambda: module, lambda m, x: ref(x.astype(np.float64)), (3, 4), low=-4.0,
                high=4.0, device=device)


def test_activation_float32_values():
    x = torch.tensor([-2.0, -0.5, 0.0, 0.5, 30.0, 100.0])
    np.testing.assert_allclose(F.softplus(x).numpy(),
                               [0.126928, 0.474077, 0.693147, 0.974077, 30.0, 100.0],
                               rtol=1e-5)
    assert np.isfinite(F.logsigmoid(torch.tensor([-200.0, 200.0])).numpy()).all()
    y = torch.tensor([-1e4, 1e4], requires_grad=True)
    F.softplus(y).sum().backward()
    assert y.grad.tolist() == [0.0, 1.0]


def test_inplace_activation_writes_through():
    x = torch.tensor([-1.0, 2.0])
    out = nn.ReLU(inplace=True)(x)
    assert x.tolist() == [0.0, 2.0] and out.tolist() == [0.0, 2.0]
    y = torch.tensor([-1.0, 2.0])
    F.leaky_relu(y, 0.5, inplace=True)
    assert y.tolist() == [-0.5, 2.0]


def test_activation_reprs():
    assert repr(nn.ReLU()) == "ReLU()"
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.LeakyReLU(0.1)) == "LeakyReLU(negative_slope=0.1)"
    assert repr(nn.ELU()) == "ELU(alpha=1.0)"
    assert repr(nn.GELU()) == "GELU(approximate='none')"
    assert repr(nn.Softmax(dim=-1)) == "Softmax(dim=-1)"
    assert repr(nn.Softplus()) == "Softplus(beta=1.0, threshold=20.0)"
    assert repr(nn.Dropout()) == "Dropout(p=0.5, inplace=False)"
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"


def test_gelu_bad_approximate():
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(torch.zeros(1), approximate="fast")


def test_softmax_implicit_dim_warns():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = F.softmax(torch.zeros(2, 3))
    np.testing.assert_allclose(out.numpy(), np.full((2, 3), 1 / 3), rtol=1e-6)


def test_glu_and_prelu():
    x = _x(2, 4)
    a, b = x.detach().numpy()[:, :2], x.detach().numpy()[:, 2:]
    np.testing.assert_allclose(F.glu(x).detach().numpy(), a / (1 + np.exp(-b)), rtol=1e-10)
    assert gradcheck(F.glu, (x,))
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(torch.zeros(2, 3))
    p = nn.PReLU(num_parameters=4).double()
    np.testing.assert_allclose(p(x).detach().numpy(),
                               np.where(x.detach().numpy() > 0, x.detach().numpy(),
                                        0.25 * x.detach().numpy()))


# ---- Dropout ------------------------------------------------------------------------

def test_dropout_train_and_eval():
    torch.manual_seed(0)
    m = nn.Dropout(p=0.3)
    x = torch.ones(20000)
    y = m(x).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.7, rtol=1e-6)
    m.eval()
    assert m(x) is x
    assert nn.Dropout(p=0.0)(x) is x
    assert not nn.Dropout(p=1.0)(x).numpy().any()


def test_dropout_gradient_uses_the_same_mask():
    x = torch.ones(1000, requires_grad=True)
    y = F.dropout(x, 0.5)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


def test_dropout_probability_is_validated():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, "
                                         "but got 1.5"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="but got -0.1"):
        F.dropout(torch.ones(2), -0.1)


def test_dropout2d_zeroes_whole_channels():
    y = nn.Dropout2d(0.5)(torch.ones(4, 50, 3, 3)).numpy()
    per_channel = y.reshape(4, 50, 9)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()


# ---- Flatten / Unflatten ------------------------------------------------------------

def test_flatten_unflatten():
    x = torch.zeros(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Unflatten(1, (3, 20))(torch.zeros(2, 60)).shape == (2, 3, 20)
    assert nn.Unflatten(-1, (-1, 5))(torch.zeros(2, 60)).shape == (2, 12, 5)
    with pytest.raises(RuntimeError, match="don't multiply up to the size of dim 1"):
        nn.Unflatten(1, (7, 9))(torch.zeros(2, 60))
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints"):
        nn.Unflatten(1, 5)


# ---- init ---------------------------------------------------------------------------

def test_calculate_gain_and_fans():
    init = nn.init
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    assert init._calculate_fan_in_and_fan_out(torch.empty(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(torch.empty(3))
    with pytest.raises(ValueError, match="Mode fan_xx not supported"):
        init.kaiming_uniform_(torch.empty(3, 3), mode="fan_xx")


@pytest.mark.parametrize("fn,std", [
    (lambda t: nn.init.kaiming_uniform_(t, nonlinearity="relu"), math.sqrt(2 / 200)),
    (lambda t: nn.init.kaiming_normal_(t, mode="fan_out"), math.sqrt(2 / 1.0001 / 300)),
    (lambda t: nn.init.xavier_uniform_(t, gain=2.0), 2 * math.sqrt(2 / 500)),
    (lambda t: nn.init.xavier_normal_(t), math.sqrt(2 / 500)),
    (lambda t: nn.init.normal_(t, 1.0, 0.5), 0.5),
    (lambda t: nn.init.uniform_(t, -3.0, 3.0), 3 / math.sqrt(3)),
])
def test_init_statistics(fn, std):
    t = torch.empty(300, 200)
    assert fn(t) is t
    assert abs(t.numpy().std() - std) < 0.03 * std


def test_init_fillers_and_structure():
    init = nn.init
    t = torch.empty(3, 4)
    assert init.constant_(t, 2.5).numpy().tolist() == [[2.5] * 4] * 3
    assert not init.zeros_(t).numpy().any()
    assert (init.ones_(t).numpy() == 1).all()
    np.testing.assert_array_equal(init.eye_(t).numpy(), np.eye(3, 4))
    q = init.orthogonal_(torch.empty(6, 4), gain=2.0).numpy()
    np.testing.assert_allclose(q.T @ q, 4 * np.eye(4), atol=1e-5)
    w = init.orthogonal_(torch.empty(3, 8)).numpy()
    np.testing.assert_allclose(w @ w.T, np.eye(3), atol=1e-5)
    tn = init.trunc_normal_(torch.empty(10000), mean=0.0, std=1.0, a=-1.0, b=1.5).numpy()
    assert tn.min() >= -1.0 and tn.max() <= 1.5 and abs(tn.mean() - 0.14) < 0.05
    d = init.dirac_(torch.empty(2, 2, 3, 3)).numpy()
    assert d[0, 0, 1, 1] == 1 and d[1, 1, 1, 1] == 1 and d.sum() == 2
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(torch.empty(2, 2, 2))
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(torch.empty(0, 3))


def test_init_is_reproducible_with_seed():
    torch.manual_seed(3)
    a = nn.Linear(4, 4).weight.detach().numpy().copy()
    torch.manual_seed(3)
    b = nn.Linear(4, 4).weight.detach().numpy()
    np.testing.assert_array_equal(a, b)


def test_init_does_not_record_autograd():
    p = nn.Parameter(torch.zeros(3, 3))
    nn.init.normal_(p)
    assert p.grad_fn is None and p.is_leaf


# ---- utils --------------------------------------------------------------------------

def test_clip_grad_norm_and_value():
    a = nn.Parameter(torch.zeros(2))
    b = nn.Parameter(torch.zeros(2))
    a.grad = torch.tensor([3.0, 0.0])
    b.grad = torch.tensor([0.0, 4.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert abs(total.item() - 5.0) < 1e-6
    np.testing.assert_allclose(a.grad.numpy(), [0.6, 0.0], rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), [0.0, 0.8], rtol=1e-5)
    a.grad = torch.tensor([3.0, -7.0])
    total = nn.utils.clip_grad_norm_(a, 100.0, norm_type="inf")
    assert total.item() == 7.0 and a.grad.tolist() == [3.0, -7.0]   # no clipping needed
    nn.utils.clip_grad_value_([a], 2.0)
    assert a.grad.tolist() == [2.0, -2.0]
    a.grad = torch.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([a], 1.0, error_if_nonfinite=True)
    assert nn.utils.clip_grad_norm_([nn.Parameter(torch.zeros(1))], 1.0).item() == 0.0


def test_parameters_to_vector_and_back():
    m = nn.Linear(3, 2)
    vec = nn.utils.parameters_to_vector(m.parameters())
    assert vec.shape == (8,)
    np.testing.assert_array_equal(vec.detach().numpy()[:6],
                                  m.weight.detach().numpy().ravel())
    nn.utils.vector_to_parameters(torch.arange(8).to(torch.float32), m.parameters())
    assert m.bias.tolist() == [6.0, 7.0] and m.weight[1, 2].item() == 5.0
    with pytest.raises(TypeError, match="expected torch.Tensor, but got"):
        nn.utils.vector_to_parameters([1.0], m.parameters())


# ---- convolution and pooling modules -------------------------------------------------

def _np_conv2d(x, w, b, stride=1, padding=0, dilation=1):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (x.shape[2] - dilation * (kh - 1) - 1) // stride + 1
    ow = (x.shape[3] - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + dilation * (kh - 1) + 1:dilation,
                      j * stride:j * stride + dilation * (kw - 1) + 1:dilation]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out + (0 if b is None else b[None, :, None, None])


def test_conv2d_module_forward_and_init():
    m = nn.Conv2d(2, 3, 3, stride=2, padding=1).double()
    x = np.random.default_rng(3).standard_normal((2, 2, 7, 7))
    out = m(_t(x)).detach().numpy()
    ref = _np_conv2d(x, m.weight.detach().numpy(), m.bias.detach().numpy(), 2, 1)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-12)
    bound = 1 / math.sqrt(2 * 9)
    assert np.abs(m.weight.detach().numpy()).max() <= bound
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    assert m.weight.shape == (3, 2, 3, 3)
    assert repr(m) == "Conv2d(2, 3, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))"


@pytest.mark.parametrize("k,d", [(3, 1), (4, 1), (3, 2), (2, 3)])
def test_conv2d_padding_same_keeps_size(k, d):
    m = nn.Conv2d(1, 2, k, padding="same", dilation=d, bias=False).double()
    x = np.random.default_rng(4).standard_normal((1, 1, 6, 5))
    out = m(_t(x)).detach().numpy()
    assert out.shape == (1, 2, 6, 5)
    total = d * (k - 1)
    xp = np.pad(x, ((0, 0), (0, 0), (total // 2, total - total // 2),
                    (total // 2, total - total // 2)))
    ref = _np_conv2d(xp, m.weight.detach().numpy(), None, dilation=d)
    np.testing.assert_allclose(out, ref, rtol=1e-10, atol=1e-12)
    assert "padding=same" in repr(m)


def test_conv1d_module_and_unbatched_input():
    m = nn.Conv1d(2, 4, 3, bias=False).double()
    x = np.random.default_rng(5).standard_normal((2, 9))
    out = m(_t(x)).detach().numpy()
    ref = _np_conv2d(x[None, :, None, :], m.weight.detach().numpy()[:, :, None, :], None)
    np.testing.assert_allclose(out, ref[0, :, 0, :], rtol=1e-10)
    assert repr(m) == "Conv1d(2, 4, kernel_size=(3,), stride=(1,), bias=False)"


def test_conv_module_gradcheck():
    m = nn.Conv2d(2, 2, 2, groups=2).double()
    x = _x(1, 2, 3, 3)
    assert gradcheck(m, (x,))


def test_conv_argument_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        nn.Conv2d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(1, 1, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(1, 1, 3, padding_mode="mirror")
    m = nn.Conv2d(3, 4, 3)
    with pytest.raises(RuntimeError, match=r"expected input\[1, 2, 5, 5\] to have 3 "
                                           r"channels, but got 2 channels instead"):
        m(torch.zeros(1, 2, 5, 5))
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) "
                                           r"input to conv2d"):
        m(torch.zeros(3, 5))


def test_conv_transpose2d_module():
    m = nn.ConvTranspose2d(2, 3, 3, stride=2).double()
    assert m.weight.shape == (2, 3, 3, 3)
    x = _x(1, 2, 4, 4)
    assert m(x).shape == (1, 3, 9, 9)
    assert m(x, output_size=[10, 10]).shape == (1, 3, 10, 10)
    with pytest.raises(ValueError, match="requested an output size of"):
        m(x, output_size=[12, 12])
    # the transpose of conv2d: <conv(y), x> == <y, convT(x)>
    w = m.weight.detach()
    y = _x(1, 3, 9, 9, requires_grad=False, seed=9)
    lhs = (F.conv2d(y, w, stride=2) * x.detach()).sum().item()
    rhs = (y * F.conv_transpose2d(x.detach(), w, stride=2)).sum().item()
    assert abs(lhs - rhs) < 1e-9
    assert repr(nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1)) == (
        "ConvTranspose2d(4, 2, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))")


def test_pooling_modules():
    x = np.random.default_rng(6).standard_normal((1, 2, 4, 4))
    out, idx = nn.MaxPool2d(2, return_indices=True)(_t(x))
    ref = x.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(out.numpy(), ref)
    assert idx.dtype == torch.int64 and idx.shape == (1, 2, 2, 2)
    np.testing.assert_array_equal(np.take_along_axis(x.reshape(1, 2, 16),
                                                     idx.numpy().reshape(1, 2, 4), 2),
                                  ref.reshape(1, 2, 4))
    np.testing.assert_allclose(nn.AvgPool2d(2)(_t(x)).numpy(),
                               x.reshape(1, 2, 2, 2, 2, 2).mean(axis=(3, 5)))
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d((1, 1))(_t(x)).numpy(),
                               x.mean(axis=(2, 3), keepdims=True))
    np.testing.assert_allclose(nn.AvgPool1d(2)(_t(x[:, :, 0])).numpy(),
                               x[:, :, 0].reshape(1, 2, 2, 2).mean(-1))
    np.testing.assert_array_equal(nn.MaxPool1d(2)(_t(x[:, :, 0])).numpy(),
                                  x[:, :, 0].reshape(1, 2, 2, 2).max(-1))
    assert repr(nn.MaxPool2d(2)) == \
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool2d(2)) == "AvgPool2d(kernel_size=2, stride=2, padding=0)"
    assert repr(nn.AvgPool1d(2)) == "AvgPool1d(kernel_size=(2,), stride=(2,), padding=(0,))"
    assert repr(nn.AdaptiveAvgPool2d((5, 7))) == "AdaptiveAvgPool2d(output_size=(5, 7))"


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"),
                                          ("circular", "wrap")])
def test_conv2d_padding_modes(mode, np_mode):
    m = nn.Conv2d(1, 2, 3, padding=1, padding_mode=mode, bias=False).double()
    x = np.random.default_rng(7).standard_normal((1, 1, 4, 5))
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), mode=np_mode)
    ref = _np_conv2d(xp, m.weight.detach().numpy(), None)
    np.testing.assert_allclose(m(_t(x)).detach().numpy(), ref, rtol=1e-10, atol=1e-12)
    assert repr(m).endswith(f"padding=(1, 1), bias=False, padding_mode={mode})")


# ---- comparison with PyTorch (skipped where it is not installed) ----------------------

LAYER_ERRORS = [
    lambda L: L.nn.Dropout(1.5),
    lambda L: L.nn.functional.dropout(L.ones(2), -0.1),
    lambda L: L.nn.Conv2d(3, 4, 3, groups=2),
    lambda L: L.nn.Conv2d(1, 1, 3, stride=2, padding="same"),
    lambda L: L.nn.Conv2d(1, 1, 3, padding="full"),
    lambda L: L.nn.Conv2d(1, 1, 3, padding_mode="mirror"),
    lambda L: L.nn.Conv2d(3, 4, 3)(L.zeros(1, 2, 5, 5)),
    lambda L: L.nn.Conv2d(3, 4, 3)(L.zeros(3, 5)),
    lambda L: L.nn.Linear(3, 2)(L.zeros(4, 5)),
    lambda L: L.nn.Unflatten(1, (7, 9))(L.zeros(2, 60)),
    lambda L: L.nn.Unflatten(1, 5),
    lambda L: L.nn.init.calculate_gain("foo"),
    lambda L: L.nn.init._calculate_fan_in_and_fan_out(L.empty(3)),
    lambda L: L.nn.init.kaiming_uniform_(L.empty(3, 3), mode="fan_xx"),
    lambda L: L.nn.init.eye_(L.empty(2, 2, 2)),
    lambda L: L.nn.functional.glu(L.zeros(2, 3)),
    lambda L: L.nn.Bilinear(3, 2, 4)(L.zeros(5, 3), L.zeros(4, 2)),
    lambda L: L.nn.Bilinear(3, 2, 4)(L.zeros(5, 4), L.zeros(5, 2)),
    lambda L: L.nn.PReLU(3)(L.zeros(2, 4)),
    lambda L: L.nn.utils.vector_to_parameters([1.0], L.nn.Linear(1, 1).parameters()),
    lambda L: L.nn.ConvTranspose2d(2, 3, 3, stride=2)(L.zeros(1, 2, 4, 4),
                                                      output_size=[12, 12]),
    lambda L: L.nn.Hardtanh(1.0, 0.5),
]


def _sorted_sets(text):
    """Messages that print a Python set: its order depends on the hash seed."""
    return re.sub(r"\{([^{}]*)\}",
                  lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", text)


def _error_of(fn, lib):
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001 - comparing whatever is raised
        return type(e).__name__, _sorted_sets(str(e))
    return None


@pytest.mark.parametrize("case", range(len(LAYER_ERRORS)))
def test_layer_errors_equal_pytorch(case):
    real = pytest.importorskip("torch")
    assert _error_of(LAYER_ERRORS[case], torch) == _error_of(LAYER_ERRORS[case], real)


def _copy_params(src, dst, real):
    """Load nbtorch module `src`'s parameters into the PyTorch module `dst`."""
    with real.no_grad():
        for (n1, p1), (n2, p2) in zip(src.named_parameters(), dst.named_parameters()):
            assert n1 == n2
            p2.copy_(real.tensor(p1.detach().numpy()))


LAYER_CASES = [
    ("linear", lambda L: L.nn.Linear(4, 3), [(2, 5, 4)]),
    ("bilinear", lambda L: L.nn.Bilinear(4, 2, 3), [(5, 4), (5, 2)]),
    ("conv2d_same", lambda L: L.nn.Conv2d(2, 3, 4, padding="same", dilation=2), [(2, 2, 7, 6)]),
    ("conv2d_reflect", lambda L: L.nn.Conv2d(2, 2, 3, padding=1, padding_mode="reflect",
                                             groups=2), [(1, 2, 5, 5)]),
    ("conv1d", lambda L: L.nn.Conv1d(2, 4, 3, stride=2, padding=1), [(2, 2, 9)]),
    ("convT2d", lambda L: L.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1,
                                               output_padding=1), [(1, 2, 4, 4)]),
    ("mlp", lambda L: L.nn.Sequential(L.nn.Linear(4, 8), L.nn.GELU(), L.nn.Dropout(0.0),
                                      L.nn.Linear(8, 3), L.nn.LogSoftmax(dim=1)), [(3, 4)]),
]


@pytest.mark.parametrize("name,build,shapes", LAYER_CASES, ids=[c[0] for c in LAYER_CASES])
def test_layers_forward_backward_equal_pytorch(name, build, shapes):
    real = pytest.importorskip("torch")
    ours, theirs = build(torch).double(), build(real).double()
    _copy_params(ours, theirs, real)
    rng = np.random.default_rng(22)
    arrays = [rng.standard_normal(s) for s in shapes]
    results = []
    for lib, m in ((torch, ours), (real, theirs)):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = m(*xs)
        (out * lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))).sum() \
            .backward()
        results.append([out.detach().numpy()] + [x.grad.numpy() for x in xs]
                       + [p.grad.numpy() for p in m.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_activations_equal_pytorch():
    real = pytest.importorskip("torch")
    x = np.linspace(-25, 25, 101)
    kinks = {"Hardswish": (-3.0, 3.0)}   # the core's hardswish grad differs exactly at +-3
    names = ["ReLU", "LeakyReLU", "ELU", "GELU", "SiLU", "Sigmoid", "Tanh", "Softplus",
             "Mish", "Hardswish", "Hardsigmoid", "LogSigmoid", "SELU", "CELU", "ReLU6",
             "Softsign", "Tanhshrink"]
    for name in names:
        vals = []
        for lib in (torch, real):
            t = lib.tensor(x, requires_grad=True)
            out = getattr(lib.nn, name)()(t)
            out.sum().backward()
            vals.append((out.detach().numpy(), t.grad.numpy()))
        np.testing.assert_allclose(vals[0][0], vals[1][0], rtol=1e-12, atol=1e-14,
                                   err_msg=name)
        smooth = ~np.isin(x, kinks.get(name, ()))
        # rtol 1e-7: PyTorch's float64 hardsigmoid grad uses a float32 1/6
        np.testing.assert_allclose(vals[0][1][smooth], vals[1][1][smooth], rtol=1e-7,
                                   atol=1e-14, err_msg=name)


def test_init_gains_and_fans_equal_pytorch():
    real = pytest.importorskip("torch")
    for args in [("linear",), ("relu",), ("tanh",), ("leaky_relu",), ("leaky_relu", 0.3),
                 ("selu",), ("conv_transpose2d",)]:
        assert nn.init.calculate_gain(*args) == real.nn.init.calculate_gain(*args)
    for shape in [(3, 4), (8, 4, 3, 3), (2, 3, 5)]:
        assert nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape)) == \
            real.nn.init._calculate_fan_in_and_fan_out(real.empty(*shape))


POOL_CASES = [
    ("max2d", lambda L: L.nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True,
                                       return_indices=True), (2, 3, 7, 8)),
    ("max2d_dil", lambda L: L.nn.MaxPool2d((2, 3), dilation=2), (2, 3, 7, 8)),
    ("max1d", lambda L: L.nn.MaxPool1d(3, stride=2, padding=1, return_indices=True),
     (2, 3, 9)),
    ("avg2d", lambda L: L.nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True,
                                       count_include_pad=False), (2, 3, 7, 8)),
    ("avg2d_div", lambda L: L.nn.AvgPool2d(2, divisor_override=3), (2, 3, 7, 8)),
    ("avg1d", lambda L: L.nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False),
     (2, 3, 9)),
    ("adaptive_avg2d", lambda L: L.nn.AdaptiveAvgPool2d((3, None)), (2, 3, 7, 8)),
    ("adaptive_max2d", lambda L: L.nn.AdaptiveMaxPool2d((3, 5), return_indices=True),
     (2, 3, 7, 8)),
    ("unbatched", lambda L: L.nn.MaxPool2d(2), (3, 7, 8)),
]


@pytest.mark.parametrize("name,build,shape", POOL_CASES, ids=[c[0] for c in POOL_CASES])
def test_pooling_modules_equal_pytorch(name, build, shape):
    real = pytest.importorskip("torch")
    x = np.random.default_rng(23).standard_normal(shape)
    results = []
    for lib in (torch, real):
        m = build(lib)
        t = lib.tensor(x, requires_grad=True)
        out = m(t)
        outs = out if isinstance(out, tuple) else (out,)
        outs[0].sum().backward()
        results.append(([o.detach().numpy() for o in outs], t.grad.numpy(), repr(m)))
    (o1, g1, r1), (o2, g2, r2) = results
    assert r1 == r2
    for a, b in zip(o1, o2):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(g1, g2, rtol=1e-12)


# ---- padding, upsampling, shuffles, distances -----------------------------------------

def test_padding_layers_match_numpy():
    x = np.random.default_rng(24).standard_normal((1, 2, 3, 4))
    cases = [(nn.ZeroPad2d((1, 2, 0, 3)), dict(pad_width=((0, 0), (0, 0), (0, 3), (1, 2)))),
             (nn.ConstantPad2d(1, 3.5), dict(pad_width=((0, 0), (0, 0), (1, 1), (1, 1)),
                                             constant_values=3.5)),
             (nn.ReflectionPad2d(2), dict(pad_width=((0, 0), (0, 0), (2, 2), (2, 2)),
                                          mode="reflect")),
             (nn.ReplicationPad1d((1, 3)), dict(pad_width=((0, 0), (0, 0), (0, 0), (1, 3)),
                                                mode="edge")),
             (nn.CircularPad2d(1), dict(pad_width=((0, 0), (0, 0), (1, 1), (1, 1)),
                                        mode="wrap"))]
    for m, kw in cases:
        if isinstance(m, nn.ReplicationPad1d):      # 1-d padding takes 2-D/3-D input
            np.testing.assert_array_equal(m(_t(x[0])).numpy(), np.pad(x, **kw)[0])
            continue
        np.testing.assert_array_equal(m(_t(x)).numpy(), np.pad(x, **kw))
    assert repr(nn.ZeroPad2d((1, 2, 0, 3))) == "ZeroPad2d((1, 2, 0, 3))"
    assert repr(nn.ConstantPad1d(2, 3.5)) == "ConstantPad1d(padding=(2, 2), value=3.5)"


def test_pixel_shuffle_round_trip_and_upsample():
    x = np.arange(2 * 8 * 2 * 3, dtype=np.float64).reshape(2, 8, 2, 3)
    y = nn.PixelShuffle(2)(_t(x)).numpy()
    ref = x.reshape(2, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 6)
    np.testing.assert_array_equal(y, ref)
    np.testing.assert_array_equal(nn.PixelUnshuffle(2)(_t(y)).numpy(), x)
    up = nn.Upsample(scale_factor=2)(_t(x)).numpy()
    np.testing.assert_array_equal(up, x.repeat(2, axis=2).repeat(2, axis=3))
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2.0, mode='nearest')"


def test_distances_and_shrinks_match_numpy():
    a, b = _x(5, 4, seed=25), _x(5, 4, seed=26)
    an, bn = a.detach().numpy(), b.detach().numpy()
    cos = (an * bn).sum(1) / np.sqrt((an ** 2).sum(1) * (bn ** 2).sum(1))
    np.testing.assert_allclose(nn.CosineSimilarity()(a, b).detach().numpy(), cos)
    np.testing.assert_allclose(nn.PairwiseDistance()(a, b).detach().numpy(),
                               np.sqrt(((an - bn + 1e-6) ** 2).sum(1)))
    assert gradcheck(lambda u, v: F.cosine_similarity(u, v), (a, b))
    np.testing.assert_array_equal(nn.Hardshrink(0.5)(a).detach().numpy(),
                                  np.where(np.abs(an) > 0.5, an, 0))
    np.testing.assert_allclose(nn.Softshrink(0.5)(a).detach().numpy(),
                               np.sign(an) * np.maximum(np.abs(an) - 0.5, 0))


EXTRA_CASES = [
    ("reflect2d", lambda L: L.nn.ReflectionPad2d((1, 0, 2, 1)), [(2, 3, 4, 5)]),
    ("replicate2d", lambda L: L.nn.ReplicationPad2d(1), [(2, 3, 4, 5)]),
    ("upsample_bilinear", lambda L: L.nn.Upsample(size=(5, 9), mode="bilinear"),
     [(2, 3, 4, 5)]),
    ("upsampling_bilinear2d", lambda L: L.nn.UpsamplingBilinear2d(scale_factor=2),
     [(1, 2, 3, 4)]),
    ("unfold", lambda L: L.nn.Unfold(2, padding=1, stride=2), [(2, 3, 4, 5)]),
    ("fold", lambda L: L.nn.Fold((4, 5), 2, padding=1, stride=2), [(2, 12, 9)]),
    ("channel_shuffle", lambda L: L.nn.ChannelShuffle(2), [(2, 6, 3, 3)]),
    ("softmax2d", lambda L: L.nn.Softmax2d(), [(2, 3, 4, 5)]),
    ("pairwise_p3", lambda L: L.nn.PairwiseDistance(p=3.0), [(5, 4), (5, 4)]),
    ("rrelu_eval", lambda L: L.nn.RReLU().eval(), [(5, 4)]),
]


@pytest.mark.parametrize("name,build,shapes", EXTRA_CASES, ids=[c[0] for c in EXTRA_CASES])
def test_extra_layers_equal_pytorch(name, build, shapes):
    real = pytest.importorskip("torch")
    rng = np.random.default_rng(27)
    arrays = [rng.standard_normal(s) for s in shapes]
    results = []
    for lib in (torch, real):
        m = build(lib)
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = m(*xs)
        (out * lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))).sum() \
            .backward()
        results.append(([out.detach().numpy()] + [x.grad.numpy() for x in xs], repr(m)))
    assert results[0][1] == results[1][1]
    for a, b in zip(results[0][0], results[1][0]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_pad_sequence():
    from nbtorch.nn.utils.rnn import pad_sequence, unpad_sequence
    a, b = torch.ones(2, 3), torch.full((4, 3), 2.0)
    out = pad_sequence([a, b], batch_first=True, padding_value=-1.0)
    assert out.shape == (2, 4, 3)
    assert out[0, :, 0].tolist() == [1.0, 1.0, -1.0, -1.0]
    assert pad_sequence([a, b]).shape == (4, 2, 3)
    left = pad_sequence([a, b], batch_first=True, padding_side="left")
    assert left[0, :, 0].tolist() == [0.0, 0.0, 1.0, 1.0]
    back = unpad_sequence(out, [2, 4], batch_first=True)
    assert [t.shape for t in back] == [(2, 3), (4, 3)]


def test_signatures_equal_pytorch():
    """Every argument name PyTorch accepts (in order) is accepted here too."""
    import inspect
    real = pytest.importorskip("torch")

    def params(f):
        try:
            return list(inspect.signature(f).parameters)
        except ValueError:      # a C builtin of PyTorch's: nothing to compare
            return None

    functions = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss",
                 "cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits",
                 "kl_div", "triplet_margin_loss", "multi_margin_loss",
                 "dropout", "dropout2d", "glu", "softmax", "log_softmax", "softmin",
                 "gumbel_softmax", "cosine_similarity", "pairwise_distance", "pixel_shuffle",
                 "logsigmoid", "prelu", "rrelu", "hardshrink"]
    for name in functions:
        theirs = params(getattr(real.nn.functional, name))
        assert theirs is None or params(getattr(F, name)) == theirs, name
    modules = ["Linear", "Bilinear", "Flatten", "Unflatten", "Dropout", "Conv1d", "Conv2d",
               "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
               "CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss", "KLDivLoss", "Upsample",
               "Sequential", "ModuleList", "ParameterDict", "Hardtanh", "Softplus", "GELU"]
    for name in modules:
        assert params(getattr(nn, name).__init__) == \
            params(getattr(real.nn, name).__init__), name
    for name in ["kaiming_uniform_", "kaiming_normal_", "xavier_uniform_", "orthogonal_",
                 "trunc_normal_", "calculate_gain"]:
        assert params(getattr(nn.init, name)) == params(getattr(real.nn.init, name)), name
    for name in ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector"]:
        assert params(getattr(nn.utils, name)) == params(getattr(real.nn.utils, name)), name
    for name in ["named_parameters", "named_modules", "modules", "state_dict",
                 "load_state_dict", "register_forward_hook", "register_forward_pre_hook",
                 "register_full_backward_hook", "register_buffer", "to", "zero_grad"]:
        assert params(getattr(nn.Module, name)) == params(getattr(real.nn.Module, name)), name


def test_lazy_linear_materialises_on_first_call():
    m = nn.LazyLinear(3)
    w = m.weight
    assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    assert m(torch.randn(2, 5)).shape == (2, 3)
    assert type(m) is nn.Linear and m.weight is w and w.shape == (3, 5)
    assert np.abs(w.detach().numpy()).max() <= 1 / math.sqrt(5)
