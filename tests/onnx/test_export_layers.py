"""nn layers exported to ONNX and run by onnxruntime, against nbtorch (float32, rtol 1e-4),
with a dynamic batch axis checked at a second batch size."""
import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn as nn
import nbtorch.nn.functional as F

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

R = torch.randn


def _seq(*shape):
    return lambda n: R(*((n,) + shape))


LAYERS = {
    "linear": (lambda: nn.Linear(4, 3), _seq(4)),
    "linear_3d": (lambda: nn.Linear(4, 3, bias=False), _seq(2, 4)),
    "conv1d": (lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1), _seq(3, 9)),
    "conv2d_groups": (lambda: nn.Conv2d(4, 4, 3, padding=2, dilation=2, groups=2), _seq(4, 6, 6)),
    "conv2d_reflect": (lambda: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
                       _seq(2, 5, 5)),
    "conv3d_same": (lambda: nn.Conv3d(2, 3, 3, padding="same"), _seq(2, 4, 4, 4)),
    "convT1d": (lambda: nn.ConvTranspose1d(3, 2, 3, stride=2), _seq(3, 4)),
    "convT2d": (lambda: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1),
                _seq(3, 4, 4)),
    "convT3d": (lambda: nn.ConvTranspose3d(2, 2, 2, stride=2), _seq(2, 3, 3, 3)),
    "maxpool1d": (lambda: nn.MaxPool1d(2), _seq(3, 8)),
    "maxpool2d": (lambda: nn.MaxPool2d(3, 2, 1), _seq(2, 7, 7)),
    "maxpool3d": (lambda: nn.MaxPool3d(2), _seq(2, 4, 4, 4)),
    "avgpool2d": (lambda: nn.AvgPool2d(3, 2, 1, count_include_pad=False), _seq(2, 8, 8)),
    "avgpool1d": (lambda: nn.AvgPool1d(2), _seq(2, 8)),
    "adaptive_avg_global": (lambda: nn.AdaptiveAvgPool2d(1), _seq(3, 5, 5)),
    "adaptive_avg_2x4": (lambda: nn.AdaptiveAvgPool2d((2, 4)), _seq(3, 8, 8)),
    "adaptive_max_global": (lambda: nn.AdaptiveMaxPool1d(1), _seq(3, 5)),
    "batchnorm1d": (lambda: nn.BatchNorm1d(4), _seq(4)),
    "batchnorm2d": (lambda: nn.BatchNorm2d(3), _seq(3, 4, 4)),
    "layernorm": (lambda: nn.LayerNorm(8), _seq(3, 8)),
    "layernorm_2d_noaffine": (lambda: nn.LayerNorm((3, 4), elementwise_affine=False),
                              _seq(3, 4)),
    "groupnorm": (lambda: nn.GroupNorm(2, 4), _seq(4, 3, 3)),
    "instancenorm": (lambda: nn.InstanceNorm2d(4, affine=True), _seq(4, 3, 3)),
    "instancenorm1d": (lambda: nn.InstanceNorm1d(3), _seq(3, 6)),
    "dropout_eval": (lambda: nn.Dropout(0.5), _seq(6)),
    "flatten": (lambda: nn.Flatten(), _seq(2, 3)),
    "upsample_nearest": (lambda: nn.Upsample(scale_factor=2), _seq(2, 3, 3)),
    "upsample_bilinear": (lambda: nn.Upsample(scale_factor=2, mode="bilinear"), _seq(2, 3, 3)),
    "upsample_ac": (lambda: nn.Upsample(size=(7, 5), mode="bilinear", align_corners=True),
                    _seq(2, 4, 4)),
    "reflection_pad": (lambda: nn.ReflectionPad2d((1, 2, 0, 1)), _seq(2, 4, 4)),
    "replication_pad": (lambda: nn.ReplicationPad2d(1), _seq(2, 4, 4)),
    "circular_pad": (lambda: nn.CircularPad1d(2), _seq(2, 4)),
    "zero_pad": (lambda: nn.ZeroPad2d((1, 0, 2, 1)), _seq(2, 3, 3)),
    "pixel_shuffle": (lambda: nn.PixelShuffle(2), _seq(8, 3, 3)),
    "pixel_unshuffle": (lambda: nn.PixelUnshuffle(2), _seq(2, 4, 4)),
    "unflatten_flatten": (lambda: nn.Sequential(nn.Unflatten(1, (2, 3)), nn.Flatten()), _seq(6)),
    "unfold": (lambda: nn.Unfold(3, padding=1, stride=2), _seq(3, 5, 5)),
    "fold": (lambda: nn.Fold((5, 5), 3, padding=1, stride=2), _seq(27, 9)),
    "channel_shuffle": (lambda: nn.ChannelShuffle(2), _seq(4, 3, 3)),
    "rmsnorm": (lambda: nn.Sequential(nn.Linear(6, 6), nn.RMSNorm(6)), _seq(6)),
    "lppool": (lambda: nn.LPPool2d(2, 2), _seq(3, 4, 4)),
    "lrn": (lambda: nn.LocalResponseNorm(3), _seq(4, 3, 3)),
    "constant_pad": (lambda: nn.ConstantPad2d(1, 2.0), _seq(3, 3, 3)),
    "softmax2d": (lambda: nn.Softmax2d(), _seq(3, 4, 4)),
    "adaptive_max_2x2": (lambda: nn.AdaptiveMaxPool2d((2, 2)), _seq(2, 4, 4)),
    "upsample_trilinear": (lambda: nn.Upsample(scale_factor=2, mode="trilinear"),
                           _seq(2, 2, 2, 2)),
    "lstm_cell": (lambda: nn.LSTMCell(3, 4), _seq(3)),
    "gru_cell": (lambda: nn.GRUCell(3, 4), _seq(3)),
    "rnn_cell": (lambda: nn.RNNCell(3, 4), _seq(3)),
}

