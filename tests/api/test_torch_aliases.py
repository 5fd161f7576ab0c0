"""The torch-level forms of nn.functional ops, the in-place functions, the RNN functions
and the normalization primitives, each called with ATen's signature on PyTorch and
nbtorch and compared (values, dtypes, shapes; gradients where PyTorch has them)."""
import numpy as np
import pytest

import nbtorch

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

RNG = np.random.default_rng(3)
X4 = RNG.standard_normal((2, 4, 5, 5))      # N, C, H, W
X3 = RNG.standard_normal((2, 4, 7))          # N, C, L
W2 = RNG.standard_normal((3, 4, 3, 3))
W1 = RNG.standard_normal((3, 4, 3))
WT = RNG.standard_normal((4, 3, 3))
C4 = RNG.standard_normal(4)
P4 = RNG.random(4) + 0.5
V5 = RNG.standard_normal((2, 5))
T5 = RNG.random((2, 5))
LBL = np.array([1.0, -1.0])
IDX = np.array([[0, 2, 4], [1, 1, 3]])
EMB = RNG.standard_normal((6, 3))


class NoGrad(np.ndarray):
    """An input that must not require grad (running statistics)."""


def ng(a):
    return np.asarray(a).view(NoGrad)

# name -> call(m, *arrays as module tensors) and the arrays it takes
CASES = {
    "conv1d": (lambda m, x, w: m.conv1d(x, w, None, 2, 1), (X3, W1)),
    "conv2d": (lambda m, x, w, b: m.conv2d(x, w, b[:3], 1, 1, 1, 1), (X4, W2, C4)),
    "conv3d": (lambda m, x, w: m.conv3d(x.unsqueeze(2), w.unsqueeze(2)), (X4, W2)),
    "conv_transpose1d": (lambda m, x, w: m.conv_transpose1d(x, w, None, 2), (X3, WT)),
    "conv_transpose2d": (lambda m, x, w: m.conv_transpose2d(x, w.unsqueeze(-1)), (X4, WT)),
    "conv_transpose3d": (lambda m, x, w: m.conv_transpose3d(x.unsqueeze(2),
                                                            w[..., None, None]), (X4, WT)),
    "conv_tbc": (lambda m, x, w, b: m.conv_tbc(x.permute(2, 0, 1).contiguous(),
                                               w.permute(2, 1, 0).contiguous(), b[:3], 1),
                 (X3, W1, C4)),
    "convolution": (lambda m, x, w: m.convolution(x, w, None, [1, 1], [1, 0], [1, 1], False,
                                                  [0, 0], 1), (X4, W2)),
    "convolution transposed": (lambda m, x, w: m.convolution(x, w, None, [2], [0], [1], True,
                                                             [1], 1), (X3, WT)),
    "max_pool1d": (lambda m, x: m.max_pool1d(x, 3), (X3,)),
    "max_pool2d": (lambda m, x: m.max_pool2d(x, 2, [], 1), (X4,)),
    "max_pool3d": (lambda m, x: m.max_pool3d(x.unsqueeze(0), 2), (X4,)),
    "max_pool1d_with_indices": (lambda m, x: m.max_pool1d_with_indices(x, 2, 1), (X3,)),
    "avg_pool1d": (lambda m, x: m.avg_pool1d(x, 3, 2, 1, True, False), (X3,)),
    "adaptive_avg_pool1d": (lambda m, x: m.adaptive_avg_pool1d(x, 3), (X3,)),
    "adaptive_max_pool1d": (lambda m, x: m.adaptive_max_pool1d(x, 3), (X3,)),
    "batch_norm": (lambda m, x, w, b: m.batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
                   (X4, P4, C4)),
    "batch_norm eval": (lambda m, x, mu, v: m.batch_norm(x, None, None, mu, v, False, 0.1, 1e-5,
                                                         False), (X4, ng(C4), ng(P4))),
    "instance_norm": (lambda m, x, w: m.instance_norm(x, w, None, None, None, True, 0.1, 1e-5,
                                                      False), (X4, P4)),
    "layer_norm": (lambda m, x: m.layer_norm(x, [5, 5]), (X4,)),
    "group_norm": (lambda m, x, w, b: m.group_norm(x, 2, w, b), (X4, P4, C4)),
    "rms_norm": (lambda m, x: m.rms_norm(x, [5]), (X4,)),
    "native_batch_norm": (lambda m, x: m.native_batch_norm(x, None, None, None, None, True,
                                                           0.1, 1e-5), (X4,)),
    "native_batch_norm eval": (lambda m, x, mu, v: m.native_batch_norm(x, None, None, mu, v,
                                                                       False, 0.1, 1e-5),
                               (X4, ng(C4), ng(P4))),
    "native_layer_norm": (lambda m, x, w: m.native_layer_norm(x, [5], w[:1].expand(5), None,
                                                              1e-5), (X4, P4)),
    "native_group_norm": (lambda m, x: m.native_group_norm(x, None, None, 2, 4, 25, 2, 1e-5),
                          (X4,)),
    "embedding": (lambda m, w, i: m.embedding(w, i.long()), (EMB, IDX)),
    "embedding padding": (lambda m, w, i: m.embedding(w, i.long(), 1), (EMB, IDX)),
    "embedding_bag mean": (lambda m, w, i: m.embedding_bag(w, i.long().reshape(-1),
                                                           m.tensor([0, 2, 2]), False, 1),
                           (EMB, IDX)),
    "embedding_bag max": (lambda m, w, i: m.embedding_bag(w, i.long().reshape(-1),
                                                          m.tensor([0, 2, 2]), False, 2),
                          (EMB, IDX)),
    "embedding_bag sum": (lambda m, w, i: m.embedding_bag(w, i.long().reshape(-1),
                                                          m.tensor([0, 4]), False, 0),
                          (EMB, IDX)),
    "dropout eval": (lambda m, x: m.dropout(x, 0.3, False), (X3,)),
    "alpha_dropout eval": (lambda m, x: m.alpha_dropout(x, 0.3, False), (X3,)),
    "feature_dropout eval": (lambda m, x: m.feature_dropout(x, 0.3, False), (X3,)),
    "feature_alpha_dropout eval": (lambda m, x: m.feature_alpha_dropout(x, 0.3, False), (X3,)),
    "native_dropout eval": (lambda m, x: m.native_dropout(x, 0.3, False), (X3,)),
    "kl_div": (lambda m, x, t: m.kl_div(x, t), (V5, T5)),
    "kl_div mean": (lambda m, x, t: m.kl_div(x, t, 1), (V5, T5)),
    "cosine_embedding_loss mean": (lambda m, a, b, y: m.cosine_embedding_loss(a, b, y, 0.1, 1),
                                   (V5, T5, LBL)),
    "kl_div sum log_target": (lambda m, x, t: m.kl_div(x, t, 2, log_target=True), (V5, V5)),
    "bce_with_logits": (lambda m, x, t: m.binary_cross_entropy_with_logits(x, t, None, None, 0),
                        (V5, T5)),
    "cosine_embedding_loss": (lambda m, a, b, y: m.cosine_embedding_loss(a, b, y, 0.1),
                              (V5, T5, LBL)),
    "hinge_embedding_loss": (lambda m, x, y: m.hinge_embedding_loss(x, y.sign(), 1.0, 2),
                             (V5, V5)),
    "margin_ranking_loss": (lambda m, a, b, y: m.margin_ranking_loss(a[0], b[0], y[0].sign()),
                            (V5, T5, V5)),
    "poisson_nll_loss": (lambda m, x, t: m.poisson_nll_loss(x, t, True, True, 1e-8, 1),
                         (V5, T5)),
    "triplet_margin_loss": (lambda m, a, p, n: m.triplet_margin_loss(a, p, n, 1.0, 2, 1e-6,
                                                                     True), (V5, T5, V5)),
    "bilinear": (lambda m, a, b, w: m.bilinear(a, b, w), (V5, T5, RNG.standard_normal((3, 5, 5)))),
    "cosine_similarity": (lambda m, a, b: m.cosine_similarity(a, b), (V5, T5)),
    "pairwise_distance": (lambda m, a, b: m.pairwise_distance(a, b, 3.0), (V5, T5)),
    "pixel_shuffle": (lambda m, x: m.pixel_shuffle(x, 2), (X4,)),
    "pixel_unshuffle": (lambda m, x: m.pixel_unshuffle(x[..., :4, :4], 2), (X4,)),
    "channel_shuffle": (lambda m, x: m.channel_shuffle(x, 2), (X4,)),
    "native_channel_shuffle": (lambda m, x: m.native_channel_shuffle(x, 2), (X4,)),
    "prelu": (lambda m, x, w: m.prelu(x, w), (X4, P4)),
    "rrelu eval": (lambda m, x: m.rrelu(x), (X3,)),
    "threshold": (lambda m, x: m.threshold(x, 0.1, -2.0), (X3,)),
    "hardshrink": (lambda m, x: m.hardshrink(x, 0.7), (X3,)),
    "Tensor.hardshrink": (lambda m, x: x.hardshrink(), (X3,)),
    "Tensor.prelu": (lambda m, x, w: x.prelu(w), (X4, P4)),
    "constant_pad_nd": (lambda m, x: m.constant_pad_nd(x, [1, -1, 2, 0], 0.5), (X3,)),
    "grid_sampler": (lambda m, x, g: m.grid_sampler(x, g.reshape(2, 5, 5, 2).tanh(), 0, 1,
                                                    False), (X4, RNG.standard_normal(100))),
    "grid_sampler_2d nearest": (lambda m, x, g: m.grid_sampler_2d(
        x, g.reshape(2, 5, 5, 2).tanh(), 1, 2, True), (X4, RNG.standard_normal(100))),
    "grid_sampler_3d": (lambda m, x, g: m.grid_sampler_3d(
        x.unsqueeze(2), g.reshape(2, 1, 5, 5, 3).tanh(), 0, 0, True),
        (X4, RNG.standard_normal(150))),
    "affine_grid_generator": (lambda m, t: m.affine_grid_generator(t.reshape(2, 2, 3),
                                                                   [2, 1, 4, 3], False),
                              (RNG.standard_normal(12),)),
    "norm_except_dim": (lambda m, x: m.norm_except_dim(x, 2, 1), (X4,)),
    "norm_except_dim all": (lambda m, x: m.norm_except_dim(x, 3, -1), (X4,)),
    "frobenius_norm": (lambda m, x: m.frobenius_norm(x, [1, 2], True), (X4,)),
    "nuclear_norm": (lambda m, x: m.nuclear_norm(x[0, 0]), (X4,)),
    "nuclear_norm dim": (lambda m, x: m.nuclear_norm(x, [2, 3]), (X4,)),
    "vander": (lambda m, x: m.vander(x[0], 4, True), (ng(V5),)),  # PyTorch's grad fails
    "vander int": (lambda m, x: m.vander((x[0] * 3).long()), (V5,)),
    "lstm_cell": (lambda m, x, h, w1, w2: m.lstm_cell(x, (h, h), w1, w2), (
        V5, T5, RNG.standard_normal((20, 5)), RNG.standard_normal((20, 5)))),
    "gru_cell": (lambda m, x, h, w1, w2, b: m.gru_cell(x, h, w1, w2, b, b), (
        V5, T5, RNG.standard_normal((15, 5)), RNG.standard_normal((15, 5)),
        RNG.standard_normal(15))),
    "rnn_tanh_cell": (lambda m, x, h, w1, w2: m.rnn_tanh_cell(x, h, w1, w2), (
        V5, T5, RNG.standard_normal((5, 5)), RNG.standard_normal((5, 5)))),
    "rnn_relu_cell": (lambda m, x, h, w1, w2, b: m.rnn_relu_cell(x, h, w1, w2, b, b), (
        V5, T5, RNG.standard_normal((5, 5)), RNG.standard_normal((5, 5)), C4[:1])),
}


