"""Functional and tensor ops exported to ONNX: elementwise, reductions, shapes, indexing,
matrix products, softmax, interpolate, pad, attention; onnxruntime against nbtorch at two
batch sizes (the batch axis is dynamic)."""
import pytest

import nbtorch as torch
import nbtorch.nn as nn
import nbtorch.nn.functional as F

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _inplace_and_factories(a, b):
    y = a.clone()
    y.add_(1)
    y.mul_(torch.zeros(a.size(0), 3, 4) + torch.ones(a.shape[0], 1, 1) * 2)
    return y + a.new_zeros(a.size(0), 3, 4) + torch.full((a.size(0), 3, 4), 3.0) + b.relu_()


OPS = {
    "arith": lambda a, b: (a + b * 2 - 1) / (b.abs() + 1) ** 2 - a.pow(3) + 3 / (a.abs() + 1),
    "compare": lambda a, b: ((a > b) | (a <= 0.5)) & ~(b == a),
    "where": lambda a, b: torch.where(a > 0, a, b * 2),
    "unary": lambda a, b: (a.exp() + a.sin() + a.cos() + a.tanh() + a.sigmoid()
                           + a.abs().sqrt() + a.abs().add(1).log() + a.floor() + a.ceil()
                           + a.neg() + a.abs().rsqrt().clamp(max=3) + a.sign() + torch.erf(a)
                           + a.abs().log1p() + a.expm1() + a.round() + a.trunc()
                           + a.reciprocal().clamp(-2, 2)),
    "reduce": lambda a, b: (a.sum(), a.mean(1), a.amax(-1, keepdim=True), a.prod(2),
                            a.max(1)[0], a.max(1)[1], a.argmax(), a.argmin(1), a.std(1),
                            a.var(), a.logsumexp(2), a.norm(dim=1), (a > 0).all(1),
                            (a > 0).any(), a.min(), torch.max(a, b)),
    "softmax": lambda a, b: (F.softmax(a, -1), F.log_softmax(a, 1), torch.softmax(a, 0)),
    "shape": lambda a, b: (a.view(a.size(0), -1), a.reshape(-1, 4), a.permute(2, 0, 1),
                           a.transpose(1, 2), a.unsqueeze(1).squeeze(1), a.flatten(),
                           a.flatten(1), torch.cat([a, b], 1), torch.stack([a, b], -1),
                           a.chunk(2, 2)[1], a.split([1, 2], 1)[0],
                           a.unsqueeze(0).expand(3, -1, -1, -1), a.repeat(1, 2, 1), a.mT,
                           a.contiguous(), a.flip(1), a.narrow(2, 1, 2), a.select(1, 1),
                           a.unbind(1)[2], a.unflatten(2, (2, 2)), a.movedim(0, 2)),
    "index": lambda a, b: (a[0], a[:, 1:], a[..., ::2], a[:, None, -1],
                           a[:, torch.tensor([0, 2])], a[a.size(0) - 1], a[:, 1:-1, 1],
                           a.index_select(2, torch.tensor([3, 0])),
                           torch.gather(a, 2, torch.zeros(2, 3, 2, dtype=torch.int64))),
    "matmul": lambda a, b: (a @ b.transpose(1, 2), torch.bmm(a, b.transpose(1, 2)),
                            torch.matmul(a, torch.ones(4, 5)),
                            torch.einsum("bij,bkj->bik", a, b)),
    "misc": lambda a, b: (a.cumsum(1), torch.tril(a), a.triu(1), torch.zeros_like(a) + a,
                          torch.ones_like(b), a.masked_fill(a > 0, 0.0), a.float() * 2,
                          a.long(), (a * 10).int() // 3, a.topk(2, -1)[0], a.sort(-1)[0],
                          torch.clamp(a, -0.5, 0.5), a.lerp(b, 0.3),
                          torch.addcmul(a, a, b, value=0.5), F.normalize(a, dim=1),
                          a.remainder(0.7), a.fmod(0.7), F.dropout(a, 0.5, training=False)),
    "attention": lambda a, b: (F.scaled_dot_product_attention(a, b, b),
                               F.scaled_dot_product_attention(a, a, b, is_causal=True)),
    "interpolate": lambda a, b: (F.interpolate(a, scale_factor=2),
                                 F.interpolate(a, size=7, mode="linear"),
                                 F.interpolate(a, scale_factor=3, mode="nearest-exact")),
    "pad": lambda a, b: (F.pad(a, (1, 2)), F.pad(a, (1, 1, 2, 0), value=3.0),
                         F.pad(a, (2, 1), mode="reflect"), F.pad(a, (1, 1), mode="replicate")),
    "linear": lambda a, b: (F.linear(a, torch.ones(5, 4), torch.ones(5)),
                            torch.addmm(torch.ones(5), a[0], torch.ones(4, 5), beta=0.5,
                                        alpha=2.0)),
    "size_arithmetic": lambda a, b: a.reshape(a.shape[0] * a.shape[1], a.shape[2] // 2, 2),
    "arange": lambda a, b: a + torch.arange(a.size(2)).float(),
    "inplace_and_factories": _inplace_and_factories,
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_onnxruntime(check, name):
    torch.manual_seed(0)
    check(Fn(OPS[name]), (torch.randn(2, 3, 4), torch.randn(2, 3, 4)),
          others=[(torch.randn(5, 3, 4), torch.randn(5, 3, 4))])


def test_interpolate_2d_modes(check):
    fn = Fn(lambda x: (F.interpolate(x, size=(5, 7), mode="bilinear"),
                       F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
                       F.interpolate(x, size=(6, 6), mode="nearest"),
                       F.interpolate(x, size=(2, 2), mode="area")))
    check(fn, (torch.randn(2, 3, 4, 4),), others=[(torch.randn(3, 3, 4, 4),)], atol=1e-4)


def test_conv_functional_and_pools(check):
    w = torch.randn(4, 3, 3, 3)
    fn = Fn(lambda x: (F.conv2d(x, w, stride=2, padding=1),
                       F.avg_pool2d(x, 2, ceil_mode=True),
                       F.max_pool2d(x, 3, 1, 1),
                       F.adaptive_max_pool2d(x, 1),
                       F.group_norm(x, 3), F.instance_norm(x),
                       F.layer_norm(x, (5,)), F.local_response_norm(x, 3)))
    check(fn, (torch.randn(2, 3, 5, 5),), others=[(torch.randn(3, 3, 5, 5),)])


def test_integer_and_bool_inputs(check):
    fn = Fn(lambda i, m: ((i * 2 + 1) % 5, i.sum(1), m.logical_not(), i.masked_fill(m, -1),
                          (i > 2).float().mean()))
    i = torch.randint(0, 9, (2, 4))
    check(fn, (i, i > 4), others=[(torch.randint(0, 9, (3, 4)),
                                   torch.randint(0, 2, (3, 4)).bool())])


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)
        self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(c)

    def forward(self, x):
        out = self.b2(self.c2(self.relu(self.b1(self.c1(x)))))
        out += x
        return self.relu(out)


class ResNetish(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU(True))
        self.layer = nn.Sequential(Block(8), Block(8))
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layer(self.stem(x))), 1))


