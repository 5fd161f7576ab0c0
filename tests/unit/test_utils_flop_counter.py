"""torch.utils.flop_counter / module_tracker: counts per module and op against PyTorch's,
forward and backward, for single ops (every matmul shape path, linear, conv, attention,
einsum) and small models (MLP, CNN, Transformer encoder layer, nanoGPT attention)."""
import math

import numpy as np
import pytest

import nbtorch
from nbtorch.utils.flop_counter import FlopCounterMode, register_flop_formula
from nbtorch.utils.module_tracker import ModuleTracker


def _torch():
    torch = pytest.importorskip("torch")
    import torch.utils.flop_counter as fcm
    aten = torch.ops.aten
    # PyTorch's CPU attention kernel is not in its table: count it as its GPU kernels
    return torch, FlopCounterModeT(fcm), {
        aten._scaled_dot_product_flash_attention_for_cpu: fcm.sdpa_flop.__wrapped__,
        aten._scaled_dot_product_flash_attention_for_cpu_backward:
            fcm.sdpa_backward_flop.__wrapped__}


def FlopCounterModeT(fcm):
    return fcm.FlopCounterMode


def _counts(lib, mode_cls, mapping, build):
    """{module: {op: flops}} of running `build(lib)`'s callable under the mode."""
    fn = build(lib)
    kw = {"custom_mapping": mapping} if mapping else {}
    with mode_cls(display=False, **kw) as fc:
        fn()
    return {m: {str(k).replace("_for_cpu", ""): v for k, v in d.items()}
            for m, d in fc.get_flop_counts().items()}


def _same(build):
    torch, mode_t, mapping = _torch()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _counts(torch, mode_t, mapping, build)
    got = _counts(nbtorch, FlopCounterMode, None, build)
    assert got == expected
    return got


def _t(lib, *shape, rg=False, T=False):
    x = lib.tensor(np.random.rand(*shape).astype(np.float32), requires_grad=rg)
    return x.transpose(0, 1) if T else x


def _bw(fn):
    """Run `fn()` and backward through the sum of its (first) result."""
    def run():
        out = fn()
        out = out[0] if isinstance(out, tuple) else out
        if out.requires_grad:
            out.sum().backward()
    return run


# shapes (a, b), flags (a requires grad, b requires grad, a transposed)
MATMUL = [((3,), (3,)), ((4, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((2, 5, 3), (3, 4)),
          ((2, 5, 3), (3,)), ((3,), (2, 3, 4)), ((5, 3), (2, 3, 4)), ((2, 2, 5, 3), (2, 3, 4)),
          ((1, 5, 3), (4, 3, 2)), ((4, 5, 3), (1, 3, 2)), ((2, 1, 5, 3), (3, 3, 2))]


@pytest.mark.parametrize("shapes", MATMUL, ids=str)
def test_matmul_paths_match_pytorch(shapes):
    sa, sb = shapes
    for ra, rb, ta in [(False, False, False), (True, False, False), (False, True, False),
                       (True, True, False), (False, True, True), (False, False, True)]:
        if ta and len(sa) < 3:
            continue
        shape_a = (sa[1], sa[0]) + sa[2:] if ta else sa

        def build(lib):
            a, b = _t(lib, *shape_a, rg=ra, T=ta), _t(lib, *sb, rg=rb)
            return _bw(lambda: a @ b)
        _same(build)


@pytest.mark.parametrize("x_shape,T,bias", [((4, 8), False, True), ((8,), False, True),
                                            ((2, 3, 8), False, True), ((2, 3, 8), True, True),
                                            ((2, 3, 8), True, False), ((2, 2, 3, 8), False, True),
                                            ((4, 8), False, False)], ids=str)
@pytest.mark.parametrize("x_rg", [False, True])
def test_linear_matches_pytorch(x_shape, T, bias, x_rg):
    def build(lib):
        s = (x_shape[1], x_shape[0]) + x_shape[2:] if T else x_shape
        x, w = _t(lib, *s, rg=x_rg, T=T), _t(lib, 5, 8, rg=True)
        b = _t(lib, 5, rg=True) if bias else None
        return _bw(lambda: lib.nn.functional.linear(x, w, b))
    _same(build)


def test_products_match_pytorch():
    cases = [
        lambda lib: lib.mm(_t(lib, 3, 4, rg=True), _t(lib, 4, 5)),
        lambda lib: lib.bmm(_t(lib, 2, 3, 4, rg=True), _t(lib, 2, 4, 5, rg=True)),
        lambda lib: lib.addmm(_t(lib, 5), _t(lib, 3, 4, rg=True), _t(lib, 4, 5, rg=True)),
        lambda lib: lib.baddbmm(_t(lib, 3, 5), _t(lib, 2, 3, 4), _t(lib, 2, 4, 5, rg=True)),
        lambda lib: _t(lib, 3, 4, rg=True).mm(_t(lib, 4, 5)),
        lambda lib: _t(lib, 3, 4).matmul(_t(lib, 2, 4, 5, rg=True)),
        lambda lib: lib.tensordot(_t(lib, 2, 3, 4, rg=True), _t(lib, 3, 4, 5), dims=2),
        lambda lib: lib.tensordot(_t(lib, 2, 3, 4), _t(lib, 4, 3, 5, rg=True),
                                  dims=([1, 2], [1, 0])),
        lambda lib: lib.inner(_t(lib, 2, 4, rg=True), _t(lib, 3, 4)),
        lambda lib: lib.nn.functional.bilinear(_t(lib, 2, 3, rg=True), _t(lib, 2, 4),
                                               _t(lib, 5, 3, 4)),
        lambda lib: lib.linalg.multi_dot([_t(lib, 3, 4, rg=True), _t(lib, 4, 5),
                                          _t(lib, 5, 2)]),
        lambda lib: lib.linalg.multi_dot([_t(lib, 3, 4), _t(lib, 4, 5), _t(lib, 5, 2),
                                          _t(lib, 2, 6, rg=True)]),
    ]
    for case in cases:
        _same(lambda lib: _bw(lambda: case(lib)))


@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk->", [(3, 4), (4, 5)]), ("i,j->ij", [(4,), (5,)]), ("i,i->", [(4,), (4,)]),
    ("ij,ij->ij", [(3, 4), (3, 4)]), ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 6)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 4, 8), (2, 2, 5, 8)]), ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]), ("iij->j", [(3, 3, 4)])], ids=str)