def test_ctc_loss():
    if not hasattr(nbtorch.nn.functional, "ctc_loss"):
        pytest.skip("nn.functional.ctc_loss is not there yet")
    lp = np.log(RNG.dirichlet(np.ones(4), size=(6, 2)))
    tg = np.array([[1, 2, 3], [3, 1, 0]])
    for r in (0, 1, 2):
        args = [(m, m.tensor(lp), m.tensor(tg)) for m in (torch, nbtorch)]
        t, n = [m.ctc_loss(a, b, [6, 5], [3, 2], 0, r) for m, a, b in args]
        assert np.allclose(t.numpy(), n.numpy())


def _params(m, hidden, inp, gates, layers, dirs):
    rng = np.random.default_rng(11)
    out = []
    for layer in range(layers):
        size = inp if layer == 0 else hidden * dirs
        for _ in range(dirs):
            out += [m.tensor(rng.standard_normal((gates * hidden, size)), requires_grad=True),
                    m.tensor(rng.standard_normal((gates * hidden, hidden)), requires_grad=True),
                    m.tensor(rng.standard_normal(gates * hidden), requires_grad=True),
                    m.tensor(rng.standard_normal(gates * hidden), requires_grad=True)]
    return out


RNN_CASES = {
    "lstm": lambda m, x, h, p: m.lstm(x, (h, h), p, True, 2, 0.0, False, True, True),
    "gru": lambda m, x, h, p: m.gru(x, h, p, True, 2, 0.0, False, True, True),
    "rnn_tanh": lambda m, x, h, p: m.rnn_tanh(x, h, p, True, 2, 0.0, False, True, False),
    "rnn_relu": lambda m, x, h, p: m.rnn_relu(x, h, p, True, 2, 0.0, False, True, False),
}
_GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _flat(x):
    if isinstance(x, (tuple, list)):
        return [y for item in x for y in _flat(item)]
    return [x]


