"""grad_fn node names match PyTorch's (what `repr(tensor)` prints as grad_fn=<...>).

The table holds PyTorch 2.13's names, so the check runs without torch; where torch
is importable the table itself is checked against it.
"""
import pytest

import nbtorch

# case -> (PyTorch's node name, f(lib, F, x, img, cls) -> tensor with a grad_fn)
CASES = {
    "mse_loss": ("MseLossBackward0", lambda T, F, x, img, c: F.mse_loss(x, T.zeros(3, 4))),
    "mse_loss_sum": ("MseLossBackward0",
                     lambda T, F, x, img, c: F.mse_loss(x, T.zeros(3, 4), reduction="sum")),
    "MSELoss": ("MseLossBackward0", lambda T, F, x, img, c: T.nn.MSELoss()(x, T.zeros(3, 4))),
    "cross_entropy": ("NllLossBackward0", lambda T, F, x, img, c: F.cross_entropy(x, c)),
    "nll_loss": ("NllLossBackward0",
                 lambda T, F, x, img, c: F.nll_loss(F.log_softmax(x, 1), c)),
    "nll_loss_sum": ("NllLossBackward0",
                     lambda T, F, x, img, c: F.nll_loss(x, c, reduction="sum")),
    "l1_loss": ("MeanBackward0", lambda T, F, x, img, c: F.l1_loss(x, T.zeros(3, 4))),
    "bce": ("BinaryCrossEntropyBackward0",
            lambda T, F, x, img, c: F.binary_cross_entropy(T.sigmoid(x), T.zeros(3, 4))),
    "bce_logits": ("BinaryCrossEntropyWithLogitsBackward0",
                   lambda T, F, x, img, c: F.binary_cross_entropy_with_logits(
                       x, T.zeros(3, 4))),
    "smooth_l1": ("SmoothL1LossBackward0",
                  lambda T, F, x, img, c: F.smooth_l1_loss(x, T.zeros(3, 4))),
    "huber": ("HuberLossBackward0", lambda T, F, x, img, c: F.huber_loss(x, T.zeros(3, 4))),
    "t[0]": ("SelectBackward0", lambda T, F, x, img, c: x[0]),
    "t[:, 1]": ("SelectBackward0", lambda T, F, x, img, c: x[:, 1]),
    "t[..., 0]": ("SelectBackward0", lambda T, F, x, img, c: x[..., 0]),
    "t[0, 1:3]": ("SliceBackward0", lambda T, F, x, img, c: x[0, 1:3]),
    "t[1:3]": ("SliceBackward0", lambda T, F, x, img, c: x[1:3]),
    "t[idx]": ("IndexBackward0", lambda T, F, x, img, c: x[c]),
    "t[mask]": ("IndexBackward0", lambda T, F, x, img, c: x[x > 0]),
    "t[None]": ("UnsqueezeBackward0", lambda T, F, x, img, c: x[None]),
    "sum": ("SumBackward0", lambda T, F, x, img, c: x.sum()),
    "sum(1)": ("SumBackward1", lambda T, F, x, img, c: x.sum(1)),
    "mean": ("MeanBackward0", lambda T, F, x, img, c: x.mean()),
    "mean(0)": ("MeanBackward1", lambda T, F, x, img, c: x.mean(0)),
    "add": ("AddBackward0", lambda T, F, x, img, c: x + x),
    "mul": ("MulBackward0", lambda T, F, x, img, c: x * 2),
    "matmul": ("MmBackward0", lambda T, F, x, img, c: x @ x.t()),
    "mm": ("MmBackward0", lambda T, F, x, img, c: T.mm(x, x.t())),
    "bmm": ("BmmBackward0", lambda T, F, x, img, c: T.bmm(x[None], x.t()[None])),
    "relu": ("ReluBackward0", lambda T, F, x, img, c: F.relu(x)),
    "sigmoid": ("SigmoidBackward0", lambda T, F, x, img, c: T.sigmoid(x)),
    "linear": ("AddmmBackward0", lambda T, F, x, img, c: F.linear(x, x, x[0, :3])),
    "view": ("ViewBackward0", lambda T, F, x, img, c: x.view(12)),
    "reshape": ("ViewBackward0", lambda T, F, x, img, c: x.reshape(12)),
    "t()": ("TBackward0", lambda T, F, x, img, c: x.t()),
    "transpose": ("TransposeBackward0", lambda T, F, x, img, c: x.transpose(0, 1)),
    "unsqueeze": ("UnsqueezeBackward0", lambda T, F, x, img, c: x.unsqueeze(0)),
    "squeeze()": ("SqueezeBackward0", lambda T, F, x, img, c: x[None].squeeze()),
    "squeeze(0)": ("SqueezeBackward1", lambda T, F, x, img, c: x[None].squeeze(0)),
    "cat": ("CatBackward0", lambda T, F, x, img, c: T.cat([x, x])),
    "stack": ("StackBackward0", lambda T, F, x, img, c: T.stack([x, x])),
    "softmax": ("SoftmaxBackward0", lambda T, F, x, img, c: F.softmax(x, 1)),
    "log_softmax": ("LogSoftmaxBackward0", lambda T, F, x, img, c: F.log_softmax(x, 1)),
    "conv2d": ("ConvolutionBackward0",
               lambda T, F, x, img, c: F.conv2d(img, T.ones(1, 2, 3, 3))),
    "max_pool2d": ("MaxPool2DWithIndicesBackward0",
                   lambda T, F, x, img, c: F.max_pool2d(img, 2)),
    "avg_pool2d": ("AvgPool2DBackward0", lambda T, F, x, img, c: F.avg_pool2d(img, 2)),
    "adaptive_avg_pool2d": ("AdaptiveAvgPool2DBackward0",
                            lambda T, F, x, img, c: F.adaptive_avg_pool2d(img, 2)),
    "adaptive_max_pool2d": ("AdaptiveMaxPool2DBackward0",
                            lambda T, F, x, img, c: F.adaptive_max_pool2d(img, 2)),
    "conv_transpose2d": ("ConvolutionBackward0", lambda T, F, x, img, c: F.conv_transpose2d(
        img, T.ones(2, 1, 2, 2))),
    "dropout": ("MulBackward0", lambda T, F, x, img, c: F.dropout(x, 0.5, True)),
    "batch_norm": ("NativeBatchNormBackward0",
                   lambda T, F, x, img, c: F.batch_norm(img, None, None, training=True)),
    "layer_norm": ("NativeLayerNormBackward0", lambda T, F, x, img, c: F.layer_norm(x, (4,))),
    "max()": ("MaxBackward1", lambda T, F, x, img, c: x.max()),
    "max(1)": ("MaxBackward0", lambda T, F, x, img, c: x.max(1)[0]),
    "min()": ("MinBackward1", lambda T, F, x, img, c: x.min()),
    "amax": ("AmaxBackward0", lambda T, F, x, img, c: x.amax(1)),
    "clamp": ("ClampBackward1", lambda T, F, x, img, c: x.clamp(0, 1)),
    "clamp(min)": ("ClampBackward1", lambda T, F, x, img, c: x.clamp(min=0)),
    "norm": ("LinalgVectorNormBackward0", lambda T, F, x, img, c: x.norm()),
    "double": ("ToCopyBackward0", lambda T, F, x, img, c: x.double()),
    "std": ("StdBackward0", lambda T, F, x, img, c: x.std()),
    "var": ("VarBackward0", lambda T, F, x, img, c: x.var(1)),
    "var_mean": ("VarMeanBackward0", lambda T, F, x, img, c: T.var_mean(x)[0]),
    "logsumexp": ("LogsumexpBackward0", lambda T, F, x, img, c: x.logsumexp(1)),
    "split": ("SplitBackward0", lambda T, F, x, img, c: x.split(2)[0]),
    "chunk": ("SplitBackward0", lambda T, F, x, img, c: x.chunk(2)[1]),
    "unbind": ("UnbindBackward0", lambda T, F, x, img, c: x.unbind()[0]),
}


