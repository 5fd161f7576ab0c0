"""Normalisation (batch/layer/group norm, F.normalize) and embedding: functions and modules."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck, gradgradcheck


def _t(a, requires_grad=False):
    return nbtorch.tensor(np.asarray(a), requires_grad=requires_grad)


def _rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _bn_ref(x, w, b, eps=1e-5):
    dims = (0,) + tuple(range(2, x.ndim))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    m, v = x.mean(dims), x.var(dims)
    return (x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + eps) * w.reshape(shape) \
        + b.reshape(shape), m, v


# ---------------------------------------------------------------- batch norm

@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_training_matches_numpy_and_updates_running_stats(shape, dtype):
    x = _rand(*shape, dtype=dtype)
    w, b = _rand(3, seed=1, dtype=dtype), _rand(3, seed=2, dtype=dtype)
    rm, rv = nbtorch.zeros(3, dtype=_t(x).dtype), nbtorch.ones(3, dtype=_t(x).dtype)
    y = F.batch_norm(_t(x), rm, rv, _t(w), _t(b), training=True, momentum=0.2)
    ref, m, v = _bn_ref(x.astype(np.float64), w, b)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert y.dtype == _t(x).dtype
    np.testing.assert_allclose(y.numpy(), ref, rtol=tol, atol=tol)
    n = x.size // 3
    np.testing.assert_allclose(rm.numpy(), 0.2 * m, rtol=1e-5)
    np.testing.assert_allclose(rv.numpy(), 0.8 + 0.2 * v * n / (n - 1), rtol=1e-5)


def test_batch_norm_eval_uses_running_stats():
    x = _rand(4, 2, 3)
    rm, rv = np.array([0.5, -1.0]), np.array([2.0, 0.5])
    y = F.batch_norm(_t(x), _t(rm), _t(rv), training=False, eps=1e-3)
    want = (x - rm[:, None]) / np.sqrt(rv[:, None] + 1e-3)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12)


def test_batch_norm_gradcheck_training_and_eval():
    x = _t(_rand(3, 2, 2), True)
    w, b = _t(_rand(2, seed=1), True), _t(_rand(2, seed=2), True)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b))
    rm, rv = _t([0.1, -0.2]), _t([1.5, 0.7])
    assert gradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=False), (x, w, b))
    xt = _t(_rand(2, 4), True)          # (N, C) with a transposed, non-contiguous input
    assert gradcheck(lambda x: F.batch_norm(x.t(), None, None, training=True), (xt,))


def test_batch_norm_double_backward():
    x = _t(_rand(3, 2, 2), True)
    w = _t(_rand(2, seed=1), True)
    assert gradgradcheck(lambda x, w: F.batch_norm(x, None, None, w, None, training=True),
                         (x, w))


def test_batch_norm_errors():
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when "
                                         r"training, got input size torch.Size\(\[1, 3\]\)"):
        F.batch_norm(nbtorch.randn(1, 3), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(nbtorch.randn(2, 3), nbtorch.zeros(4), nbtorch.ones(3))
    with pytest.raises(NotImplementedError, match="\"batch_norm\" not implemented for 'Long'"):
        F.batch_norm(nbtorch.ones(2, 3, dtype=nbtorch.int64), None, None, training=True)
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(3)(nbtorch.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.BatchNorm1d(3)(nbtorch.randn(2, 3, 4, 4))


def test_batchnorm_module_running_stats_and_eval():
    bn = nn.BatchNorm2d(3, momentum=0.5)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"]
    x = _rand(4, 3, 2, 2)
    bn(_t(x))
    bn(_t(x))
    m, v = x.mean((0, 2, 3)), x.var((0, 2, 3), ddof=1)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.75 * m, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.25 + 0.75 * v, rtol=1e-5)
    assert bn.num_batches_tracked.item() == 2
    bn.eval()
    y = bn(_t(x)).detach().numpy()
    want = (x - bn.running_mean.numpy()[:, None, None]) / np.sqrt(
        bn.running_var.numpy()[:, None, None] + 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    assert bn.num_batches_tracked.item() == 2
    assert repr(bn) == "BatchNorm2d(3, eps=1e-05, momentum=0.5, affine=True, bias=True, " \
                       "track_running_stats=True)"


def test_batchnorm_cumulative_average_and_no_tracking():
    bn = nn.BatchNorm1d(2, momentum=None)
    xs = [_rand(5, 2, seed=s) for s in range(3)]
    for x in xs:
        bn(_t(x))
    np.testing.assert_allclose(bn.running_mean.numpy(), np.mean([x.mean(0) for x in xs], 0),
                               rtol=1e-5)
    free = nn.BatchNorm1d(2, affine=False, track_running_stats=False).eval()
    assert free.running_mean is None and list(free.parameters()) == []
    y = free(_t(xs[0])).numpy()         # no running stats: batch statistics even in eval
    np.testing.assert_allclose(y.mean(0), 0, atol=1e-6)


# ---------------------------------------------------------------- layer norm

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_matches_numpy(dtype):
    x = _rand(2, 3, 4, 5, dtype=dtype)
    w, b = _rand(4, 5, seed=1, dtype=dtype), _rand(4, 5, seed=2, dtype=dtype)
    y = F.layer_norm(_t(x), (4, 5), _t(w), _t(b), eps=1e-4)
    x64 = x.astype(np.float64)
    m, v = x64.mean((2, 3), keepdims=True), x64.var((2, 3), keepdims=True)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y.numpy(), (x64 - m) / np.sqrt(v + 1e-4) * w + b,
                               rtol=tol, atol=tol)


def test_layer_norm_gradcheck_and_double_backward():
    x = _t(_rand(3, 4), True)
    w, b = _t(_rand(4, seed=1), True), _t(_rand(4, seed=2), True)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (4,), w, b), (x, w, b))
    assert gradcheck(lambda x: F.layer_norm(x.t(), (3,)), (x,))
    assert gradgradcheck(lambda x, w: F.layer_norm(x, (4,), w), (x, w))


def test_layer_norm_float16_and_errors():
    x = nbtorch.randn(2, 8).half()
    y = F.layer_norm(x, (8,))
    assert y.dtype == nbtorch.float16
    np.testing.assert_allclose(y.float().numpy().mean(1), 0, atol=1e-2)
    msg = r"Given normalized_shape=\[10\], expected input with shape \[\*, 10\], but got " \
          r"input of size\[3, 5\]"
    with pytest.raises(RuntimeError, match=msg):
        F.layer_norm(nbtorch.randn(3, 5), (10,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
        F.layer_norm(nbtorch.randn(3, 5), (5,), nbtorch.ones(4))


def test_layernorm_module():
    ln = nn.LayerNorm([2, 3], elementwise_affine=True, bias=False)
    assert [n for n, _ in ln.named_parameters()] == ["weight"]
    assert repr(ln) == "LayerNorm((2, 3), eps=1e-05, elementwise_affine=True, bias=False)"
    y = ln(nbtorch.randn(4, 2, 3))
    np.testing.assert_allclose(y.detach().numpy().reshape(4, 6).mean(1), 0, atol=1e-6)


# ---------------------------------------------------------------- group norm

def test_group_norm_matches_numpy_and_gradcheck():
    x = _rand(2, 6, 3)
    w, b = _rand(6, seed=1), _rand(6, seed=2)
    y = F.group_norm(_t(x), 3, _t(w), _t(b))
    g = x.reshape(2, 3, -1)
    ref = ((g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + 1e-5))
    np.testing.assert_allclose(y.numpy(), ref.reshape(x.shape) * w[:, None] + b[:, None],
                               rtol=1e-12, atol=1e-12)
    xt, wt, bt = _t(_rand(2, 4, 2), True), _t(w[:4], True), _t(b[:4], True)
    assert gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (xt, wt, bt))
    assert gradgradcheck(lambda x, w: F.group_norm(x, 2, w), (xt, wt))


def test_group_norm_errors_and_module():
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be "
                                           r"divisible by num_groups, but got input of shape "
                                           r"\[2, 5, 3\] and num_groups=2"):
        F.group_norm(nbtorch.randn(2, 5, 3), 2)
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(4, 6)
    gn = nn.GroupNorm(2, 4)
    assert repr(gn) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    assert gn(nbtorch.randn(3, 4, 5, 5)).shape == (3, 4, 5, 5)


def test_instance_norm_matches_numpy_and_tracks_running_stats():
    x = _rand(2, 3, 4, 5)
    ref = (x - x.mean((2, 3), keepdims=True)) / np.sqrt(x.var((2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(nn.InstanceNorm2d(3)(_t(x)).numpy(), ref, atol=1e-12)
    m = nn.InstanceNorm2d(3, affine=True, track_running_stats=True).double()
    np.testing.assert_allclose(m(_t(x)).detach().numpy(), ref, atol=1e-12)
    np.testing.assert_allclose(m.running_mean.numpy(), 0.1 * x.mean((2, 3)).mean(0), rtol=1e-10)
    np.testing.assert_allclose(m.running_var.numpy(),
                               0.9 + 0.1 * x.var((2, 3), ddof=1).mean(0), rtol=1e-10)
    m.eval()
    rm, rv = m.running_mean.numpy()[:, None, None], m.running_var.numpy()[:, None, None]
    np.testing.assert_allclose(m(_t(x[0])).detach().numpy(), (x[0] - rm) / np.sqrt(rv + 1e-5),
                               atol=1e-12)
    xt = _t(_rand(2, 2, 3), True)
    assert gradcheck(lambda x: F.instance_norm(x), (xt,))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        nn.InstanceNorm1d(3)(nbtorch.randn(2, 3, 1))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        nn.InstanceNorm1d(3)(nbtorch.randn(2, 3, 1, 1))


def test_rms_norm():
    x = _rand(2, 3, 4)
    w = _rand(4, seed=1)
    y = F.rms_norm(_t(x), (4,), _t(w), eps=1e-6)
    np.testing.assert_allclose(y.numpy(), x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w,
                               rtol=1e-12)
    m = nn.RMSNorm([3, 4])
    assert repr(m) == "RMSNorm((3, 4), eps=None, elementwise_affine=True)"
    assert m(nbtorch.randn(2, 3, 4)).shape == (2, 3, 4)
    assert gradcheck(lambda x, w: F.rms_norm(x, (4,), w), (_t(x, True), _t(w, True)))
    with pytest.raises(RuntimeError, match="Given normalized_shape=\\[5\\]"):
        F.rms_norm(_t(x), 5)


def test_normalize():
    x = _rand(3, 4)
    y = F.normalize(_t(x), dim=1)
    np.testing.assert_allclose(y.numpy(), x / np.linalg.norm(x, axis=1, keepdims=True))
    z = F.normalize(nbtorch.zeros(2, 3), p=1, dim=0)
    assert not np.isnan(z.numpy()).any()
    xt = _t(x, True)
    assert gradcheck(lambda x: F.normalize(x, dim=0), (xt,))


# ---------------------------------------------------------------- embedding

def test_embedding_forward_backward_padding():
    w = _rand(5, 3)
    idx = np.array([[0, 2, 2], [4, 1, 0]])
    wt = _t(w, True)
    y = F.embedding(_t(idx), wt, padding_idx=2)
    np.testing.assert_array_equal(y.detach().numpy(), w[idx])
    (y * _t(_rand(2, 3, 3, seed=3))).sum().backward()
    want = np.zeros_like(w)
    np.add.at(want, idx.ravel(), _rand(2, 3, 3, seed=3).reshape(-1, 3))
    want[2] = 0
    np.testing.assert_allclose(wt.grad.numpy(), want, rtol=1e-12)


def test_embedding_gradcheck_double_backward_and_freq():
    w = _t(_rand(4, 2), True)
    idx = _t(np.array([1, 3, 1, 0]))
    assert gradcheck(lambda w: F.embedding(idx, w, padding_idx=2), (w,))  # row 2 unused
    assert gradgradcheck(lambda w: F.embedding(idx, w) ** 2, (w,))
    w.grad = None
    F.embedding(idx, w, scale_grad_by_freq=True).sum().backward()
    np.testing.assert_allclose(w.grad.numpy()[:, 0], [1, 1, 0, 1])


def test_embedding_max_norm_renormalises_rows_in_place():
    w = _t(np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]]))
    F.embedding(_t(np.array([0, 1])), w, max_norm=1.0)
    norms = np.linalg.norm(w.numpy(), axis=1)
    np.testing.assert_allclose(norms[:2], [1.0, 0.5], rtol=1e-6)
    assert norms[2] == 10.0


def test_embedding_errors():
    w = nbtorch.randn(5, 3)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(_t(np.array([0, 5])), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(_t(np.array([-1])), w)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar "
                                           "types: Long, Int"):
        F.embedding(nbtorch.tensor([0.0, 1.0]), w)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(5, 3, padding_idx=5)


def test_embedding_of_zero_width_rows():
    """A (V, 0) weight gives (*indices, 0) and a (V, 0) gradient, as PyTorch's (the
    reshape of the kernel's output could not infer -1 from zero elements)."""
    w = nbtorch.zeros(10, 0, requires_grad=True)
    out = F.embedding(_t(np.array([[1, 2], [3, 9]])), w)
    assert out.shape == (2, 2, 0)
    out.sum().backward()
    assert w.grad.shape == (10, 0)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(_t(np.array([10])), w)        # indices still checked