def _compare(t_out, n_out, tol=1e-9):
    a, b = _flat(t_out), _flat(n_out)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if x is None or y is None:
            assert x is None and y is None
            continue
        assert str(x.dtype).replace("torch.", "") == str(y.dtype).replace("torch.", "")
        assert tuple(x.shape) == tuple(y.shape)
        assert np.allclose(x.detach().numpy(), y.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_pytorch(name):
    call, arrays = CASES[name]
    grad = [a.dtype.kind == "f" and not isinstance(a, NoGrad) for a in arrays]
    tt = [torch.tensor(np.asarray(a), requires_grad=g) for a, g in zip(arrays, grad)]
    nt = [nbtorch.tensor(np.asarray(a), requires_grad=g) for a, g in zip(arrays, grad)]
    t_out, n_out = call(torch, *tt), call(nbtorch, *nt)
    _compare(t_out, n_out)
    t_first, n_first = _flat(t_out)[0], _flat(n_out)[0]
    if t_first.requires_grad and name != "native_channel_shuffle":   # PyTorch: no gradient
        t_first.sin().sum().backward()
        n_first.sin().sum().backward()
        for a, b in zip(tt, nt):
            if a.grad is not None:
                assert np.allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-8), name


@pytest.mark.parametrize("name", sorted(RNN_CASES))
def test_rnn_functions_match_pytorch(name):
    x = RNG.standard_normal((3, 4, 5))
    dirs, layers, hidden = 2, 2, 3
    h = RNG.standard_normal((layers * dirs, 3 if name in ("lstm", "gru") else 4, hidden))
    outs, params = [], []
    for m in (torch, nbtorch):
        p = _params(m, hidden, 5, _GATES[name], layers, dirs)
        out = RNN_CASES[name](m, m.tensor(x), m.tensor(h), p)
        sum(o.sum() for o in _flat(out)).backward()
        outs.append(out)
        params.append(p)
    _compare(*outs)
    for a, b in zip(*params):
        assert np.allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-9)