class UNetish(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(2, 4, 3, padding=1)
        self.up = nn.ConvTranspose2d(4, 4, 2, stride=2)
        self.out = nn.Conv2d(6, 1, 1)
        self.unflatten = nn.Unflatten(1, (1, 2))

    def forward(self, x):
        h = self.up(F.max_pool2d(F.relu(self.down(x)), 2))
        return torch.sigmoid(self.out(torch.cat([h, x], 1))), self.unflatten(x.mean((2, 3)))


class MaskedAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.q = nn.Linear(8, 8)

    def forward(self, tokens):
        x = self.emb(tokens)
        scores = torch.einsum("bid,bjd->bij", self.q(x), x) / 8 ** 0.5
        scores = scores.masked_fill((tokens == 0).unsqueeze(1), float("-inf"))
        pooled = F.dropout(x, 0.1, training=self.training).max(dim=1).values
        return (scores.softmax(-1) @ x).sum(1), pooled


MODELS = {
    "resnet_block": (ResNetish, lambda n: torch.randn(n, 3, 16, 16)),
    "unet": (UNetish, lambda n: torch.randn(n, 2, 8, 8)),
    "masked_attention": (MaskedAttention,
                         lambda n: torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0], [6, 7, 8, 9]])[:n]),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_matches_onnxruntime(check, name):
    torch.manual_seed(0)
    make, data = MODELS[name]
    check(make(), (data(2),), others=[(data(3),)])
