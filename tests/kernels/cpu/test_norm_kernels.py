"""Normalisation and embedding-backward kernels against NumPy references.

Each reference gradient formula is itself checked once against central
finite differences in float64, so the kernels are compared with something
independent of the formulas they implement.
"""

import numpy as np
import pytest

norm = pytest.importorskip("nbtorch.kernels.cpu.norm")
embedding = pytest.importorskip("nbtorch.kernels.cpu.embedding")

DTYPES = [np.float32, np.float64]
TOL = {np.float32: 2e-5, np.float64: 1e-11}
# Serial variants in both dtypes; the parallel variants (twice the compile time)
# in float32 only, to keep a cold CI run short.
VARIANTS = pytest.mark.parametrize("dtype,parallel", [(np.float32, False), (np.float64, False),
                                                      (np.float32, True)])


def _rand(shape, dtype, seed=0, offset=0.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + offset).astype(dtype)


# ---------------------------------------------------------------- references

def _bn_ref(x3, w, b, eps):
    x = x3.astype(np.float64)
    mean = x.mean((0, 2))
    var = x.var((0, 2))
    xhat = (x - mean[:, None]) / np.sqrt(var[:, None] + eps)
    return xhat * w[:, None] + b[:, None], mean, var


def _bn_backward_ref(dy3, x3, w, eps):
    x, dy = x3.astype(np.float64), dy3.astype(np.float64)
    m = x.shape[0] * x.shape[2]
    mean, var = x.mean((0, 2)), x.var((0, 2))
    r = 1 / np.sqrt(var + eps)
    xhat = (x - mean[:, None]) * r[:, None]
    gb = dy.sum((0, 2))
    gw = (dy * xhat).sum((0, 2))
    gx = (w * r)[:, None] * (dy - gb[:, None] / m - xhat * gw[:, None] / m)
    return gx, gw, gb


def _rows_ref(x2, eps):
    x = x2.astype(np.float64)
    mean = x.mean(1, keepdims=True)
    rstd = 1 / np.sqrt(x.var(1, keepdims=True) + eps)
    return (x - mean) * rstd, mean[:, 0], rstd[:, 0]


def _ln_backward_ref(dy2, x2, w, eps):
    dy = dy2.astype(np.float64)
    xhat, _, rstd = _rows_ref(x2, eps)
    g = dy * w
    k = x2.shape[1]
    gx = rstd[:, None] * (g - g.mean(1, keepdims=True) - xhat * (g * xhat).mean(1, keepdims=True))
    return gx, (dy * xhat).sum(0), dy.sum(0)


def _gn_ref(x3, G, w, b, eps):
    N, C, S = x3.shape
    xhat, mean, rstd = _rows_ref(x3.reshape(N * G, -1), eps)
    return xhat.reshape(N, C, S) * w[:, None] + b[:, None], mean, rstd