def test_dropout_variants_train():
    """Training-mode masks: PyTorch's CPU stream after the same seed for dropout and
    native_dropout; shape rules (whole features) for the feature variants."""
    x = np.ones((3, 4, 5))
    for m in (torch, nbtorch):
        m.manual_seed(5)
    assert np.array_equal(torch.dropout(torch.tensor(x), 0.4, True).numpy(),
                          nbtorch.dropout(nbtorch.tensor(x), 0.4, True).numpy())
    nbtorch.manual_seed(1)
    y = nbtorch.feature_dropout(nbtorch.tensor(x), 0.5, True).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and (y == y[:, :, :1]).all()
    z = nbtorch.feature_alpha_dropout(nbtorch.tensor(x), 0.5, True).numpy()
    assert (z == z[:, :, :1]).all()
    out, mask = nbtorch.native_dropout(nbtorch.tensor(x), 0.5, True)
    assert mask.dtype is nbtorch.bool and np.array_equal(out.numpy(), mask.numpy() * 2.0)
    t = nbtorch.tensor(x)
    assert nbtorch.dropout_(t, 0.5, True) is t and nbtorch.alpha_dropout_(t, 0.0, True) is t


INPLACE = ["abs_", "acos_", "arccos_", "arcsin_", "arctan_", "asin_", "atan_", "ceil_", "cos_",
           "cosh_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_",
           "log10_", "log1p_", "log2_", "log_", "neg_", "negative_", "reciprocal_", "round_",
           "rsqrt_", "sigmoid_", "sin_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
           "trunc_"]