def test_einsum_matches_pytorch(eq, shapes):
    def build(lib):
        ops = [_t(lib, *s, rg=(i == 0)) for i, s in enumerate(shapes)]
        return _bw(lambda: lib.einsum(eq, *ops))
    _same(build)


def test_einsum_sublist_form_matches_pytorch():
    def build(lib):
        a, b = _t(lib, 3, 4, rg=True), _t(lib, 4, 5)
        return _bw(lambda: lib.einsum(a, [0, 1], b, [1, 2], [0, 2]) + lib.einsum(a, [0, 1],
                                                                                b, [1, 2]))
    _same(build)


def test_convolutions_match_pytorch():
    def conv(name, x, w, x_rg=True, **kw):
        return lambda lib: getattr(lib.nn.functional, name)(
            _t(lib, *x, rg=x_rg), _t(lib, *w, rg=True), **kw)
    cases = [conv("conv1d", (2, 4, 9), (6, 4, 3)),
             conv("conv2d", (2, 4, 8, 8), (6, 2, 3, 3), groups=2, stride=2, padding=1),
             conv("conv2d", (4, 8, 8), (6, 4, 3, 3), x_rg=False),
             conv("conv2d", (1, 3, 8, 8), (4, 3, 4, 4), padding="same"),
             conv("conv3d", (1, 2, 4, 4, 4), (3, 2, 2, 2, 2), dilation=1),
             conv("conv_transpose1d", (2, 4, 5), (4, 3, 3), stride=2),
             conv("conv_transpose2d", (2, 4, 5, 5), (4, 2, 3, 3), groups=2, stride=2,
                  output_padding=1),
             conv("conv_transpose3d", (1, 2, 3, 3, 3), (2, 3, 2, 2, 2))]
    for case in cases:
        _same(lambda lib: _bw(lambda: case(lib)))


@pytest.mark.parametrize("shapes,gqa", [([(2, 4, 6, 8)] * 3, False),
                                        ([(2, 4, 6, 8), (2, 2, 5, 8), (2, 2, 5, 8)], True),
                                        ([(3, 6, 8), (3, 5, 8), (3, 5, 4)], False)], ids=str)
def test_sdpa_matches_pytorch_gpu_formula(shapes, gqa):
    def build(lib):
        q, k, v = (_t(lib, *s, rg=True) for s in shapes)
        return _bw(lambda: lib.nn.functional.scaled_dot_product_attention(
            q, k, v, enable_gqa=gqa))
    _same(build)


