"""Warm start: a second process loads every CPU kernel from Numba's on-disk cache.

One small program touches every CPU kernel family (pointwise ufuncs, copy,
creation, reductions, softmax, scans, sorting, indexing, the Numba matmul,
conv, pool, norm, embedding, optimizers). It runs twice in fresh
interpreters sharing the project's own on-disk cache (the first run loads
what the rest of the suite compiled already and compiles the rest, so the
test adds little compile time to a cold run), logging every cache lookup
(numba's `Cache.load_overload`, used by dispatchers and ufunc loops alike, so
DUFuncs count too) and every compilation (`compiler.compile_extra`). The
second run must compile nothing of nbtorch's and find every kernel in the
cache. A kernel built by a closure, `exec` or from a function argument would
miss (or compile) every run: see DESIGN.md's measured facts.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent("""
    import json, sys
    from numba.core import caching, compiler

    LOG = {}        # kernel -> {"hits", "misses", "compiled"}

    def _entry(f):
        e = LOG.setdefault(f"{f.__module__}.{f.__qualname__}",
                           {"hits": 0, "misses": 0, "compiled": 0})
        return e

    def _load(self, sig, target_context, _orig=caching.Cache.load_overload):
        result = _orig(self, sig, target_context)
        _entry(self._py_func)["hits" if result is not None else "misses"] += 1
        return result

    def _compile(typingctx, targetctx, func, *args, _orig=compiler.compile_extra, **kw):
        _entry(func)["compiled"] += 1
        return _orig(typingctx, targetctx, func, *args, **kw)

    caching.Cache.load_overload = _load          # every cached dispatcher and ufunc loop
    compiler.compile_extra = _compile            # every compilation, cached or not (helpers
                                                 # inlined into a kernel compile with it)

    import numpy as np
    import nbtorch as torch
    import nbtorch.nn.functional as F
    from nbtorch.ops.linalg import use_cpu_matmul

    torch.manual_seed(0)
    x = torch.randn(6, 5, requires_grad=True)
    y = (x + 1.5) * x.exp()                                   # pointwise
    y = y.t().contiguous().t()                                # copy
    s = y.sum(0).sum() + y.amax(1).sum() + y.var(1).sum()     # reductions
    s = s + F.log_softmax(y, 1).sum() + y.cumsum(1).sum()     # softmax, scan
    y3 = y.reshape(1, 6, 5)
    s = s + F.scaled_dot_product_attention(y3, y3, y3, dropout_p=0.2).sum()  # attention
    v, i = y.sort(1)                                          # sort
    s = s + v.sum() + y.gather(1, i).sum() + y[torch.tensor([0, 2])].sum()   # index
    s = s + torch.arange(5.0).sum()                           # creation
    s = s + torch.cdist(y[:2], y[2:4], 1.0).sum()             # distance
    use_cpu_matmul("numba")
    s = s + (y @ x.t()).sum()                                 # matmul (Numba GEMM)
    use_cpu_matmul("blas")
    img = torch.randn(2, 3, 8, 8, requires_grad=True)
    w = torch.randn(4, 3, 3, 3, requires_grad=True)
    cb = torch.randn(4, requires_grad=True)
    h = F.conv2d(img, w, cb, padding=1)                       # conv, conv_gemm
    h = F.max_pool2d(h, 2) + F.avg_pool2d(h, 2)               # pool
    h = F.batch_norm(h, None, None, training=True) + F.layer_norm(h, h.shape[1:])  # norm
    emb = torch.randn(7, 3, requires_grad=True)
    e = F.embedding(torch.tensor([[1, 2], [4, 6]]), emb)     # embedding
    (s + h.sum() + e.sum()).backward()
    for opt in (torch.optim.SGD([x, w], lr=0.1, momentum=0.9), torch.optim.Adam([img, emb]),
                torch.optim.RMSprop([w])):
        opt.step()                                            # optimizers

    a = torch.tensor([0.5, 3.0], dtype=torch.float64)
    torch._standard_gamma(a); torch.poisson(a); torch.binomial(a.round(), a / 4)  # sampling
    L = torch.linalg.cholesky(torch.eye(2, dtype=torch.float64) * 2.0)           # triangular
    torch.linalg.solve_triangular(L, torch.ones(2, 1, dtype=torch.float64), upper=False)
    torch.linalg.ldl_solve(*torch.linalg.ldl_factor(L + L.mT), torch.ones(2, 1,   # ldl
                                                    dtype=torch.float64))
    torch.fft.rfft(torch.ones(4096))                                            # fft
    import nbtorch.ao.quantization as tq                                        # quantized
    qm = tq.quantize_dynamic(torch.nn.Sequential(torch.nn.Linear(5, 3)), {torch.nn.Linear})
    qm(x.detach()); torch.dequantize(torch.quantize_per_tensor(x, 0.1, 3, torch.quint8))
    lp = torch.randn(5, 2, 4).log_softmax(2).requires_grad_()
    F.ctc_loss(lp, torch.tensor([[1, 2], [3, 3]]), [5, 4], [2, 2]).backward()    # ctc
    img = torch.randn(1, 2, 4, 4, requires_grad=True)
    F.grid_sample(img, torch.rand(1, 3, 3, 2), align_corners=False).sum().backward()  # grid
    (F.pad(img, (1, 1, 1, 1), mode="reflect").sum()
     + F.interpolate(img, scale_factor=2).sum()).backward()          # resample_index
    z = torch.randn(30, 5, requires_grad=True)
    (torch.cdist(z, z).sum() + F.normalize(z, dim=1).sum()           # distance_mm, norm_rows
     + F.cosine_similarity(z, z.flip(0)).sum()).backward()
    (F.smooth_l1_loss(z, z.detach() * 0.5)                           # losses
     + F.nll_loss(z.log_softmax(1), torch.tensor([1, 0, 4] * 10))).backward()
    sp = torch.sparse_coo_tensor([[0, 1], [1, 0]], [1., 2.], (2, 5), requires_grad=True)
    torch.sparse.mm(sp, x.detach()[:5]).sum().backward(); sp.detach().to_dense()  # sparse

    json.dump(LOG, sys.stdout)