def test_inplace_functions_match_pytorch():
    a = RNG.random((2, 3)) * 0.9 + 0.05
    for name in INPLACE:
        t, n = torch.tensor(a), nbtorch.tensor(a)
        rt, rn = getattr(torch, name)(t), getattr(nbtorch, name)(n)
        assert rn is n and np.allclose(t.numpy(), n.numpy(), equal_nan=True), name
    for name, args, kw in [("clamp_", (0.2, 0.5), {}), ("clip_", (), {"max": 0.4}),
                           ("clamp_min_", (0.3,), {}), ("clamp_max_", (0.3,), {}),
                           ("logit_", (), {"eps": 0.1}), ("xlogy_", (2.0,), {}),
                           ("nan_to_num_", (), {"nan": 1.0}),
                           ("addmv_", (np.ones((3, 3)), np.ones(3)), {"beta": 2})]:
        t, n = torch.tensor(a[0]), nbtorch.tensor(a[0])
        conv = [(torch.tensor(v), nbtorch.tensor(v)) if isinstance(v, np.ndarray) else (v, v)
                for v in args]
        getattr(torch, name)(t, *[c[0] for c in conv], **kw)
        getattr(nbtorch, name)(n, *[c[1] for c in conv], **kw)
        assert np.allclose(t.numpy(), n.numpy()), name
    x = nbtorch.tensor([1.0, 2.0, 3.0])
    for alias, ref in [("greater_", "gt_"), ("greater_equal_", "ge_"), ("less_", "lt_"),
                       ("less_equal_", "le_"), ("not_equal_", "ne_")]:
        assert getattr(x.clone(), alias)(2.0).tolist() == getattr(x.clone(), ref)(2.0).tolist()


def test_batch_norm_sync_primitives():
    """The SyncBatchNorm building blocks (CUDA-only in PyTorch) against direct formulas:
    the gathered statistics of two halves equal the whole batch's, and backward_reduce +
    backward_elemt give batch norm's input gradient."""
    x = nbtorch.tensor(X4)
    mean, invstd = nbtorch.batch_norm_stats(x, 1e-5)
    ref = torch.tensor(X4).transpose(0, 1).reshape(4, -1)
    assert np.allclose(mean.numpy(), ref.mean(1).numpy())
    assert np.allclose(invstd.numpy(), (ref.var(1, unbiased=False) + 1e-5).rsqrt().numpy())
    m1, s1 = nbtorch.batch_norm_stats(x[:1], 1e-5)
    m2, s2 = nbtorch.batch_norm_stats(x[1:], 1e-5)
    rm, rv = nbtorch.zeros(4, dtype=nbtorch.float64), nbtorch.ones(4, dtype=nbtorch.float64)
    gm, gs = nbtorch.batch_norm_gather_stats(x, nbtorch.stack([m1, m2]),
                                             nbtorch.stack([s1, s2]), rm, rv, 0.1, 1e-5, 25)
    assert np.allclose(gm.numpy(), mean.numpy()) and np.allclose(gs.numpy(), invstd.numpy())
    assert np.allclose(rv.numpy(), 0.9 + 0.1 * ref.var(1).numpy())
    w = nbtorch.tensor(P4)
    y = nbtorch.batch_norm_elemt(x, w, None, mean, invstd, 1e-5)
    tx = torch.tensor(X4, requires_grad=True)
    ty = torch.batch_norm(tx, torch.tensor(P4), None, None, None, True, 0.1, 1e-5, False)
    assert np.allclose(y.numpy(), ty.detach().numpy())
    g = RNG.standard_normal(X4.shape)
    ty.backward(torch.tensor(g))
    sum_dy, sum_dy_xmu, gw, gb = nbtorch.batch_norm_backward_reduce(
        nbtorch.tensor(g), x, mean, invstd, w, True, True, True)
    gx = nbtorch.batch_norm_backward_elemt(nbtorch.tensor(g), x, mean, invstd, w, sum_dy,
                                           sum_dy_xmu, nbtorch.tensor([50]))
    assert np.allclose(gx.numpy(), tx.grad.numpy())
    m, v = nbtorch.batch_norm_update_stats(x, rm, None, 0.5)
    assert np.allclose(v.numpy(), ref.var(1, unbiased=False).numpy())