def _gn_backward_ref(dy3, x3, G, w, eps):
    N, C, S = x3.shape
    dy = dy3.astype(np.float64)
    xhat = _gn_ref(x3, G, np.ones(C), np.zeros(C), eps)[0]
    gw = (dy * xhat).sum((0, 2))
    gb = dy.sum((0, 2))
    gxr, _, _ = _ln_backward_ref((dy * w[:, None]).reshape(N * G, -1), x3.reshape(N * G, -1),
                                 np.ones(C // G * S), eps)
    return gxr.reshape(N, C, S), gw, gb


def _numeric_grad(f, x, h=1e-6):
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + h
        fp = f(x)
        x[i] = old - h
        fm = f(x)
        x[i] = old
        g[i] = (fp - fm) / (2 * h)
    return g


def test_reference_formulas_match_finite_differences():
    eps = 1e-5
    x = _rand((3, 4, 2), np.float64, 1)
    dy = _rand((3, 4, 2), np.float64, 2)
    w = _rand(4, np.float64, 3)
    b = np.zeros(4)
    gx, _, _ = _bn_backward_ref(dy, x, w, eps)
    num = _numeric_grad(lambda v: (dy * _bn_ref(v, w, b, eps)[0]).sum(), x)
    np.testing.assert_allclose(gx, num, atol=1e-6)
    x2, dy2, w2 = x.reshape(6, 4), dy.reshape(6, 4), w
    gx, _, _ = _ln_backward_ref(dy2, x2, w2, eps)
    num = _numeric_grad(lambda v: (dy2 * _rows_ref(v, eps)[0] * w2).sum(), x2)
    np.testing.assert_allclose(gx, num, atol=1e-6)
    gx, _, _ = _gn_backward_ref(dy, x, 2, w, eps)
    num = _numeric_grad(lambda v: (dy * _gn_ref(v, 2, w, b, eps)[0]).sum(), x)
    np.testing.assert_allclose(gx, num, atol=1e-6)


# ---------------------------------------------------------------- batch norm

BN_SHAPES = [(5, 3, 7), (9, 6, 1), (1, 2, 4)]


@VARIANTS
@pytest.mark.parametrize("shape", BN_SHAPES)
def test_batch_norm_forward(dtype, shape, parallel):
    x = _rand(shape, dtype, offset=50.0)  # offset: one-pass variance must not cancel
    C = shape[1]
    w, b = _rand(C, np.float64, 1), _rand(C, np.float64, 2)
    mean, var = np.empty(C), np.empty(C)
    if parallel:
        norm.batch_norm_stats_parallel(x, mean, var, 2)
    else:
        norm.batch_norm_stats_serial(x, mean, var)
    ref, rmean, rvar = _bn_ref(x, w, b, 1e-5)
    np.testing.assert_allclose(mean, rmean, rtol=1e-12)
    np.testing.assert_allclose(var, rvar, rtol=1e-9, atol=1e-12)
    scale = w / np.sqrt(var + 1e-5)
    shift = b - mean * scale
    out = np.empty_like(x)
    affine = norm.channel_affine_parallel if parallel else norm.channel_affine_serial
    affine(x, scale, shift, out)
    np.testing.assert_allclose(out, ref, rtol=TOL[dtype], atol=TOL[dtype] * 10)


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_forward_train_and_eval_entry_points(dtype):
    x = _rand((4, 3, 6), dtype, 7)
    w, b = _rand(3, dtype, 8), _rand(3, dtype, 9)
    out, mean, var, invstd = np.empty_like(x), np.empty(3), np.empty(3), np.empty(3)
    norm.batch_norm_forward_train(x, w, b, 1e-5, out, mean, var, invstd)
    ref, rmean, rvar = _bn_ref(x, w.astype(np.float64), b.astype(np.float64), 1e-5)
    tol = TOL[dtype] * 10
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(invstd, 1 / np.sqrt(rvar + 1e-5), rtol=1e-9)
    rm, rv = np.array([0.5, -1, 2], dtype), np.array([1, 4, 0.25], dtype)
    norm.batch_norm_forward_eval(x, w, b, rm, rv, 1e-5, out, mean, invstd)
    want = (x - rm[:, None]) / np.sqrt(rv[:, None] + 1e-5) * w[:, None] + b[:, None]
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    np.testing.assert_array_equal(mean, rm.astype(np.float64))


@VARIANTS
@pytest.mark.parametrize("shape", BN_SHAPES)
def test_batch_norm_backward_training(dtype, shape, parallel):
    x, dy = _rand(shape, dtype, 1), _rand(shape, dtype, 2)
    C, eps = shape[1], 1e-5
    w = _rand(C, dtype, 3)
    mean, var = x.astype(np.float64).mean((0, 2)), x.astype(np.float64).var((0, 2))
    invstd = 1 / np.sqrt(var + eps)
    gx, gw, gb = np.empty_like(x), np.empty(C), np.empty(C)
    args = (dy, x, mean, invstd, w, gx, gw, gb, True, True)
    if parallel:
        norm.batch_norm_backward_parallel(*args, 2)
    else:
        norm.batch_norm_backward_serial(*args)
    rgx, rgw, rgb = _bn_backward_ref(dy, x, w.astype(np.float64), eps)
    tol = TOL[dtype] * 10
    np.testing.assert_allclose(gx, rgx, rtol=tol, atol=tol)
    np.testing.assert_allclose(gw, rgw, rtol=tol, atol=tol)
    np.testing.assert_allclose(gb, rgb, rtol=tol, atol=tol)


@pytest.mark.parametrize("S", [1, 4])
def test_batch_norm_backward_eval_uses_running_stats(S):
    x, dy = _rand((3, 2, S), np.float64, 1), _rand((3, 2, S), np.float64, 2)
    rmean, rvar, w = np.array([0.5, -1.0]), np.array([2.0, 0.25]), np.array([1.5, -2.0])
    invstd = 1 / np.sqrt(rvar + 1e-5)
    gx, gw, gb = np.empty_like(x), np.empty(2), np.empty(2)
    norm.batch_norm_backward(dy, x, rmean, invstd, w, gx, gw, gb, batch_stats=False)
    np.testing.assert_allclose(gx, dy * (w * invstd)[:, None])
    np.testing.assert_allclose(gw, (dy * (x - rmean[:, None]) * invstd[:, None]).sum((0, 2)))
    np.testing.assert_allclose(gb, dy.sum((0, 2)))


def test_batch_norm_backward_skips_grad_input():
    x = _rand((3, 2, 4), np.float64)
    gx = np.full_like(x, 7.0)
    norm.batch_norm_backward(x, x, np.zeros(2), np.ones(2), np.ones(2), gx, np.empty(2),
                             np.empty(2), compute_gx=False)
    assert (gx == 7.0).all()


def test_batch_norm_choosers_match_variants():
    x = _rand((64, 8, 80), np.float32, 4)  # above the parallel threshold
    m1, v1, m2, v2 = (np.empty(8) for _ in range(4))
    norm.batch_norm_stats(x, m1, v1)
    norm.batch_norm_stats_serial(x, m2, v2)
    np.testing.assert_allclose(m1, m2, rtol=1e-12)
    np.testing.assert_allclose(v1, v2, rtol=1e-12)
    o1, o2 = np.empty_like(x), np.empty_like(x)
    norm.channel_affine(x, v1, m1, o1)
    norm.channel_affine_serial(x, v1, m1, o2)
    np.testing.assert_array_equal(o1, o2)
    invstd = 1 / np.sqrt(v1 + 1e-5)
    outs = [(np.empty_like(x), np.empty(8), np.empty(8)) for _ in range(2)]
    norm.batch_norm_backward(x, x, m1, invstd, np.ones(8, np.float32), *outs[0])
    norm.batch_norm_backward_serial(x, x, m1, invstd, np.ones(8, np.float32), *outs[1], True, True)
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- layer norm

@VARIANTS
def test_layer_norm_forward_backward(dtype, parallel):
    M, K, eps = 7, 10, 1e-5
    x, dy = _rand((M, K), dtype, 1, offset=30.0), _rand((M, K), dtype, 2)
    w, b = _rand(K, dtype, 3), _rand(K, dtype, 4)
    out, mean, rstd = np.empty_like(x), np.empty(M), np.empty(M)
    fwd = norm.layer_norm_forward_parallel if parallel else norm.layer_norm_forward_serial
    fwd(x, w, b, eps, out, mean, rstd)
    xhat, rmean, rrstd = _rows_ref(x, eps)
    tol = TOL[dtype] * 10
    np.testing.assert_allclose(out, xhat * w + b, rtol=tol, atol=tol)
    np.testing.assert_allclose(mean, rmean, rtol=1e-12)
    np.testing.assert_allclose(rstd, rrstd, rtol=1e-9)
    gx, gw, gb = np.empty_like(x), np.empty(K), np.empty(K)
    if parallel:
        parts = np.empty((2, 3, K))
        norm.layer_norm_backward_parallel(dy, x, mean, rstd, w, gx, gw, gb, True,
                                          parts[0], parts[1])
    else:
        norm.layer_norm_backward_serial(dy, x, mean, rstd, w, gx, gw, gb, True)
    rgx, rgw, rgb = _ln_backward_ref(dy, x, w.astype(np.float64), eps)
    np.testing.assert_allclose(gx, rgx, rtol=tol, atol=tol)
    np.testing.assert_allclose(gw, rgw, rtol=tol, atol=tol)
    np.testing.assert_allclose(gb, rgb, rtol=tol, atol=tol)


def test_layer_norm_choosers_match_variants():
    x = _rand((300, 128), np.float32, 5)
    w, b = np.ones(128, np.float32), np.zeros(128, np.float32)
    res = []
    for fwd, bwd in [(norm.layer_norm_forward, norm.layer_norm_backward),
                     (norm.layer_norm_forward_serial, None)]:
        out, m, r = np.empty_like(x), np.empty(300), np.empty(300)
        fwd(x, w, b, 1e-5, out, m, r)
        res.append(out)
        if bwd is not None:
            gx, gw, gb = np.empty_like(x), np.empty(128), np.empty(128)
            bwd(x, x, m, r, w, gx, gw, gb)
            ref = _ln_backward_ref(x, x, np.ones(128), 1e-5)
            for got, want in zip((gx, gw, gb), ref):
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(res[0], res[1])


# ---------------------------------------------------------------- group norm

@VARIANTS
@pytest.mark.parametrize("shape,G", [((3, 6, 5), 3), ((2, 4, 1), 4), ((2, 4, 3), 1)])
def test_group_norm_forward_backward(dtype, shape, G, parallel):
    N, C, S = shape
    eps = 1e-5
    x, dy = _rand(shape, dtype, 1, offset=-20.0), _rand(shape, dtype, 2)
    w, b = _rand(C, dtype, 3), _rand(C, dtype, 4)
    out, mean, rstd = np.empty_like(x), np.empty(N * G), np.empty(N * G)
    fwd = norm.group_norm_forward_parallel if parallel else norm.group_norm_forward_serial
    fwd(x, G, w, b, eps, out, mean, rstd)
    ref, rmean, rrstd = _gn_ref(x, G, w.astype(np.float64), b.astype(np.float64), eps)
    tol = TOL[dtype] * 10
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)
    np.testing.assert_allclose(mean, rmean, rtol=1e-12)
    np.testing.assert_allclose(rstd, rrstd, rtol=1e-9)
    gx, gw, gb = np.empty_like(x), np.empty(C), np.empty(C)
    ds, db = np.empty((N, C)), np.empty((N, C))
    bwd = norm.group_norm_backward_parallel if parallel else norm.group_norm_backward_serial
    bwd(dy, x, mean, rstd, w, G, gx, ds, db, gw, gb, True)
    rgx, rgw, rgb = _gn_backward_ref(dy, x, G, w.astype(np.float64), eps)
    np.testing.assert_allclose(gx, rgx, rtol=tol, atol=tol)
    np.testing.assert_allclose(gw, rgw, rtol=tol, atol=tol)
    np.testing.assert_allclose(gb, rgb, rtol=tol, atol=tol)


def test_group_norm_choosers():
    x = _rand((4, 8, 1200), np.float32, 6)
    w, b = np.ones(8, np.float32), np.zeros(8, np.float32)
    out, m, r = np.empty_like(x), np.empty(8), np.empty(8)
    norm.group_norm_forward(x, 2, w, b, 1e-5, out, m, r)
    np.testing.assert_allclose(out, _gn_ref(x, 2, np.ones(8), np.zeros(8), 1e-5)[0], atol=1e-4)
    gx, gw, gb = np.empty_like(x), np.empty(8), np.empty(8)
    norm.group_norm_backward(x, x, m, r, w, 2, gx, gw, gb)
    for got, want in zip((gx, gw, gb), _gn_backward_ref(x, x, 2, np.ones(8), 1e-5)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


# ---------------------------------------------------------------- embedding

@VARIANTS
@pytest.mark.parametrize("padding_idx", [-1, 2])
def test_embedding_backward(dtype, padding_idx, parallel):
    V, D = 5, 6
    idx = np.array([0, 2, 2, 4, 0, 0, 3], dtype=np.int64)
    grad = _rand((idx.size, D), dtype)
    gw = np.zeros((V, D), dtype)
    if parallel:
        embedding.embedding_backward_parallel(grad, idx, padding_idx, gw, 4)
    else:
        embedding.embedding_backward_serial(grad, idx, padding_idx, gw)
    ref = np.zeros((V, D))
    np.add.at(ref, idx, grad.astype(np.float64))
    if padding_idx >= 0:
        ref[padding_idx] = 0
    np.testing.assert_allclose(gw, ref, rtol=TOL[dtype], atol=TOL[dtype])


def test_embedding_backward_chooser_large():
    idx = np.random.default_rng(0).integers(0, 50, 2000)
    grad = _rand((2000, 64), np.float32)
    gw = np.zeros((50, 64), np.float32)
    embedding.embedding_backward(grad, idx, 7, gw)
    ref = np.zeros((50, 64))
    np.add.at(ref, idx, grad.astype(np.float64))
    ref[7] = 0
    np.testing.assert_allclose(gw, ref, rtol=1e-5, atol=1e-4)


def test_layer_norm_forward_goes_parallel_only_with_two_row_tasks(monkeypatch):
    """The parallel forward splits ROWS_PER_TASK rows per task: one task's worth of rows
    (however wide) runs the serial kernel."""
    from nbtorch.kernels.cpu import layer_norm, norm_common
    calls = []
    monkeypatch.setattr(layer_norm, "layer_norm_forward_parallel",
                        lambda *args: calls.append(1))
    monkeypatch.setattr(norm_common.numba, "get_num_threads", lambda: 2)
    tasks = layer_norm.ROWS_PER_TASK
    for rows, parallel in ((tasks, False), (tasks + 1, True)):
        x, w, b = np.ones((rows, 1 << 13), np.float32), np.ones(1 << 13), np.zeros(1 << 13)
        calls.clear()
        layer_norm.layer_norm_forward(x, w.astype(np.float32), b.astype(np.float32), 1e-5,
                                      np.empty_like(x), np.empty(rows), np.empty(rows))
        assert bool(calls) == parallel
