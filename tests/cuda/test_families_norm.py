"""batch / layer / group norm on CUDA against the CPU: outputs, running stats, gradients."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn.functional as F

pytestmark = pytest.mark.cuda


def _pair(shape, seed=0, dtype=np.float64):
    x = nbtorch.tensor((np.random.default_rng(seed).standard_normal(shape) * 2 + 1)
                       .astype(dtype))
    return x, x.to("cuda")


def _same(c, g, tol=1e-9):
    assert g.device.type == "cuda" and c.shape == g.shape and c.dtype == g.dtype
    np.testing.assert_allclose(g.detach().cpu().numpy(), c.detach().numpy(), rtol=tol,
                               atol=tol)


def _grads(fn, shapes):
    """fn(*tensors) on both devices; compare the output and every input's gradient."""
    pairs = [_pair(s, seed=i) for i, s in enumerate(shapes)]
    outs = []
    for k in range(2):
        ts = [p[k].detach().requires_grad_(True) for p in pairs]
        y = fn(*ts)
        w = nbtorch.tensor(np.random.default_rng(9).standard_normal(tuple(y.shape)))
        (y * w.to(y.device)).sum().backward()
        outs.append((y, [t.grad for t in ts]))
    _same(outs[0][0], outs[1][0])
    for c, g in zip(outs[0][1], outs[1][1]):
        _same(c, g)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5)])
def test_batch_norm_train_and_running_stats(shape):
    rms = [nbtorch.zeros(3, device=d) for d in ("cpu", "cuda")]
    rvs = [nbtorch.ones(3, device=d) for d in ("cpu", "cuda")]
    _grads(lambda x, w, b: F.batch_norm(x, rms[x.device.type == "cuda"],
                                        rvs[x.device.type == "cuda"], w, b, training=True),
           [shape, (3,), (3,)])
    _same(rms[0], rms[1], 1e-6)
    _same(rvs[0], rvs[1], 1e-6)


def test_batch_norm_eval_and_no_affine():
    rm, rv = nbtorch.tensor([0.5, -1.0, 2.0]), nbtorch.tensor([1.5, 0.5, 2.0])
    _grads(lambda x: F.batch_norm(x, rm.to(x.device), rv.to(x.device), training=False),
           [(2, 3, 4)])
    _grads(lambda x: F.batch_norm(x, None, None, training=True), [(2, 3, 4)])


def test_layer_norm():
    _grads(lambda x, w, b: F.layer_norm(x, (5,), w, b), [(2, 3, 5), (5,), (5,)])
    _grads(lambda x: F.layer_norm(x, (3, 5)), [(2, 3, 5)])


def test_group_norm():
    _grads(lambda x, w, b: F.group_norm(x, 2, w, b), [(2, 4, 3), (4,), (4,)])
    _grads(lambda x: F.group_norm(x, 1), [(2, 2, 2, 2)])


def test_float32_layer_and_batch_norm():
    x, xg = _pair((4, 6), dtype=np.float32)
    _same(F.layer_norm(x, (6,)), F.layer_norm(xg, (6,)), 1e-5)
    _same(F.batch_norm(x, None, None, training=True),
          F.batch_norm(xg, None, None, training=True), 1e-5)
