"""Advanced indexing (take/put) and embedding on CUDA against the CPU result."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn.functional as F

pytestmark = pytest.mark.cuda


def _pair(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    x = nbtorch.tensor(rng.standard_normal(shape).astype(dtype))
    return x, x.to("cuda")


def _same(c, g, tol=1e-6):
    assert g.device.type == "cuda" and c.shape == g.shape and c.dtype == g.dtype
    np.testing.assert_allclose(g.cpu().numpy(), c.numpy(), rtol=tol, atol=tol)


def test_getitem_gather_index_select():
    x, xg = _pair((4, 5))
    i = nbtorch.tensor([2, 0, 3, 2])
    ig = i.to("cuda")
    _same(x[i], xg[ig])
    _same(x[i, 1:4], xg[ig, 1:4])
    _same(x[:, [4, 0]], xg[:, [4, 0]])
    _same(x[x > 0], xg[xg > 0])
    j = nbtorch.tensor([[0, 4], [1, 1], [3, 2], [0, 0]])
    _same(nbtorch.gather(x, 1, j), nbtorch.gather(xg, 1, j.to("cuda")))
    _same(nbtorch.index_select(x, 0, i), nbtorch.index_select(xg, 0, ig))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float16, np.int16])
def test_setitem_and_accumulate(dtype):
    x, xg = _pair((4, 3), dtype)
    i = nbtorch.tensor([1, 3])
    v = nbtorch.tensor(np.arange(6, dtype=dtype).reshape(2, 3))
    x[i] = v
    xg[i.to("cuda")] = v.to("cuda")
    _same(x, xg)
    rep = nbtorch.tensor([0, 2, 0, 0])
    vals = nbtorch.tensor(np.arange(12, dtype=dtype).reshape(4, 3))
    x.index_put_((rep,), vals, accumulate=True)
    xg.index_put_((rep.to("cuda"),), vals.to("cuda"), accumulate=True)
    _same(x, xg, 1e-2 if dtype == np.float16 else 1e-6)


def test_scatter_add_and_index_add():
    x, xg = _pair((3, 4))
    idx = nbtorch.tensor([[0, 1, 0, 2], [2, 2, 0, 1]])
    src, srcg = _pair((2, 4), seed=1)
    _same(nbtorch.scatter_add(x, 0, idx, src), nbtorch.scatter_add(xg, 0, idx.to("cuda"), srcg))
    i = nbtorch.tensor([0, 0])
    _same(x.index_add(0, i, src), xg.index_add(0, i.to("cuda"), srcg))


def test_bool_and_strided_values():
    m = nbtorch.tensor([True, False, True, True])
    mg = m.to("cuda")
    idx = nbtorch.tensor([3, 0])
    m[idx] = nbtorch.tensor([False, False])
    mg[idx.to("cuda")] = nbtorch.tensor([False, False]).to("cuda")
    _same(m, mg)
    x, xg = _pair((3, 3))
    v, vg = _pair((3, 2), seed=2)
    x[nbtorch.tensor([0, 2])] = v.t()[:, :3] if False else v.t()[:, [0, 1, 2]]
    xg[nbtorch.tensor([0, 2]).to("cuda")] = vg.t()[:, [0, 1, 2]]
    _same(x, xg)


@pytest.mark.parametrize("padding_idx,freq", [(None, False), (1, True)])
def test_embedding_forward_backward(padding_idx, freq):
    w, wg = _pair((5, 3), np.float64)
    w.requires_grad_(True)
    wg.requires_grad_(True)
    idx = nbtorch.tensor([[0, 1, 4], [4, 4, 2]])
    out = F.embedding(idx, w, padding_idx=padding_idx, scale_grad_by_freq=freq)
    outg = F.embedding(idx.to("cuda"), wg, padding_idx=padding_idx, scale_grad_by_freq=freq)
    _same(out.detach(), outg.detach())
    g, gg = _pair((2, 3, 3), np.float64, seed=3)
    out.backward(g)
    outg.backward(gg)
    _same(w.grad, wg.grad, 1e-12)


def test_embedding_max_norm_renorms_in_place():
    w, wg = _pair((5, 4))
    w, wg = w * 3, wg * 3
    idx = nbtorch.tensor([0, 3, 3, 1])
    out = F.embedding(idx, w, max_norm=1.0)
    outg = F.embedding(idx.to("cuda"), wg, max_norm=1.0)
    _same(out, outg, 1e-5)
    _same(w, wg, 1e-5)
    _same(F.embedding(idx, w.half()), F.embedding(idx.to("cuda"), wg.half()))
