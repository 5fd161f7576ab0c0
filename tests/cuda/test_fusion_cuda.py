"""Fused CUDA kernels (kernels/cuda/fusion.py) on the simulator: tiny shapes, compared with
the CPU; the compiled graph's backward on CUDA too."""
import numpy as np
import pytest

import nbtorch as torch
import nbtorch.nn.functional as F
from nbtorch.fx.passes.fused_kernel import FusedKernel
from nbtorch.fx.passes.fusion import fuse, fused_kernels
from nbtorch.fx.passes.lower import lower


def _t(*shape, seed=0, grad=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(a, device="cuda", requires_grad=grad)


def chain(x, w, b):
    return torch.tanh(x * w + b) * 0.5 - torch.sigmoid(x) * 2


def rows(x, b):
    y = x * 2 + b
    return torch.softmax(y, -1), y.sum(-1)


def _lowered(fn, *xs):
    traced = torch.jit.trace(fn, xs, check_trace=False)
    return lower(traced.graph_module, *xs)


def test_elementwise_chain_broadcast():
    x, w, b = _t(3, 5), _t(5, seed=1), _t(3, 1, seed=2)
    low = _lowered(chain, x, w, b)
    assert fuse(low) == 1
    fk = fused_kernels(low)[0]
    assert fk.device.type == "cuda"
    got = low(x, w, b)
    assert got.device.type == "cuda"
    ref = chain(*(t.cpu() for t in (x, w, b)))
    np.testing.assert_allclose(got.cpu().numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    src = next(iter(fk.sources().values()))
    assert "@cuda.jit(cache=True)" in src and "device_function(_py_tanh)" in src


def test_row_reductions():
    x, b = _t(4, 6), _t(6, seed=1)
    low = _lowered(rows, x, b)
    assert fuse(low) == 1
    for got, ref in zip(low(x, b), rows(x.cpu(), b.cpu())):
        np.testing.assert_allclose(got.cpu().numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


def test_compiled_backward_on_cuda():
    xs = [_t(16, seed=i, grad=True) for i in range(3)]

    def f(x, w, b):
        return (chain(x, w, b) * x).sum()
    cf = torch.compile(f)
    out = cf(*xs)
    out.backward()
    grads = [x.grad.cpu().numpy() for x in xs]
    cpu = [x.detach().cpu().requires_grad_() for x in xs]
    ref = f(*cpu)
    ref.backward()
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-5)
    for g, c in zip(grads, cpu):
        np.testing.assert_allclose(g, c.grad.numpy(), rtol=1e-4, atol=1e-6)
    cg = [e for e in cf._cache.values()][0].cg
    assert any(isinstance(n.target, FusedKernel) or hasattr(n.target, "fk")
               for n in cg.backward_gm.graph.nodes)
