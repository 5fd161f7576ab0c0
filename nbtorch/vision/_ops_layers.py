"""Layers of ``torchvision.ops`` that model code builds with: stochastic depth, frozen batch
norm, conv-norm-activation, squeeze-and-excitation and an MLP, as torchvision defines them."""
from nbtorch import nn

__all__ = ["stochastic_depth", "StochasticDepth", "FrozenBatchNorm2d", "Conv2dNormActivation",
           "SqueezeExcitation", "MLP"]


def stochastic_depth(input, p, mode, training=True):
    """Drop whole residual branches: per sample ("row") or for the batch ("batch"), with
    probability `p`, the kept ones scaled by 1 / (1 - p)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = input.new_empty(size).bernoulli_(survival)
    if survival > 0.0:
        noise.div_(survival)
    return input * noise


class StochasticDepth(nn.Module):
    """`stochastic_depth` as a module (active in training mode)."""

    def __init__(self, p, mode):
        super().__init__()
        self.p, self.mode = p, mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"


class FrozenBatchNorm2d(nn.Module):
    """Batch norm with fixed statistics and affine parameters (buffers, never trained)."""

    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        import nbtorch
        self.eps = eps
        self.register_buffer("weight", nbtorch.ones(num_features))
        self.register_buffer("bias", nbtorch.zeros(num_features))
        self.register_buffer("running_mean", nbtorch.zeros(num_features))
        self.register_buffer("running_var", nbtorch.ones(num_features))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        state_dict.pop(prefix + "num_batches_tracked", None)     # saved from a BatchNorm2d
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def forward(self, x):
        scale = self.weight.reshape(1, -1, 1, 1) * (
            self.running_var.reshape(1, -1, 1, 1) + self.eps).rsqrt()
        bias = self.bias.reshape(1, -1, 1, 1) - self.running_mean.reshape(1, -1, 1, 1) * scale
        return x * scale + bias

    def __repr__(self):
        return f"{self.__class__.__name__}({self.weight.shape[0]}, eps={self.eps})"


class Conv2dNormActivation(nn.Sequential):
    """Conv2d, then a norm layer, then an activation (torchvision's building block)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, padding=None,
                 groups=1, norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU, dilation=1,
                 inplace=True, bias=None):
        if padding is None:
            padding = (kernel_size - 1) // 2 * dilation
        if bias is None:
            bias = norm_layer is None
        layers = [nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding,
                            dilation=dilation, groups=groups, bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer(**({} if inplace is None else {"inplace": inplace})))
        super().__init__(*layers)
        self.out_channels = out_channels


class SqueezeExcitation(nn.Module):
    """Channel attention: global pool, two 1x1 convs, a sigmoid gate on the input."""

    def __init__(self, input_channels, squeeze_channels, activation=nn.ReLU,
                 scale_activation=nn.Sigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, input):
        scale = self.fc2(self.activation(self.fc1(self.avgpool(input))))
        return self.scale_activation(scale) * input


class MLP(nn.Sequential):
    """Linear (+ norm) + activation + dropout per hidden size; the last layer is a Linear
    followed by dropout, as torchvision's."""

    def __init__(self, in_channels, hidden_channels, norm_layer=None, activation_layer=nn.ReLU,
                 inplace=None, bias=True, dropout=0.0):
        params = {} if inplace is None else {"inplace": inplace}
        layers, in_dim = [], in_channels
        for hidden_dim in hidden_channels[:-1]:
            layers.append(nn.Linear(in_dim, hidden_dim, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden_dim))
            layers.append(activation_layer(**params))
            layers.append(nn.Dropout(dropout, **params))
            in_dim = hidden_dim
        layers.append(nn.Linear(in_dim, hidden_channels[-1], bias=bias))
        layers.append(nn.Dropout(dropout, **params))
        super().__init__(*layers)