""")

FAMILIES = ("pointwise", "copy", "creation", "reduce", "reduce_stats", "softmax", "scan",
            "sort", "index", "matmul", "conv", "conv_gemm", "pool", "norm", "embedding", "optim",
            "optim_adam", "optim_adaptive", "sampling", "triangular", "quantized",
            "linalg_ldl", "fft", "ctc", "grid_sample", "attention", "sparse", "softmax_grad",
            "resample_index", "distance_mm", "norm_rows", "losses")


def _run():
    env = dict(os.environ, NUMBA_DISABLE_JIT="0")
    out = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                         env=env, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def _ours(stats):
    """The kernels of nbtorch (not numba's or NumPy's own jitted helpers)."""
    return {k: v for k, v in stats.items()
            if k.startswith(("nbtorch.kernels.", "kernels."))}


@pytest.fixture(scope="module")
def two_runs():
    first = _run()
    second = _run()
    return _ours(first), _ours(second)


def test_every_kernel_family_is_exercised(two_runs):
    first, _ = two_runs
    seen = {"pointwise" if ".scalar." in name else name.split(".")[-2] for name in first}
    missing = [f for f in FAMILIES if f not in seen]
    assert not missing, f"kernel families not compiled by the program: {missing}"


def test_second_process_loads_every_kernel_from_the_cache(two_runs):
    first, second = two_runs
    assert any(v["hits"] + v["misses"] for v in first.values()), \
        "the first run looked no kernel up in the disk cache"
    # a helper called only from other kernels is absent from the second run: the
    # callers' cached code already contains it
    assert set(second) <= set(first), "the second run used kernels the first did not"
    assert second, "the second run loaded no kernel at all"
    again = {k: v for k, v in second.items() if v["misses"] or v["compiled"] or not v["hits"]}
    assert not again, f"kernels compiled again in the second process: {again}"