# -- models ------------------------------------------------------------------------------------

def _models(lib):
    nn, F = lib.nn, lib.nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 8)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(),
                                          nn.Conv2d(8, 8, 3, stride=2, groups=2),
                                          nn.ConvTranspose2d(8, 4, 2, stride=2))
            self.fc = nn.Linear(4 * 6 * 6, 10)

        def forward(self, x):
            return self.fc(self.features(x).flatten(1))

    class Attention(nn.Module):         # nanoGPT's CausalSelfAttention
        def __init__(self, flash):
            super().__init__()
            self.c_attn, self.c_proj, self.flash = nn.Linear(32, 96), nn.Linear(32, 32), flash

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = (t.view(B, T, 4, C // 4).transpose(1, 2)
                       for t in self.c_attn(x).split(C, dim=2))
            if self.flash:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                y = F.softmax(att, dim=-1) @ v
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class GPT(nn.Module):               # nanoGPT: tied embeddings, a block, the loss
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(50, 32), nn.Embedding(16, 32)
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(32), Attention(True), nn.LayerNorm(32)
            self.mlp = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 32))
            self.lm_head = nn.Linear(32, 50, bias=False)
            self.wte.weight = self.lm_head.weight

        def forward(self, x):
            idx = (x * 49).long()
            h = self.wte(idx) + self.wpe(lib.arange(idx.shape[1]))
            h = h + self.attn(self.ln_1(h))
            h = h + self.mlp(self.ln_2(h))
            logits = self.lm_head(h)
            return F.cross_entropy(logits.view(-1, 50), idx.view(-1))

    return {"mlp": (MLP, (4, 16)), "cnn": (CNN, (2, 3, 8, 8)), "gpt": (GPT, (2, 8)),
            "attn_flash": (lambda: Attention(True), (2, 6, 32)),
            "attn_manual": (lambda: Attention(False), (2, 6, 32)),
            "encoder": (lambda: nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0,
                                                           batch_first=True), (2, 5, 32)),
            "encoder_seq_first": (lambda: nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0),
                                  (5, 2, 32)),
            "rnn": (lambda: _Recurrent(nn, nn.RNN(16, 8)), (3, 2, 16)),
            "gru": (lambda: _Recurrent(nn, nn.GRU(16, 8)), (3, 2, 16)),
            "mha_weights": (lambda: _MHA(nn, need_weights=True), (5, 2, 32)),
            "mha_kdim": (lambda: _MHA(nn, kdim=16), (5, 2, 32))}


def _Recurrent(nn, rnn):
    class R(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = rnn

        def forward(self, x):
            return self.rnn(x)[0]
    return R()


def _MHA(nn, need_weights=False, kdim=None):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(32, 4, kdim=kdim, vdim=kdim, bias=True,
                                              add_bias_kv=need_weights)

        def forward(self, x):
            kv = x[..., :16].contiguous() if kdim else x
            mask = nbtorch_or_torch(x).ones(5, 5, dtype=x.dtype).triu(1) if need_weights \
                else None
            return self.attn(x, kv, kv, need_weights=need_weights, attn_mask=mask)[0]
    return M()


def nbtorch_or_torch(x):
    return nbtorch if isinstance(x, nbtorch.Tensor) else __import__("torch")


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "forward+backward"])
@pytest.mark.parametrize("name", ["mlp", "cnn", "attn_flash", "attn_manual", "encoder",
                                  "encoder_seq_first", "mha_weights", "mha_kdim", "rnn", "gru",
                                  "gpt"])
def test_models_match_pytorch(name, backward):
    def build(lib):
        cls, shape = _models(lib)[name]
        model, x = cls(), _t(lib, *shape)
        if backward:
            return lambda: model(x).sum().backward()      # (gpt: the loss itself)
        return lambda: model(x)
    got = _same(build)
    assert "Global" in got and len(got) > 1


