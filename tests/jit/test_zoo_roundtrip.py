"""jit.trace / script / save / load / freeze, fx.symbolic_trace and export across the nn zoo.

The zoo test runs each module through every path and compares with eager; the
save/load half runs in one fresh subprocess that never imports the models'
classes. The tests after it pin the bugs the sweep found.
"""
import copy
import warnings

import pytest

import nbtorch as torch
import nbtorch.nn as nn


def _max_diff(a, b):
    return (a.detach().double() - b.detach().double()).abs().max().item()


def _r(*shape):
    return torch.randn(*shape)


def _idx(high, *shape):
    return torch.randint(0, high, shape)


def _pm(*shape):                                # +-1 targets
    return (torch.randint(0, 2, shape) * 2 - 1).float()


def _dynamic(layer):
    import nbtorch.ao.quantization as tq
    return tq.quantize_dynamic(nn.Sequential(layer), dtype=torch.qint8)


class _Containers(nn.Module):
    """ModuleList, ModuleDict, ParameterList, ParameterDict; a tuple output."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Tanh(), "b": nn.Sigmoid()})
        self.shifts = nn.ParameterList([nn.Parameter(torch.randn(4)) for _ in range(2)])
        self.scales = nn.ParameterDict({"s": nn.Parameter(torch.ones(1))})

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x) + self.shifts[i % 2]
        return self.heads["a"](x) * self.scales["s"], self.heads["b"](x)


_ACTIVATIONS = [("ReLU", ()), ("ReLU6", ()), ("ELU", (0.5,)), ("CELU", (0.7,)), ("SELU", ()),
                ("GELU", ("tanh",)), ("SiLU", ()), ("Mish", ()), ("Sigmoid", ()), ("Tanh", ()),
                ("LogSigmoid", ()), ("Hardsigmoid", ()), ("Hardswish", ()),
                ("Hardtanh", (-0.5, 0.7)), ("LeakyReLU", (0.2,)), ("Softplus", (2.0, 5.0)),
                ("Softshrink", (0.3,)), ("Hardshrink", (0.3,)), ("Softsign", ()),
                ("Tanhshrink", ()), ("Threshold", (0.1, -2.0)), ("PReLU", ()), ("GLU", ()),
                ("Softmax", (1,)), ("LogSoftmax", (-1,)), ("Softmin", (0,))]
_PADS = [(f"{kind}{d}d", d) for kind in ("ZeroPad", "ConstantPad", "ReflectionPad",
                                          "ReplicationPad", "CircularPad") for d in (1, 2, 3)]
_PAD_INPUT = {1: (2, 3, 5), 2: (2, 3, 5, 5), 3: (1, 2, 4, 4, 4)}
_PAD_ARG = {1: (1, 2), 2: (1, 0, 2, 1), 3: 1}
_DROPOUTS = {"Dropout": (4, 6), "Dropout1d": (2, 3, 6), "Dropout2d": (2, 3, 4, 4),
             "Dropout3d": (2, 3, 2, 2, 2), "AlphaDropout": (4, 6),
             "FeatureAlphaDropout": (2, 3, 4, 4)}

# id -> (make the module, make its inputs, flags); flags: "random" (draws: reseeded before
# each run), "lazy" (run once to materialise), "host" (computes on the host: traced as a
# call, not saved)
ZOO = {
    "Conv1d": (lambda: nn.Conv1d(3, 4, 3, padding=1), lambda: (_r(2, 3, 8),), ""),
    "Conv2d": (lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False),
               lambda: (_r(2, 3, 8, 8),), ""),
    "Conv2d-groups-same": (lambda: nn.Conv2d(4, 4, 3, groups=2, dilation=2, padding="same"),
                           lambda: (_r(2, 4, 9, 9),), ""),
    "Conv2d-reflect": (lambda: nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"),
                       lambda: (_r(2, 3, 6, 6),), ""),
    "Conv2d-circular-unbatched": (lambda: nn.Conv2d(3, 4, 3, padding=1,
                                                    padding_mode="circular"),
                                  lambda: (_r(3, 6, 6),), ""),
    "Conv3d": (lambda: nn.Conv3d(2, 3, 3, padding=1), lambda: (_r(1, 2, 4, 4, 4),), ""),
    "ConvTranspose1d": (lambda: nn.ConvTranspose1d(3, 2, 3, stride=2), lambda: (_r(2, 3, 5),),
                        ""),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1,
                                                   output_padding=1),
                        lambda: (_r(2, 3, 4, 4),), ""),
    "ConvTranspose3d": (lambda: nn.ConvTranspose3d(2, 2, 2, stride=2),
                        lambda: (_r(1, 2, 3, 3, 3),), ""),
    "LazyConv1d": (lambda: nn.LazyConv1d(4, 3), lambda: (_r(2, 3, 8),), "lazy"),
    "LazyConv2d": (lambda: nn.LazyConv2d(4, 3), lambda: (_r(2, 3, 6, 6),), "lazy"),
    "LazyConv3d": (lambda: nn.LazyConv3d(3, 2), lambda: (_r(1, 2, 4, 4, 4),), "lazy"),
    "LazyConvTranspose1d": (lambda: nn.LazyConvTranspose1d(2, 3, stride=2),
                            lambda: (_r(2, 3, 5),), "lazy"),
    "LazyConvTranspose2d": (lambda: nn.LazyConvTranspose2d(2, 3), lambda: (_r(2, 3, 4, 4),),
                            "lazy"),
    "LazyConvTranspose3d": (lambda: nn.LazyConvTranspose3d(2, 2),
                            lambda: (_r(1, 2, 3, 3, 3),), "lazy"),
    "Linear": (lambda: nn.Linear(5, 3), lambda: (_r(2, 4, 5),), ""),
    "LazyLinear": (lambda: nn.LazyLinear(3), lambda: (_r(4, 5),), "lazy"),
    "Bilinear": (lambda: nn.Bilinear(3, 4, 2), lambda: (_r(5, 3), _r(5, 4)), ""),
    "Identity": (lambda: nn.Identity(), lambda: (_r(3, 4),), ""),
    "DataParallel": (lambda: nn.DataParallel(nn.Linear(5, 3)), lambda: (_r(4, 5),), ""),
    "MaxPool1d": (lambda: nn.MaxPool1d(2), lambda: (_r(2, 3, 8),), ""),
    "MaxPool2d-ceil": (lambda: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True),
                       lambda: (_r(2, 3, 8, 8),), ""),
    "MaxPool2d-indices": (lambda: nn.MaxPool2d(2, return_indices=True),
                          lambda: (_r(2, 3, 6, 6),), ""),
    "MaxPool3d": (lambda: nn.MaxPool3d(2), lambda: (_r(1, 2, 4, 4, 4),), ""),
    "AvgPool1d": (lambda: nn.AvgPool1d(3, stride=2, padding=1), lambda: (_r(2, 3, 8),), ""),
    "AvgPool2d": (lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False,
                                       ceil_mode=True, divisor_override=None),
                  lambda: (_r(2, 3, 7, 7),), ""),
    "AvgPool3d": (lambda: nn.AvgPool3d(2, divisor_override=3), lambda: (_r(1, 2, 4, 4, 4),),
                  ""),
    "AdaptiveAvgPool1d": (lambda: nn.AdaptiveAvgPool1d(3), lambda: (_r(2, 3, 8),), ""),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((3, 2)), lambda: (_r(2, 3, 7, 6),), ""),
    "AdaptiveAvgPool3d": (lambda: nn.AdaptiveAvgPool3d(2), lambda: (_r(1, 2, 5, 4, 4),), ""),
    "AdaptiveMaxPool1d": (lambda: nn.AdaptiveMaxPool1d(3), lambda: (_r(2, 3, 8),), ""),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d((3, 2)), lambda: (_r(2, 3, 7, 6),), ""),
    "AdaptiveMaxPool3d": (lambda: nn.AdaptiveMaxPool3d(2), lambda: (_r(1, 2, 5, 4, 4),), ""),
    "LPPool1d": (lambda: nn.LPPool1d(2, 2), lambda: (_r(2, 3, 8),), ""),
    "LPPool2d": (lambda: nn.LPPool2d(3, 2), lambda: (_r(2, 3, 6, 6),), ""),
    "LPPool3d": (lambda: nn.LPPool3d(2, 2), lambda: (_r(1, 2, 4, 4, 4),), ""),
    "FractionalMaxPool2d": (lambda: nn.FractionalMaxPool2d(2, output_size=(3, 3)),
                            lambda: (_r(2, 3, 7, 7),), "random"),
    "FractionalMaxPool3d": (lambda: nn.FractionalMaxPool3d(2, output_ratio=0.5),
                            lambda: (_r(1, 2, 6, 6, 6),), "random"),
    "MaxUnpool1d": (lambda: nn.MaxUnpool1d(2),
                    lambda: (_r(1, 2, 3), torch.tensor([[[0, 3, 4], [1, 2, 5]]])), ""),
    "MaxUnpool2d": (lambda: nn.MaxUnpool2d(2),
                    lambda: (_r(1, 2, 2, 2),
                             torch.tensor([[[[0, 3], [9, 14]], [[5, 7], [8, 15]]]])), ""),
    "MaxUnpool3d": (lambda: nn.MaxUnpool3d(2),
                    lambda: (_r(1, 1, 1, 1, 2), torch.tensor([[[[[0, 7]]]]])), ""),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(3), lambda: (_r(4, 3, 5),), ""),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3), lambda: (_r(4, 3, 5, 5),), ""),
    "BatchNorm2d-no-stats": (lambda: nn.BatchNorm2d(3, affine=False,
                                                    track_running_stats=False),
                             lambda: (_r(4, 3, 5, 5),), ""),
    "BatchNorm3d": (lambda: nn.BatchNorm3d(2), lambda: (_r(2, 2, 3, 3, 3),), ""),
    "LazyBatchNorm1d": (lambda: nn.LazyBatchNorm1d(), lambda: (_r(4, 3),), "lazy"),
    "LazyBatchNorm2d": (lambda: nn.LazyBatchNorm2d(), lambda: (_r(4, 3, 5, 5),), "lazy"),
    "LazyBatchNorm3d": (lambda: nn.LazyBatchNorm3d(), lambda: (_r(2, 2, 3, 3, 3),), "lazy"),
    "SyncBatchNorm": (lambda: nn.SyncBatchNorm(3), lambda: (_r(4, 3, 5, 5),), ""),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), lambda: (_r(2, 4, 5, 5),), ""),
    "InstanceNorm1d": (lambda: nn.InstanceNorm1d(3), lambda: (_r(2, 3, 6),), ""),
    "InstanceNorm2d-stats": (lambda: nn.InstanceNorm2d(3, affine=True,
                                                       track_running_stats=True),
                             lambda: (_r(2, 3, 5, 5),), ""),
    "InstanceNorm3d": (lambda: nn.InstanceNorm3d(2), lambda: (_r(1, 2, 3, 3, 3),), ""),
    "LazyInstanceNorm1d": (lambda: nn.LazyInstanceNorm1d(affine=True), lambda: (_r(2, 3, 6),),
                           "lazy"),
    "LazyInstanceNorm2d": (lambda: nn.LazyInstanceNorm2d(), lambda: (_r(2, 3, 5, 5),), "lazy"),
    "LazyInstanceNorm3d": (lambda: nn.LazyInstanceNorm3d(), lambda: (_r(1, 2, 3, 3, 3),),
                           "lazy"),
    "LayerNorm": (lambda: nn.LayerNorm((3, 5), bias=False), lambda: (_r(2, 3, 5),), ""),
    "RMSNorm": (lambda: nn.RMSNorm(5), lambda: (_r(2, 3, 5),), ""),
    "LocalResponseNorm": (lambda: nn.LocalResponseNorm(3), lambda: (_r(2, 5, 4, 4),), ""),
    "CrossMapLRN2d": (lambda: nn.CrossMapLRN2d(3), lambda: (_r(2, 5, 4, 4),), ""),
    **{name: ((lambda name=name, args=args: getattr(nn, name)(*args)),
              (lambda: (_r(3, 4),)), "") for name, args in _ACTIVATIONS},
    "PReLU-channels": (lambda: nn.PReLU(3), lambda: (_r(2, 3, 4),), ""),
    "Softmax2d": (lambda: nn.Softmax2d(), lambda: (_r(2, 4, 3, 3),), ""),
    "RReLU": (lambda: nn.RReLU(), lambda: (_r(3, 4),), "random"),
    **{name: ((lambda name=name: getattr(nn, name)(0.3)), (lambda shape=shape: (_r(*shape),)),
              "random") for name, shape in _DROPOUTS.items()},
    "RNN": (lambda: nn.RNN(3, 4, num_layers=2), lambda: (_r(5, 2, 3),), ""),
    "RNN-relu-batch-first": (lambda: nn.RNN(3, 4, nonlinearity="relu", batch_first=True),
                             lambda: (_r(2, 5, 3),), ""),
    "LSTM-bidirectional": (lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True),
                           lambda: (_r(5, 2, 3),), ""),
    "LSTM-h0": (lambda: nn.LSTM(3, 4, batch_first=True),
                lambda: (_r(2, 5, 3), (_r(1, 2, 4), _r(1, 2, 4))), ""),
    "GRU": (lambda: nn.GRU(3, 4, bidirectional=True, batch_first=True),
            lambda: (_r(2, 5, 3),), ""),
    "RNNCell": (lambda: nn.RNNCell(3, 4), lambda: (_r(2, 3), _r(2, 4)), ""),
    "LSTMCell": (lambda: nn.LSTMCell(3, 4), lambda: (_r(2, 3), (_r(2, 4), _r(2, 4))), ""),
    "GRUCell": (lambda: nn.GRUCell(3, 4), lambda: (_r(2, 3), _r(2, 4)), ""),
    "MultiheadAttention": (lambda: nn.MultiheadAttention(8, 2),
                           lambda: (_r(4, 2, 8), _r(4, 2, 8), _r(4, 2, 8)), ""),
    "MultiheadAttention-kdim": (lambda: nn.MultiheadAttention(8, 2, batch_first=True, kdim=6,
                                                              vdim=5, bias=False),
                                lambda: (_r(2, 4, 8), _r(2, 3, 6), _r(2, 3, 5)), ""),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(
        8, 2, 16, dropout=0.0, activation="gelu", norm_first=True, batch_first=True),
        lambda: (_r(2, 4, 8),), ""),
    "TransformerDecoderLayer": (lambda: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0),
                                lambda: (_r(4, 2, 8), _r(3, 2, 8)), ""),
    "TransformerEncoder": (lambda: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2), lambda: (_r(4, 2, 8),), ""),
    "TransformerDecoder": (lambda: nn.TransformerDecoder(
        nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2),
        lambda: (_r(4, 2, 8), _r(3, 2, 8)), ""),
    "Transformer": (lambda: nn.Transformer(8, 2, 1, 1, 16, dropout=0.0),
                    lambda: (_r(4, 2, 8), _r(3, 2, 8)), ""),
    "Embedding": (lambda: nn.Embedding(10, 4, padding_idx=0), lambda: (_idx(10, 3, 5),), ""),
    "EmbeddingBag-mean": (lambda: nn.EmbeddingBag(10, 4, mode="mean"),
                          lambda: (_idx(10, 3, 5),), ""),
    "EmbeddingBag-offsets": (lambda: nn.EmbeddingBag(10, 4, mode="sum"),
                             lambda: (_idx(10, 8), torch.tensor([0, 3, 5])), ""),
    "EmbeddingBag-max": (lambda: nn.EmbeddingBag(10, 4, mode="max"),
                         lambda: (_idx(10, 3, 5),), ""),
    **{name: ((lambda name=name, d=d: getattr(nn, name)(
        _PAD_ARG[d], *((1.5,) if name.startswith("Constant") else ()))),
        (lambda d=d: (_r(*_PAD_INPUT[d]),)), "") for name, d in _PADS},
    "Upsample-nearest": (lambda: nn.Upsample(scale_factor=2), lambda: (_r(2, 3, 4, 4),), ""),
    "Upsample-bilinear": (lambda: nn.Upsample(size=(7, 5), mode="bilinear",
                                              align_corners=True),
                          lambda: (_r(2, 3, 4, 4),), ""),
    "Upsample-bicubic": (lambda: nn.Upsample(scale_factor=1.5, mode="bicubic"),
                         lambda: (_r(2, 3, 4, 4),), ""),
    "Upsample-linear": (lambda: nn.Upsample(scale_factor=2, mode="linear"),
                        lambda: (_r(2, 3, 4),), ""),
    "Upsample-trilinear": (lambda: nn.Upsample(scale_factor=2, mode="trilinear"),
                           lambda: (_r(1, 2, 2, 3, 2),), ""),
    "Upsample-nearest-exact": (lambda: nn.Upsample(scale_factor=1.7, mode="nearest-exact"),
                               lambda: (_r(2, 3, 4, 4),), ""),
    "UpsamplingNearest2d": (lambda: nn.UpsamplingNearest2d(scale_factor=2),
                            lambda: (_r(2, 3, 4, 4),), ""),
    "UpsamplingBilinear2d": (lambda: nn.UpsamplingBilinear2d(scale_factor=2),
                             lambda: (_r(2, 3, 4, 4),), ""),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), lambda: (_r(2, 8, 3, 3),), ""),
    "PixelUnshuffle": (lambda: nn.PixelUnshuffle(2), lambda: (_r(2, 2, 4, 6),), ""),
    "ChannelShuffle": (lambda: nn.ChannelShuffle(2), lambda: (_r(2, 4, 3, 3),), ""),
    "Flatten": (lambda: nn.Flatten(0, 1), lambda: (_r(2, 3, 4),), ""),
    "Unflatten": (lambda: nn.Unflatten(1, (2, 3)), lambda: (_r(4, 6, 2),), ""),
    "Fold": (lambda: nn.Fold((4, 5), 2), lambda: (_r(2, 12, 12),), ""),
    "Unfold": (lambda: nn.Unfold(2, padding=1, stride=2), lambda: (_r(2, 3, 5, 5),), ""),
    "CosineSimilarity": (lambda: nn.CosineSimilarity(dim=1), lambda: (_r(4, 5), _r(4, 5)), ""),
    "PairwiseDistance": (lambda: nn.PairwiseDistance(p=3.0, keepdim=True),
                         lambda: (_r(4, 5), _r(4, 5)), ""),
    "Sequential": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4),
                                         nn.ReLU(inplace=True), nn.MaxPool2d(2), nn.Flatten(),
                                         nn.Linear(16, 3)),
                   lambda: (_r(2, 3, 6, 6),), ""),
    "Containers": (_Containers, lambda: (_r(3, 4),), ""),
    "MSELoss": (lambda: nn.MSELoss(), lambda: (_r(3, 4), _r(3, 4)), ""),
    "L1Loss": (lambda: nn.L1Loss(reduction="none"), lambda: (_r(3, 4), _r(3, 4)), ""),
    "SmoothL1Loss": (lambda: nn.SmoothL1Loss(beta=0.5, reduction="sum"),
                     lambda: (_r(3, 4), _r(3, 4)), ""),
    "HuberLoss": (lambda: nn.HuberLoss(delta=0.7), lambda: (_r(3, 4), _r(3, 4)), ""),
    "CrossEntropyLoss": (lambda: nn.CrossEntropyLoss(weight=torch.rand(5), ignore_index=1,
                                                     label_smoothing=0.1),
                         lambda: (_r(4, 5), _idx(5, 4)), ""),
    "CrossEntropyLoss-probs": (lambda: nn.CrossEntropyLoss(),
                               lambda: (_r(4, 5), _r(4, 5).softmax(-1)), ""),
    "CrossEntropyLoss-2d": (lambda: nn.CrossEntropyLoss(),
                            lambda: (_r(2, 5, 3, 3), _idx(5, 2, 3, 3)), ""),
    "NLLLoss": (lambda: nn.NLLLoss(reduction="sum"),
                lambda: (_r(4, 5).log_softmax(-1), _idx(5, 4)), ""),
    "NLLLoss2d": (lambda: nn.NLLLoss2d(),
                  lambda: (_r(2, 5, 3, 3).log_softmax(1), _idx(5, 2, 3, 3)), ""),
    "LinearCrossEntropyLoss": (lambda: nn.LinearCrossEntropyLoss(6, 5, bias=True),
                               lambda: (_r(4, 6), _idx(5, 4)), ""),
    "BCELoss": (lambda: nn.BCELoss(), lambda: (torch.rand(3, 4), torch.rand(3, 4)), ""),
    "BCEWithLogitsLoss": (lambda: nn.BCEWithLogitsLoss(pos_weight=torch.rand(4)),
                          lambda: (_r(3, 4), torch.rand(3, 4)), ""),
    "KLDivLoss": (lambda: nn.KLDivLoss(reduction="batchmean", log_target=True),
                  lambda: (_r(3, 4).log_softmax(-1), _r(3, 4).log_softmax(-1)), ""),
    "PoissonNLLLoss": (lambda: nn.PoissonNLLLoss(), lambda: (_r(3, 4), torch.rand(3, 4) * 3),
                       ""),
    "GaussianNLLLoss": (lambda: nn.GaussianNLLLoss(),
                        lambda: (_r(3, 4), _r(3, 4), torch.rand(3, 4) + 0.1), ""),
    "HingeEmbeddingLoss": (lambda: nn.HingeEmbeddingLoss(), lambda: (_r(3, 4), _pm(3, 4)), ""),
    "SoftMarginLoss": (lambda: nn.SoftMarginLoss(), lambda: (_r(3, 4), _pm(3, 4)), ""),
    "MultiLabelSoftMarginLoss": (lambda: nn.MultiLabelSoftMarginLoss(),
                                 lambda: (_r(3, 4), _idx(2, 3, 4).float()), ""),
    "MultiLabelMarginLoss": (lambda: nn.MultiLabelMarginLoss(),
                             lambda: (_r(2, 4), torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1]])),
                             ""),
    "MultiMarginLoss": (lambda: nn.MultiMarginLoss(p=2, margin=0.5),
                        lambda: (_r(3, 4), _idx(4, 3)), ""),
    "MarginRankingLoss": (lambda: nn.MarginRankingLoss(0.2), lambda: (_r(5), _r(5), _pm(5)),
                          ""),
    "CosineEmbeddingLoss": (lambda: nn.CosineEmbeddingLoss(0.1),
                            lambda: (_r(3, 4), _r(3, 4), _pm(3)), ""),
    "TripletMarginLoss": (lambda: nn.TripletMarginLoss(swap=True),
                          lambda: (_r(3, 4), _r(3, 4), _r(3, 4)), ""),
    "TripletMarginWithDistanceLoss": (lambda: nn.TripletMarginWithDistanceLoss(),
                                      lambda: (_r(3, 4), _r(3, 4), _r(3, 4)), ""),
    "CTCLoss": (lambda: nn.CTCLoss(),
                lambda: (_r(6, 2, 4).log_softmax(-1), torch.tensor([[1, 2], [3, 1]]),
                         torch.tensor([6, 5]), torch.tensor([2, 1])), ""),
    "AdaptiveLogSoftmaxWithLoss": (lambda: nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 7]),
                                   lambda: (_r(5, 8), _idx(10, 5)), "host"),
    "dynamic-Linear": (lambda: _dynamic(nn.Linear(5, 3)), lambda: (_r(4, 5),), ""),
    "dynamic-LSTM": (lambda: _dynamic(nn.LSTM(3, 4)), lambda: (_r(5, 2, 3),), "host"),
    "dynamic-GRUCell": (lambda: _dynamic(nn.GRUCell(3, 4)), lambda: (_r(2, 3),), "host"),
}


def _build(name, training=False):
    """(module, inputs, flags) of zoo entry `name`, seeded, in the given mode."""
    make, inputs, flags = ZOO[name]
    torch.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (deprecations, lazy-module notes)
        m, args = make(), inputs()
        if "lazy" in flags:
            m(*args)
    return m.train(training), args, flags


def _leaves(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for v in out for t in _leaves(v)]
    if isinstance(out, dict):
        return [t for k in out for t in _leaves(out[k])]
    if hasattr(out, "_fields"):
        return _leaves(tuple(out))
    return []


def _assert_same(got, want, what):
    a, b = _leaves(got), _leaves(want)
    assert len(a) == len(b), what
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype, what
        torch.testing.assert_close(x, y, rtol=0, atol=1e-6, equal_nan=True, msg=what)


def _run(m, args, flags):
    if "random" in flags:
        torch.manual_seed(5)
    return m(*args)


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_trace_freeze_fx_export_equal_eager(name):
    """Eval mode: jit.trace (check_trace on), freeze, fx.symbolic_trace (where the
    module's forward has no control flow on its input; else fx's TraceError, as PyTorch's)
    and export give eager's outputs."""
    m, args, flags = _build(name)
    want = _run(copy.deepcopy(m), args, flags)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(copy.deepcopy(m), args, check_trace="random" not in flags)
    _assert_same(_run(traced, args, flags), want, "trace")
    _assert_same(_run(torch.jit.freeze(traced), args, flags), want, "freeze")
    if name == "DataParallel":
        return              # forward(*inputs): symbolic_trace and export say so, clearly
    try:
        gm = torch.fx.symbolic_trace(copy.deepcopy(m))
    except torch.fx.proxy.TraceError:
        pass
    else:
        _assert_same(_run(gm, args, flags), want, "fx")
        compile(gm.code, "<gm.code>", "exec")              # valid Python
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "AdaptiveLogSoftmaxWithLoss":    # routes rows by target values
            with pytest.raises(torch.export.dynamic_shapes.UserError, match="NumPy array"):
                torch.export.export(copy.deepcopy(m), tuple(args))
            return
        ep = torch.export.export(copy.deepcopy(m), tuple(args))
    assert "ExportedProgram" in str(ep) and str(ep.graph)
    _assert_same(_run(ep.run_decompositions().module(), args, flags), want, "export")


# Saving refuses these with a clear error (each names the module or the call): layers that
# compute on the host, a loss holding a module as an argument; in training mode also a
# BatchNorm or dropout *inside* a model (it updates state or draws: "call .eval()"; as the
# root it is traced into functional ops, which update the loaded module's buffers).
_SAVE_REFUSED = {"AdaptiveLogSoftmaxWithLoss", "dynamic-LSTM", "dynamic-GRUCell",
                 "TripletMarginWithDistanceLoss"}
_SAVE_REFUSED_TRAINING = _SAVE_REFUSED | {"Sequential", "TransformerEncoder",
                                          "TransformerDecoder", "Transformer"}
_REFUSAL = "no functional form|cannot be saved|not a public|not a tensor"

_LOADER = r"""
import json, sys
import nbtorch as torch
folder = sys.argv[1]
for key in json.load(open(folder + "/keys.json")):
    path = folder + "/" + key
    loaded = torch.jit.load(path + ".nbj")
    io = torch.load(path + ".io")
    torch.manual_seed(5)
    out = loaded(*io["args"])
    res = {"out": out, "keys": list(loaded.state_dict()), "buffers": dict(loaded.named_buffers()),
           "params": [n for n, _ in loaded.named_parameters()]}
    if io["grads"] is not None:
        _loss(out).backward()
        res["grads"] = {n: p.grad for n, p in loaded.named_parameters()}
    again = torch.jit.load(path + ".nbj", map_location="cpu")
    if io["state"] is not None:
        again.load_state_dict(io["state"])
    torch.manual_seed(5)
    res["out_again"] = again(*io["args"])
    torch.save(res, path + ".res")
"""


def _loss(out):
    """A loss weighting each output differently (a wrong pairing of outputs shows)."""
    ts = [t for t in _leaves(out) if t.requires_grad]
    return sum((t.float() * (i + 1.5)).sum() for i, t in enumerate(ts))


def test_zoo_save_load_in_a_fresh_process(tmp_path):
    """Every zoo entry traced in eval and in training mode, saved, then loaded in one
    fresh process that never imports the models' classes: the same outputs, and in
    training mode the same parameter gradients as eager; state_dict keys, parameter order
    and load_state_dict of the original's state round trip; map_location loads."""
    import inspect
    import json
    import subprocess
    import sys
    keys, want = [], {}
    for name in ZOO:
        for training in (False, True):
            m, args, flags = _build(name, training)
            if training and not any(p.requires_grad for p in m.parameters()):
                continue
            key = f"{name}-{'train' if training else 'eval'}"
            state = copy.deepcopy(m.state_dict())
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                traced = torch.jit.trace(copy.deepcopy(m), args, check_trace=False)
            traced.load_state_dict(state)           # (the trace ran the layer once)
            refused = _SAVE_REFUSED_TRAINING if training else _SAVE_REFUSED
            if name in refused:
                with pytest.raises((RuntimeError, TypeError), match=_REFUSAL):
                    torch.jit.save(traced, tmp_path / f"{key}.nbj")
                continue
            torch.jit.save(traced, tmp_path / f"{key}.nbj")
            out = _run(m, args, flags)
            grads = None
            if training:
                _loss(out).backward()
                grads = {n: p.grad for n, p in m.named_parameters()}
            # a dynamic quantized layer's packed weights are constants of the saved graph:
            # the loaded module's state_dict is empty (known; loading the original's raises)
            packed = name == "dynamic-Linear"
            torch.save({"args": list(args), "state": None if packed else state,
                        "grads": grads}, tmp_path / f"{key}.io")
            keys.append(key)
            want[key] = (out, grads, [] if packed else list(state),
                         [n for n, _ in m.named_parameters()], dict(m.named_buffers()))
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    src = "\n".join([inspect.getsource(_leaves), inspect.getsource(_loss), _LOADER])
    done = subprocess.run([sys.executable, "-c", src, str(tmp_path)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    for key in keys:
        out, grads, state_keys, params, buffers = want[key]
        res = torch.load(tmp_path / f"{key}.res")
        _assert_same(res["out"], out, key)
        _assert_same(res["out_again"], out, key + " after load_state_dict")
        assert res["keys"] == state_keys and res["params"] == params, key
        for n, b in buffers.items():                # running statistics updated alike
            _assert_same(res["buffers"][n], b, f"{key} buffer {n}")
        if grads is not None:
            assert res["grads"].keys() == grads.keys(), key
            for n, g in grads.items():
                _assert_same(res["grads"][n], g, f"{key} grad {n}")
    assert len(keys) > 200


def _cast(value, dtype):
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (tuple, list)):
        return type(value)(_cast(v, dtype) for v in value)
    return value


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
@pytest.mark.parametrize("name", [n for n in ZOO if not n.startswith("dynamic")])
def test_zoo_in_other_dtypes(name, dtype, tmp_path):
    """The zoo in float64 and bfloat16 (eval mode): trace, script, freeze and a save/load
    round trip give eager's outputs; training-mode trace gives eager's gradients."""
    dtype = getattr(torch, dtype)
    for training in (False, True):
        m, args, flags = _build(name, training)
        m, args = m.to(dtype), _cast(args, dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = _run(copy.deepcopy(m), args, flags)
            twin = copy.deepcopy(m)
            traced = torch.jit.trace(twin, args, check_trace=False)
            twin.load_state_dict(m.state_dict())
            got = _run(traced, args, flags)
            _assert_same(got, want, "trace")
            if training:
                ts = _leaves(want)
                if any(t.requires_grad for t in ts):
                    _loss(want).backward()
                    _loss(got).backward()
                    for (n, p), q in zip(m.named_parameters(), twin.parameters()):
                        if p.grad is not None:
                            _assert_same(q.grad, p.grad, f"grad {n}")
                continue
            _assert_same(_run(torch.jit.freeze(traced), args, flags), want, "freeze")
            try:
                scripted = torch.jit.script(copy.deepcopy(m))
                got = _run(scripted, args, flags)
            except torch.jit.ScriptError:
                pass                        # refused with the reason (data-dependent)
            else:
                _assert_same(got, want, "script")
            if name in _SAVE_REFUSED:
                continue
            torch.jit.save(traced, tmp_path / "m.nbj")
            _assert_same(_run(torch.jit.load(tmp_path / "m.nbj"), args, flags), want, "load")


# ---- regressions ---------------------------------------------------------------------------

def test_script_and_compile_of_half_embedding_with_max_norm_do_not_replay_a_stale_weight():
    # the half path renormalised a float32 copy by a raw kernel and copied it back: graphs
    # replayed the copy without the renorm (bfloat16 results 1.5 off); now refused
    torch.manual_seed(1)
    m = nn.Embedding(10, 4, padding_idx=0, max_norm=1.0).to(torch.bfloat16).eval()
    x = torch.randint(0, 10, (3, 5))
    ref = copy.deepcopy(m)(x)
    with pytest.raises(torch.jit.ScriptError, match="outside the recorded ops"):
        torch.jit.script(copy.deepcopy(m))(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = torch.compile(copy.deepcopy(m))(x)
    assert _max_diff(out, ref) == 0


def test_loaded_module_keeps_the_originals_parameter_order(tmp_path):
    # installed in the graph's order, a loaded TransformerEncoderLayer listed norm1 before
    # linear1: an optimizer state_dict saved with the original model mapped its moments to
    # other parameters (by position) when loaded for the loaded one
    m = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=True).eval()
    x = torch.randn(4, 2, 8)
    torch.jit.save(torch.jit.trace(m, (x,)), tmp_path / "m.nbj")
    loaded = torch.jit.load(tmp_path / "m.nbj")
    names = [n for n, _ in m.named_parameters()]
    exported = torch.export.export(m, (x,)).module()
    for copy_ in (loaded, copy.deepcopy(loaded), exported):
        assert [n for n, _ in copy_.named_parameters()] == names
        assert list(copy_.state_dict()) == list(m.state_dict())
        assert _max_diff(copy_(x), m(x)) == 0


def test_saved_self_attention_is_one_projection_and_bit_equal_in_bfloat16(tmp_path):
    # save inlined attention on three example inputs for one node: the saved graph made
    # three transposes and three projections (query is key no longer held), and bfloat16
    # gradients of a norm_first layer came back 1 ulp off eager's
    torch.manual_seed(1)
    m = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, norm_first=True,
                                   batch_first=True).to(torch.bfloat16)
    x = torch.randn(2, 4, 8).to(torch.bfloat16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.trace(copy.deepcopy(m), (x,)), tmp_path / "m.nbj")
    loaded = torch.jit.load(tmp_path / "m.nbj")
    assert loaded.code.count("torch.transpose(") == 2          # in and out, once each
    _loss(loaded(x)).backward()
    _loss(m(x)).backward()
    for p, q in zip(m.parameters(), loaded.parameters()):
        assert _max_diff(p.grad, q.grad) == 0


def test_traced_gru_cell_gives_its_weights_gradients():
    # nbtorch's own Functions (GRUCell's gate split) were traced through under no_grad:
    # the graph detached the gates and the weights got no gradient at all
    torch.manual_seed(0)
    m = nn.GRUCell(3, 4)
    x, h = torch.randn(2, 3), torch.randn(2, 4)
    traced = torch.jit.trace(copy.deepcopy(m), (x, h))
    out = traced(x, h)
    assert out.requires_grad
    (out * torch.arange(4.0)).sum().backward()
    (m(x, h) * torch.arange(4.0)).sum().backward()
    for (name, p), q in zip(traced.named_parameters(), m.parameters()):
        assert p.grad is not None, name
        assert _max_diff(p.grad, q.grad) < 1e-6, name


def test_hinge_embedding_loss_takes_input_and_target_as_pytorchs():
    # it shared MarginRankingLoss's forward(input1, input2, target=None): symbolic tracing
    # took the three-input branch (TypeError in the generated code), and keywords failed
    m = nn.HingeEmbeddingLoss(0.5)
    x, y = torch.randn(3, 4), torch.tensor([1.0, -1.0, 1.0, -1.0]).expand(3, 4)
    ref = m(x, y)
    assert _max_diff(m(input=x, target=y), ref) == 0
    assert _max_diff(torch.fx.symbolic_trace(m)(x, y), ref) == 0


def test_cross_map_lrn2d_traces_for_any_channel_count(tmp_path):
    # its window ends were lists of Python ints built from the traced channel count:
    # jit.trace and export raised "Could not infer dtype of ConcreteProxy"
    m = nn.CrossMapLRN2d(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traced = torch.jit.trace(m, torch.randn(2, 5, 4, 4))
    torch.jit.save(traced, tmp_path / "lrn.nbj")
    loaded = torch.jit.load(tmp_path / "lrn.nbj")
    for c in (1, 2, 7):
        x = torch.randn(1, c, 3, 3)
        assert _max_diff(traced(x), m(x)) == 0
        assert _max_diff(loaded(x), m(x)) == 0


def test_sync_batch_norm_traced_as_the_root_warns_nothing():
    # its channel check read the traced size: a TracerWarning "Converting a tensor to a
    # Python boolean" at nbtorch's own line for every trace
    m = nn.SyncBatchNorm(3).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traced = torch.jit.trace(m, torch.randn(4, 3, 5, 5))
    x = torch.randn(2, 3, 2, 2)
    assert _max_diff(traced(x), m(x)) == 0


def test_numpy_values_in_traced_code_are_constants_not_crashes():
    # a NumPy scalar or array reaching a recorded call raised NotImplementedError
    # ("argument of type numpy.float32"): AdaptiveLogSoftmaxWithLoss could not be traced
    import numpy as np

    def f(x):
        a = x.numpy() * 2                       # warned: a constant from here on
        return x * np.float32(1.5) + a, torch.tensor(a)
    x = torch.randn(3)
    with pytest.warns(torch.jit.TracerWarning, match="NumPy array"):
        traced = torch.jit.trace(f, (x,), check_trace=False)
    for got, want in zip(traced(x), f(x)):
        assert _max_diff(got, want) == 0
    m = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 7])
    args = (torch.randn(5, 8), torch.randint(0, 10, (5,)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = torch.jit.trace(m, args)(*args)
    assert _max_diff(out.output, m(*args).output) == 0


def test_fake_quantize_traced_is_a_node_not_a_constant_of_the_example():
    # its Function computes on the host (`_host()`, no warning): traced through, the
    # fake-quantized example became a constant - the traced QAT model ignored its input
    # (0.67 off eager on another input, silently); now one node with its own backward
    import nbtorch.ao.quantization as tq
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fq = tq.default_fake_quant()
        fq(torch.randn(5, 4))
        fq.disable_observer()
        traced = torch.jit.trace(fq, (torch.randn(5, 4),), check_trace=False)
    x = (torch.randn(5, 4) * 5).requires_grad_()
    out, ref = traced(x), fq(x)
    assert _max_diff(out, ref) == 0
    g, = torch.autograd.grad(out.sum(), x)
    g_ref, = torch.autograd.grad(ref.sum(), x)
    assert _max_diff(g, g_ref) == 0


def test_generated_code_never_shadows_a_builtin():
    # a lowered graph's Slice target was the global `slice`, so the literal
    # slice(None, None, None) of an index_select in the same graph called it (TypeError):
    # compile/script/optimize_for_inference of x.index_select(...) next to x[:, a:b]
    i = torch.tensor([0, 1])

    def fn(x):
        return x.index_select(1, i) + x[:, 1:2]
    x = torch.randn(2, 5, 3)
    assert _max_diff(torch.compile(fn, fullgraph=True)(x), fn(x)) == 0
    m = nn.CrossMapLRN2d(3).eval()
    x = torch.randn(2, 5, 4, 4)
    assert _max_diff(torch.jit.script(m)(x), m(x)) == 0


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_embedding_bag_max_backward_in_half_dtypes(dtype):
    # its backward read the weight with .numpy(): TypeError for bfloat16 (found training
    # the zoo in bfloat16); the gradient is float32's, rounded
    torch.manual_seed(1)
    m = nn.EmbeddingBag(10, 4, mode="max")
    half = copy.deepcopy(m).to(getattr(torch, dtype))
    with torch.no_grad():
        m.weight.copy_(half.weight.float())
    x = torch.randint(0, 10, (3, 5))
    (half(x).float() * torch.arange(4.0)).sum().backward()
    (m(x) * torch.arange(4.0)).sum().backward()
    assert half.weight.grad.dtype == half.weight.dtype
    assert _max_diff(half.weight.grad, m.weight.grad) == 0


def test_modules_computing_on_the_host_are_called_not_frozen():
    # a dynamic quantized LSTM/GRUCell (NumPy loops) and QAT observers were traced through:
    # the example's result became a constant (the LSTM raised NotImplementedError, the
    # cell ignored its input); now call_module nodes run at each call, as eager does
    import nbtorch.ao.quantization as tq
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for layer, x, other in ((nn.LSTM(3, 4), torch.randn(5, 2, 3), torch.randn(7, 3, 3)),
                                (nn.GRUCell(3, 4), torch.randn(2, 3), torch.randn(4, 3))):
            m = tq.quantize_dynamic(nn.Sequential(layer), dtype=torch.qint8).eval()
            traced = torch.jit.trace(m, (x,))
            torch.testing.assert_close(traced(other), m(other), rtol=0, atol=0)
        m = nn.Sequential(tq.QuantStub(), nn.Linear(4, 3), nn.ReLU(), tq.DeQuantStub())
        m.qconfig = tq.get_default_qat_qconfig("fbgemm")
        tq.prepare_qat(m.train(), inplace=True)
        m(torch.randn(5, 4))
        twin = copy.deepcopy(m)
        traced = torch.jit.trace(twin, (torch.randn(5, 4),), check_trace=False)
        twin.load_state_dict(m.state_dict())        # (the trace ran the observers)
        for scale in (1.0, 3.0):                    # observers update as eager's do
            x = torch.randn(5, 4) * scale
            assert _max_diff(traced(x), m(x)) == 0


def test_saved_scripted_graph_refuses_inputs_of_another_kind(tmp_path):
    # a scripted function is saved as the trace of its last call: loaded, a 2-D input ran
    # the 3-D branch (shape (4,) where the code gives (3, 4)), silently
    def by_rank(x):
        if x.dim() == 3:
            return x.sum(0)
        return x * 2

    def by_size(x):
        return x * 2 if x.shape[0] > 3 else x - 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn, example, same, other in ((by_rank, (2, 3, 4), (5, 3, 4), (3, 4)),
                                         (by_size, (5, 2), (5, 2), (2, 2))):
            scripted = torch.jit.script(fn)
            scripted(torch.randn(*example))
            torch.jit.save(scripted, tmp_path / "s.nbj")
            loaded = torch.jit.load(tmp_path / "s.nbj")
            x = torch.randn(*same)
            assert _max_diff(loaded(x), fn(x)) == 0
            with pytest.raises(RuntimeError, match="saved from nbtorch.jit.script"):
                loaded(torch.randn(*other))
            with pytest.raises(RuntimeError, match="float64"):
                loaded(torch.randn(*same, dtype=torch.float64))
        # no size read as a Python value: any batch size
        scripted = torch.jit.script(nn.Sequential(nn.Linear(3, 2)))
        scripted(torch.randn(4, 3))
        torch.jit.save(scripted, tmp_path / "m.nbj")
    assert torch.jit.load(tmp_path / "m.nbj")(torch.randn(7, 3)).shape == (7, 2)


def test_script_specialises_per_input_kind_and_refuses_data_dependent_flow():
    def loop(x, n: int = 2, flag: bool = False):
        out = [x[i] * n + i for i in range(x.shape[0])]     # a list as long as dim 0
        if x.dtype == torch.float64:
            out.append(x.sum(0))
        return [o.relu() for o in out] if flag else out
    scripted = torch.jit.script(loop)
    for x, kw in ((torch.randn(2, 3), {}), (torch.randn(4, 3), {"n": 3}),
                  (torch.randn(4, 3, dtype=torch.float64), {"flag": True}),
                  (torch.randn(2, 3), {"n": 2.5})):
        got, want = scripted(x, **kw), loop(x, **kw)
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert _max_diff(a, b) <= 1e-6          # (a fused multiply-add rounds once)
    for fn, what in ((lambda x: x * 2 if x.sum() > 0 else x, "boolean"),
                     (lambda x: x * x.max().item(), "number"),
                     (lambda x: x[int(x.argmax())], "integer"),
                     (lambda x: x[x > 0].sum(), "data-dependent output shape")):
        with pytest.raises(torch.jit.ScriptError, match=what):
            torch.jit.script(fn)(torch.randn(5))


class _DictOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 3), nn.Linear(4, 2)

    def forward(self, x, y):
        return {"a": self.a(x) * 2, "b": (self.b(y), self.a(y).relu())}


def test_dict_outputs_save_twice_load_twice_retrace_and_bad_files(tmp_path):
    import io
    m = _DictOut()
    x, y = torch.randn(5, 4), torch.randn(5, 4)
    traced = torch.jit.trace(m, (x, y), strict=False)
    path = tmp_path / "d.nbj"
    torch.jit.save(traced, path)
    traced.save(path)                                   # over the same file
    first, second = torch.jit.load(path), torch.jit.load(path)
    assert first.a.weight is not second.a.weight        # independent copies
    again = torch.jit.trace(first, (x, y), strict=False)     # a loaded module re-traced
    torch.jit.save(again, tmp_path / "again.nbj")
    buf = io.BytesIO()
    torch.jit.save(traced, buf)
    buf.seek(0)
    for loaded in (first, second, again, torch.jit.load(tmp_path / "again.nbj"),
                   torch.jit.load(buf, map_location="cpu")):
        _assert_same(loaded(x, y), m(x, y), "loaded")
    data = path.read_bytes()
    for bad in (b"", data[:10], data[:len(data) // 2], data[:-1], bytes(range(256)) * 2):
        path.write_bytes(bad)
        with pytest.raises(RuntimeError, match="truncated or corrupted|not a valid"):
            torch.jit.load(path)
    mid = bytearray(data)
    mid[len(data) // 2] ^= 0x40                         # inside a stored record
    path.write_bytes(bytes(mid))
    with pytest.raises(RuntimeError, match="corrupted"):
        torch.jit.load(path)


def test_forward_hooks_are_traced_at_the_root_and_refused_when_saving_a_layers(tmp_path):
    # the root's hooks were left out of jit.trace (PyTorch's trace runs them: 57.3 vs 29.2
    # here), and save/export turned a hooked layer into its function without the hook
    # (0.56), silently
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    m.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
    m.register_forward_hook(lambda mod, args, out: out * 2)
    x = torch.ones(2, 3)
    traced = torch.jit.trace(m, (x,))
    assert _max_diff(traced(x), m(x)) == 0
    torch.jit.save(traced, tmp_path / "root.nbj")
    assert _max_diff(torch.jit.load(tmp_path / "root.nbj")(x), m(x)) == 0
    m[0].register_forward_hook(lambda mod, args, out: out + 5)
    traced = torch.jit.trace(m, (x,))
    assert _max_diff(traced(x), m(x)) == 0              # the layer is called: its hook runs
    with pytest.raises(RuntimeError, match="forward hook .* registered by user code"):
        torch.jit.save(traced, tmp_path / "layer.nbj")
    with pytest.raises(RuntimeError, match="forward hook .* registered by user code"):
        torch.export.export(m, (x,))


def test_weight_norm_traced_as_the_root_recomputes_its_weight():
    # its pre-hook sets `weight` from g and v: the trace read the assignment as a
    # constant (or raised AttributeError: no `weight` to install), so later g/v changes
    # and their gradients were lost
    torch.manual_seed(0)
    m = nn.utils.weight_norm(nn.Linear(3, 3))
    x = torch.randn(2, 3)
    m(x).sum().backward()
    want = (m.weight_g.grad.clone(), m.weight_v.grad.clone())
    m.zero_grad()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(m, (x,))
    traced(x).sum().backward()
    assert _max_diff(m.weight_g.grad, want[0]) < 1e-6
    assert _max_diff(m.weight_v.grad, want[1]) < 1e-6
    with torch.no_grad():
        m.weight_g.mul_(2)
    assert _max_diff(traced(x), m(x)) < 1e-6


class _ByRank(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if x.dim() == 3:
            return self.lin(x).sum(0)
        return self.lin(x) * 2


def test_freeze_and_optimize_a_called_scripted_module_per_input_kind(tmp_path):
    # freeze/optimize_for_inference of a scripted module already called froze the graph of
    # that call: a 2-D input then took the 3-D branch (shape (4,) where eager gives (3, 4))
    m = _ByRank().eval()
    x3, x2 = torch.randn(2, 3, 4), torch.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for make in (torch.jit.freeze, torch.jit.optimize_for_inference):
            scripted = torch.jit.script(m)
            scripted(x3)
            frozen = make(scripted)
            for x in (x2, x3):
                assert _max_diff(frozen(x), m(x)) == 0
            # frozen and optimized modules save (their last input kind's frozen graph)
            torch.jit.save(frozen, tmp_path / "f.nbj")
            loaded = torch.jit.load(tmp_path / "f.nbj")
            assert _max_diff(loaded(x3), m(x3)) == 0
            with pytest.raises(RuntimeError, match="saved from nbtorch.jit.script"):
                loaded(x2)
        traced = torch.jit.optimize_for_inference(torch.jit.trace(m, (x3,)))
        torch.jit.save(traced, tmp_path / "o.nbj")
    assert _max_diff(torch.jit.load(tmp_path / "o.nbj")(x3), m(x3)) == 0


@torch.jit.script
def _scripted_by_rank(x):
    if x.dim() == 3:
        return x.sum(0)
    return x * 2


class _CallsScripted(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.sub = torch.jit.script(_ByRank())

    def forward(self, x):
        return _scripted_by_rank(self.lin(x)) + self.sub(x)


def test_trace_keeps_the_control_flow_of_scripted_code_it_calls(tmp_path):
    # PyTorch's documented mix of tracing and scripting: traced through, a scripted
    # helper's `if x.dim() == 3` was fixed to the example's branch (a 2-D input gave
    # shape (4,) for eager's (3, 4)), silently; now one node that scripts per input kind
    m = _CallsScripted()
    x3, x2 = torch.randn(2, 3, 4), torch.randn(3, 4)

    @torch.jit.script_if_tracing
    def helper(x):                                  # the same, scripted only when traced
        return x.sum(0) if x.dim() == 3 else x * 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(lambda x: helper(x * 1.5), (x3,))
    for x in (x3, x2):
        assert _max_diff(traced(x), helper(x * 1.5)) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(m, (x3,))
        for x in (x3, x2):
            assert _max_diff(traced(x), m(x)) == 0
        traced(x2).sum().backward()
        assert m.lin.weight.grad is not None and m.sub.lin.weight.grad is not None
        with pytest.raises(RuntimeError, match="scripted function|ScriptedModule"):
            torch.jit.save(traced, tmp_path / "m.nbj")


class _Tied(nn.Module):
    """A language model's tied embedding and output weights."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.out = nn.Linear(4, 10, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, idx):
        return self.out(self.emb(idx).tanh())


def test_tied_weights_stay_tied_when_loaded(tmp_path):
    # the second name of a tied weight was loaded as a separate buffer: the output layer's
    # use got no gradient (1.96 off eager's), and 'out.weight' left the state_dict
    torch.manual_seed(0)
    m = _Tied()
    idx = torch.randint(0, 10, (2, 5))
    torch.jit.save(torch.jit.trace(m, (idx,)), tmp_path / "tied.nbj")
    loaded = torch.jit.load(tmp_path / "tied.nbj")
    assert loaded.emb.weight is loaded.out.weight
    assert list(loaded.state_dict()) == list(m.state_dict())
    assert [n for n, _ in loaded.named_parameters()] == [n for n, _ in m.named_parameters()]
    _loss(loaded(idx)).backward()
    _loss(m(idx)).backward()
    assert _max_diff(loaded.emb.weight.grad, m.emb.weight.grad) < 1e-6
    loaded.load_state_dict(m.state_dict())
    assert copy.deepcopy(loaded).out.weight is not None


def test_symbolic_traced_zoo_graphs_recompile_after_an_edit():
    import operator
    for name in ("Conv2d-reflect", "TransformerEncoderLayer", "Containers", "Fold"):
        m, args, flags = _build(name)
        try:
            gm = torch.fx.symbolic_trace(copy.deepcopy(m))
        except torch.fx.proxy.TraceError:
            continue
        out = next(n for n in gm.graph.nodes if n.op == "output")
        first = out.args[0][0] if isinstance(out.args[0], tuple) else out.args[0]
        with gm.graph.inserting_after(first):
            doubled = gm.graph.call_function(operator.mul, (first, 2.0))
        first.replace_all_uses_with(doubled, delete_user_cb=lambda n: n is not doubled)
        gm.recompile()
        got, want = _leaves(gm(*args)), _leaves(m(*args))
        _assert_same(got[0], want[0] * 2.0, name)