ACTIVATIONS = {name: getattr(nn, name) for name in [
    "ReLU", "GELU", "SiLU", "Mish", "ELU", "SELU", "CELU", "LeakyReLU", "ReLU6", "Hardtanh",
    "Softsign", "Tanh", "Sigmoid", "Hardsigmoid", "Hardswish", "LogSigmoid", "Tanhshrink",
    "Hardshrink", "Softshrink"]}
ACTIVATIONS.update({
    "GELU_tanh": lambda: nn.GELU("tanh"),
    "PReLU": lambda: nn.PReLU(4),
    "Softplus_beta": lambda: nn.Softplus(beta=2, threshold=5),
    "Threshold": lambda: nn.Threshold(0.1, 2.0),
    "Softmax": lambda: nn.Softmax(1),
    "LogSoftmax": lambda: nn.LogSoftmax(-1),
    "Softmin": lambda: nn.Softmin(1),
    "GLU": lambda: nn.GLU(1),
})


class AllActivations(nn.Module):
    """Every activation applied to the same input: one export, one onnxruntime session."""

    def __init__(self):
        super().__init__()
        self.acts = nn.ModuleList([make() for make in ACTIVATIONS.values()])

    def forward(self, x):
        return tuple(act(x) for act in self.acts)


def test_every_activation_matches_onnxruntime(check):
    torch.manual_seed(0)
    check(AllActivations(), (torch.randn(2, 4, 3),), others=[(torch.randn(5, 4, 3),)])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_alone(check, name):
    check(ACTIVATIONS[name](), (torch.randn(2, 4, 3),), others=[(torch.randn(5, 4, 3),)])


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_matches_onnxruntime(check, name):
    torch.manual_seed(0)
    make, data = LAYERS[name]
    layer = make()
    if isinstance(layer, (nn.BatchNorm1d, nn.BatchNorm2d)):
        layer.running_mean.uniform_(-1, 1)
        layer.running_var.uniform_(0.5, 2)
    check(layer, (data(2),), others=[(data(5),)])


def test_embedding_dynamic_batch(check):
    emb = nn.Embedding(10, 3, padding_idx=0)
    check(emb, (torch.tensor([[1, 2], [3, 0]]),), others=[(torch.randint(0, 10, (4, 2)),)])


@pytest.mark.parametrize("mode,kw", [("LSTM", dict(num_layers=2, bidirectional=True)),
                                     ("GRU", dict(num_layers=2, batch_first=True)),
                                     ("RNN", dict(nonlinearity="relu", bidirectional=True)),
                                     ("LSTM", dict(bias=False))])
def test_recurrent_dynamic_length_and_batch(ort_run, mode, kw):
    torch.manual_seed(0)
    rnn = getattr(nn, mode)(3, 5, **kw).eval()
    bf = kw.get("batch_first", False)
    x = torch.randn(2, 4, 3) if bf else torch.randn(4, 2, 3)
    axes = {0: "batch", 1: "time"} if bf else {0: "time", 1: "batch"}
    proto = torch.onnx.export(rnn, (x,), None, input_names=["x"], dynamic_axes={"x": axes})
    for inp in (x, torch.randn(3, 6, 3)):
        out, h = rnn(inp)
        want = [out] + (list(h) if mode == "LSTM" else [h])
        got = ort_run(proto, {"x": inp.numpy()})
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_lstm_with_initial_state(check):
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2)
    x, h0, c0 = torch.randn(5, 2, 3), torch.randn(2, 2, 4), torch.randn(2, 2, 4)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = lstm

        def forward(self, x, h, c):
            return self.lstm(x, (h, c))
    check(M(), (x, h0, c0), dynamic_batch=False)