def test_mlp_figures_and_table(capsys):
    model = _models(nbtorch)["mlp"][0]()
    x = nbtorch.randn(4, 16)
    with FlopCounterMode(depth=1) as fc:
        model(x).sum().backward()
    fwd = 2 * 4 * (16 * 32 + 32 * 8)
    assert fc.get_total_flops() == fwd + 2 * 2 * 4 * 32 * 8 + 2 * 4 * 16 * 32
    counts = fc.get_flop_counts()
    assert counts["MLP.fc1"] == {nbtorch.ops.aten.addmm: 2 * 4 * 16 * 32,
                                 nbtorch.ops.aten.mm: 2 * 4 * 16 * 32}
    printed = capsys.readouterr().out
    assert printed.strip() == fc.get_table(1)
    lines = printed.splitlines()
    assert lines[:3] == ["Module            FLOP    % Total",
                         "-------------  -------  ---------",
                         "MLP            14.336K    100.00%"]
    assert lines[3:] == [" - aten.addmm   6.144K     42.86%",
                         " - aten.mm      8.192K     57.14%"]
    assert " - aten.addmm" in fc.get_table() and "MLP.fc2" in fc.get_table(2)
    assert "MLP.fc2" not in fc.get_table(1)


def test_empty_table_and_backward_outside():
    with FlopCounterMode(display=False) as fc:
        pass
    assert fc.get_table().splitlines()[-1] == "Global         0         0%"
    w = nbtorch.randn(3, 3, requires_grad=True)
    with FlopCounterMode(display=False) as fc:
        y = (w @ w).sum()
    y.backward()                        # after the block: not counted (as PyTorch)
    assert fc.get_total_flops() == 54


def test_custom_mapping_and_register():
    aten = nbtorch.ops.aten
    with FlopCounterMode(display=False, custom_mapping={aten.mm: lambda a, b, **kw: 7}) as fc:
        nbtorch.randn(2, 3) @ nbtorch.randn(3, 4)
    assert fc.get_flop_counts()["Global"] == {aten.mm: 7}
    with pytest.raises(ValueError, match="expected each target to be"):
        register_flop_formula("mm")(lambda *a, **k: 0)
    with pytest.raises(RuntimeError, match="duplicate registrations for aten.mm"):
        register_flop_formula(aten.mm)(lambda *a, **k: 0)


def test_module_tracker_parents_and_is_bw():
    log = []
    model = _models(nbtorch)["mlp"][0]()
    with ModuleTracker() as tracker:
        x = nbtorch.randn(2, 16)
        model.fc1.register_forward_pre_hook(
            lambda m, i: log.append(("fw", sorted(tracker.parents), tracker.is_bw)))
        out = model(x)
        model.fc1.weight.register_hook(
            lambda g: log.append(("bw", sorted(tracker.parents), tracker.is_bw)))
        out.sum().backward()
        log.append(("after", sorted(tracker.parents), tracker.is_bw))
    assert log == [("fw", ["Global", "MLP", "MLP.fc1"], False),
                   ("bw", ["Global", "MLP", "MLP.fc1"], True), ("after", ["Global"], False)]


MHA_CALLS = {
    "default": lambda lib, m, x: m(x, x, x),
    "key_padding_mask": lambda lib, m, x: m(x, x, x, key_padding_mask=lib.zeros(
        2, 5, dtype=lib.bool)),
    "mask_no_weights": lambda lib, m, x: m(x, x, x, need_weights=False, key_padding_mask=lib.zeros(
        2, 5, dtype=lib.bool)),
    "unbatched_strided": lambda lib, m, x: m(x[:, 0], x[:, 0], x[:, 0]),
    "cross": lambda lib, m, x: m(x, x[:3].contiguous(), x[:3].contiguous(), need_weights=False),
    "key_is_value": lambda lib, m, x: m(x, x[:3], x[:3]),
}


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("call", sorted(MHA_CALLS))
def test_multihead_attention_matches_pytorch(call, batch_first):
    def build(lib):
        m = lib.nn.MultiheadAttention(16, 2, batch_first=batch_first,
                                      add_zero_attn=call == "key_is_value")
        x = _t(lib, *((2, 5, 16) if batch_first and call != "unbatched_strided"
                      else (5, 2, 16)), rg=True)
        return _bw(lambda: MHA_CALLS[call](lib, m, x))
    _same(build)


def test_module_whose_output_is_the_loss_is_not_entered_in_backward():
    """As PyTorch's multi-grad hook: the node backward() starts from does not count."""
    class M(nbtorch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nbtorch.nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x).sum()
    m, log = M(), []
    with ModuleTracker() as tracker:
        m.fc.weight.register_hook(lambda g: log.append(sorted(tracker.parents)))
        m(nbtorch.randn(4, 3)).backward()
        (m(nbtorch.randn(4, 3)) * 2).backward()
    assert log == [["Global", "M.fc"], ["Global", "M", "M.fc"]]