def _node(lib, case):
    F = lib.nn.functional
    x = lib.randn(3, 4, requires_grad=True)
    img = lib.randn(2, 2, 6, 6, requires_grad=True)
    cls = lib.tensor([0, 1, 2])
    return CASES[case][1](lib, F, x, img, cls).grad_fn


@pytest.mark.parametrize("case", CASES)
def test_node_name(case):
    node = _node(nbtorch, case)
    expected = CASES[case][0]
    assert type(node).__name__ == expected and node.name() == expected


def test_names_are_pytorchs():
    torch = pytest.importorskip("torch")
    wrong = {c: type(_node(torch, c)).__name__ for c in CASES}
    wrong = {c: n for c, n in wrong.items() if n != CASES[c][0]}
    assert not wrong


def test_repr_prints_the_name():
    x = nbtorch.randn(3, 4, requires_grad=True)
    assert repr(nbtorch.nn.functional.mse_loss(x, nbtorch.zeros(3, 4))).endswith(
        "grad_fn=<MseLossBackward0>)")
    assert "grad_fn=<SelectBackward0>" in repr(x[0])


@pytest.mark.parametrize("case", ["mse_loss", "cross_entropy", "nll_loss", "t[0]", "t[:, 1]",
                                  "matmul", "t()", "max()", "bce", "huber", "squeeze(0)"])
def test_gradients_unchanged(case):
    """The renamed nodes compute the gradients their formulas always did (float64)."""
    x = nbtorch.randn(3, 4, dtype=nbtorch.float64, requires_grad=True)
    img = nbtorch.randn(2, 2, 6, 6, dtype=nbtorch.float64)
    cls = nbtorch.tensor([0, 1, 2])
    F = nbtorch.nn.functional
    if case == "bce":
        assert nbtorch.autograd.gradcheck(
            lambda x: F.binary_cross_entropy(nbtorch.sigmoid(x), nbtorch.zeros_like(x)), (x,))
        return
    fn = CASES[case][1]
    assert nbtorch.autograd.gradcheck(lambda x: fn(nbtorch, F, x, img, cls), (x,))