def test_multihead_attention_with_masks(check):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 2)
    q, k = torch.randn(5, 2, 8), torch.randn(6, 2, 8)
    pad = torch.tensor([[False] * 5 + [True], [False] * 6])

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = mha

        def forward(self, q, k, pad):
            return self.mha(q, k, k, key_padding_mask=pad)
    check(M(), (q, k, pad), dynamic_batch=False)
    check(mha, (q, k, k), dynamic_batch=False)


def test_batch_first_attention_average_off(check):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(8, 4, batch_first=True)

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = mha

        def forward(self, x):
            return self.mha(x, x, x, average_attn_weights=False)
    check(M(), (torch.randn(2, 5, 8),), others=[(torch.randn(3, 5, 8),)])


@pytest.mark.parametrize("kw", [dict(), dict(activation="gelu", norm_first=True)])
def test_transformer_encoder(check, kw):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, **kw)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
    check(enc, (torch.randn(2, 5, 8),), others=[(torch.randn(3, 5, 8),)])


def test_two_input_layers(check):
    torch.manual_seed(0)
    for layer in (nn.Bilinear(3, 4, 5), nn.CosineSimilarity(1), nn.PairwiseDistance()):
        b = 4 if isinstance(layer, nn.Bilinear) else 3
        check(layer, (torch.randn(2, 3), torch.randn(2, b)),
              others=[(torch.randn(5, 3), torch.randn(5, b))])
    # broadcast inputs: the norms are the broadcast vectors' (a row repeated along dim)
    check(nn.CosineSimilarity(1), (torch.randn(2, 1), torch.randn(2, 3)),
          others=[(torch.randn(5, 1), torch.randn(5, 3))])


@pytest.mark.parametrize("mode, padding_mode, align_corners, opset", [
    ("bilinear", "zeros", False, 17), ("nearest", "border", True, 17),
    ("bicubic", "reflection", False, 20), ("bilinear", "border", True, 20)])
def test_grid_sample(check, mode, padding_mode, align_corners, opset):
    class Sample(nn.Module):
        def forward(self, x, grid):
            return F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode,
                                 align_corners=align_corners)
    torch.manual_seed(0)
    grid = torch.rand(2, 5, 4, 2) * 2.4 - 1.2             # some points outside
    check(Sample(), (torch.randn(2, 3, 6, 7), grid), opset_version=opset,
          others=[(torch.randn(3, 3, 6, 7), torch.rand(3, 5, 4, 2) * 2 - 1)])


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.0, float("inf")])
def test_cdist(check, p):
    class Distances(nn.Module):
        def forward(self, a, b):
            return torch.cdist(a, b, p=p)
    torch.manual_seed(0)
    a, b = torch.randn(2, 30, 5), torch.randn(2, 27, 5)
    b[0, :3] = a[0, :3].round()
    a[0, :3] = a[0, :3].round()          # zero distances (and zero differences for p=0)
    check(Distances(), (a, b), others=[(torch.randn(3, 30, 5), torch.randn(3, 27, 5))])


def test_embedding_bag_and_one_hot(check):
    bag = nn.EmbeddingBag(10, 3, mode="mean")
    check(bag, (torch.tensor([[1, 2], [3, 4]]),), others=[(torch.randint(0, 10, (4, 2)),)])

    class OneHot(nn.Module):
        def forward(self, t):
            return F.one_hot(t, 5).float() + torch.roll(t, 1, 0).unsqueeze(1)
    check(OneHot(), (torch.tensor([0, 3, 1]),), dynamic_batch=False)


def test_full_transformer(check):
    torch.manual_seed(0)
    model = nn.Transformer(8, 2, 1, 1, 16)
    check(model, (torch.randn(4, 2, 8), torch.randn(5, 2, 8)), dynamic_batch=False)


def test_transformer_decoder_layer(check):
    torch.manual_seed(0)
    dec = nn.TransformerDecoderLayer(8, 2, 16)
    check(dec, (torch.randn(4, 2, 8), torch.randn(5, 2, 8)), dynamic_batch=False)