def test_embedding_module_and_from_pretrained():
    emb = nn.Embedding(10, 4, padding_idx=-1)
    assert emb.padding_idx == 9
    np.testing.assert_array_equal(emb.weight.detach().numpy()[9], 0)
    assert repr(emb) == "Embedding(10, 4, padding_idx=9)"
    assert emb(nbtorch.tensor([[1, 2], [3, 9]])).shape == (2, 2, 4)
    pre = nn.Embedding.from_pretrained(nbtorch.tensor([[1.0, 2.3], [4.0, 5.1]]))
    assert not pre.weight.requires_grad
    np.testing.assert_allclose(pre(nbtorch.tensor([1])).numpy(), [[4.0, 5.1]], rtol=1e-6)
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be "
                                             "2-dimensional"):
        nn.Embedding.from_pretrained(nbtorch.ones(3))


# ---------------------------------------------------------------- against PyTorch

def test_against_torch_norm_layers():
    torch = pytest.importorskip("torch")
    x = _rand(4, 6, 3, 3, dtype=np.float32)
    for ours, theirs in [(nn.BatchNorm2d(6), torch.nn.BatchNorm2d(6)),
                         (nn.GroupNorm(3, 6), torch.nn.GroupNorm(3, 6)),
                         (nn.LayerNorm([3, 3]), torch.nn.LayerNorm([3, 3])),
                         (nn.InstanceNorm2d(6, affine=True, track_running_stats=True),
                          torch.nn.InstanceNorm2d(6, affine=True, track_running_stats=True)),
                         (nn.RMSNorm([3, 3]), torch.nn.RMSNorm([3, 3]))]:
        xo, xt = _t(x, True), torch.tensor(x, requires_grad=True)
        yo, yt = ours(xo), theirs(xt)
        np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), atol=1e-5)
        (yo * yo).sum().backward()
        (yt * yt).sum().backward()
        np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), atol=1e-4)
        for name, t in theirs.state_dict().items():
            np.testing.assert_allclose(ours.state_dict()[name].numpy(), t.numpy(), atol=1e-5)


def test_empty_inputs_give_empty_outputs_and_zero_weight_grads():
    w = nbtorch.ones(4, requires_grad=True)
    for fn, shape in [(lambda x: F.batch_norm(x, None, None, w, training=True), (0, 4)),
                      (lambda x: F.layer_norm(x, (4,), w), (0, 4)),
                      (lambda x: F.group_norm(x, 2, w), (0, 4, 3))]:
        x = nbtorch.randn(*shape, requires_grad=True)
        y = fn(x)
        assert y.shape == shape
        y.sum().backward()
        assert x.grad.shape == shape
        np.testing.assert_array_equal(w.grad.numpy(), 0)
        w.grad = None


def test_against_torch_embedding():
    torch = pytest.importorskip("torch")
    w = _rand(6, 3)
    idx = np.array([[0, 2, 2], [5, 1, 2]])
    g = _rand(2, 3, 3, seed=1)
    for kw in [dict(padding_idx=2), dict(scale_grad_by_freq=True), dict(max_norm=1.0)]:
        wo, wt = _t(w.copy(), True), torch.tensor(w.copy(), requires_grad=True)
        yo = F.embedding(_t(idx), wo, **kw)
        yt = torch.nn.functional.embedding(torch.tensor(idx), wt, **kw)
        np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), atol=1e-12)
        (yo * _t(g)).sum().backward()
        (yt * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(wo.grad.numpy(), wt.grad.numpy(), atol=1e-12)
        np.testing.assert_allclose(wo.detach().numpy(), wt.detach().numpy(), atol=1e-12)


def test_batchnorm_loads_old_checkpoint_without_num_batches_tracked():
    bn = nn.BatchNorm1d(2)
    state = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    state["running_mean"] = nbtorch.tensor([1.0, 2.0])
    nn.BatchNorm1d(2).load_state_dict(state)            # strict: no missing-key error
    other = nn.BatchNorm1d(2)
    other.load_state_dict(state)
    np.testing.assert_array_equal(other.running_mean.numpy(), [1.0, 2.0])


def test_embedding_indices_modified_in_place_before_backward_is_an_error():
    w = nbtorch.randn(4, 2, requires_grad=True)
    idx = nbtorch.tensor([0, 1])
    y = F.embedding(idx, w)
    idx.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
