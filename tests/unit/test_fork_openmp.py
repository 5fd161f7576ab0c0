"""A child forked after Numba's OpenMP threads started runs every kernel family serially.

GNU OpenMP cannot run in such a child: Numba kills it ("Terminating: fork() called from a
process already using GNU OpenMP"). kernels/cpu/openmp.py marks the child, and each
launcher then picks its serial variant. Each test runs in a fresh interpreter, so this
process's threading state does not matter.
"""
import os
import subprocess
import sys
import textwrap

# The parent runs one big op of each family, checking (by spies on the modules' parallel
# kernels) that it took a parallel variant, then forks; the child, where openmp.USABLE is
# False, runs them again and compares with the parent's results it inherited.
_FORKED_FAMILIES = textwrap.dedent(r"""
    import os, sys, traceback
    import numpy as np
    import nbtorch as torch
    import nbtorch.nn.functional as F
    from nbtorch.kernels.cpu import (conv, embedding, layer_norm, matmul, norm, openmp, optim,
                                     optim_adam, pool, reduce, reduce_stats, softmax)
    from nbtorch.fx.passes.fusion import fuse, fused_kernels
    from nbtorch.fx.passes.lower import lower
    from nbtorch.ops.linalg import use_cpu_matmul

    RAN = set()                        # parallel kernels called since the last clear
    embedding.PARALLEL_MIN_ELEMENTS = 1 << 16   # its parallel variant at a test's size

    def spy(mod, name):
        fn = getattr(mod, name)
        def counted(*args, **kwargs):
            RAN.add(name)
            return fn(*args, **kwargs)
        setattr(mod, name, counted)

    for mod, names in [
            (reduce, "sum_rows_parallel sum_row_chunks_parallel sum_reduce_parallel "
                     "extreme_row_chunks_parallel run_rows_split"),
            (reduce_stats, "var_rows_parallel"),
            (softmax, "softmax_rows_parallel run_rows_split"),
            (layer_norm, "layer_norm_forward_parallel layer_norm_backward_parallel "
                         "group_norm_forward_parallel group_norm_backward_parallel"),
            (norm, "batch_norm_stats_parallel channel_affine_parallel "
                   "batch_norm_backward_parallel"),
            (optim, "sgd_step_parallel"), (optim_adam, "adam_step_parallel"),
            (conv, "_im2col_parallel _col2im_parallel"),
            (pool, "_max_parallel _avg_parallel _avg_backward_parallel"),
            (embedding, "embedding_backward_parallel"), (matmul, "gemm_packed")]:
        for name in names.split():
            spy(mod, name)

    def t(*shape, seed=0, grad=False):
        a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        return torch.tensor(a, requires_grad=grad)

    def fwd_bwd(fn, *xs):
        xs = [t(*s, seed=i, grad=True) for i, s in enumerate(xs)]
        y = fn(*xs)
        y.backward(t(*y.shape, seed=9))
        return [y.detach().numpy()] + [x.grad.numpy() for x in xs]

    def step(opt_cls, **kw):
        p = t(1 << 20, seed=1, grad=True)
        opt = opt_cls([p], **kw)
        p.grad = t(1 << 20, seed=2)
        opt.step()
        return [p.detach().numpy()]

    def matmul_numba():
        use_cpu_matmul("numba")
        try:
            return [(t(160, 160, seed=1) @ t(160, 160, seed=2)).numpy()]
        finally:
            use_cpu_matmul("blas")

    FUSED = []      # made in the parent: the child calls it again on its memoised plan

    def rows(x, b):              # tests/jit/test_fusion.py's program: its kernel is cached
        y = x * 2 + b
        return torch.softmax(y, -1), y.mean(-1, keepdim=True) - 1, F.layer_norm(y, (8,))

    def fused():
        xs = [t(8192, 8, seed=1), t(8, seed=2)]
        if not FUSED:
            low = lower(torch.jit.trace(rows, xs, check_trace=False).graph_module, *xs)
            assert fuse(low) == 1
            assert fused_kernels(low)[0].plan(xs)[-1], "not the parallel fused variant"
            FUSED.append(low)
        return [r.numpy() for r in FUSED[0](*xs)]

    CASES = [   # name, results, parallel kernels the parent must have run
        ("sum", lambda: [t(1 << 20).sum().numpy()], {"sum_row_chunks_parallel"}),
        # (row sums split over the spinning helpers, which a forked child restarts)
        ("sum rows", lambda: [t(2048, 512).sum(1).numpy()], {"run_rows_split"}),
        ("sum dim 0", lambda: [t(2048, 512).sum(0).numpy()], {"sum_reduce_parallel"}),
        ("amax, var", lambda: [t(1 << 20).amax().numpy(), t(2048, 512).var(1).numpy()],
         {"extreme_row_chunks_parallel", "var_rows_parallel"}),
        ("softmax", lambda: [F.softmax(t(512, 512), -1).numpy(),
                             F.log_softmax(t(512, 512), -1).numpy()],
         {"run_rows_split"}),
        ("layer_norm", lambda: fwd_bwd(lambda x, w: F.layer_norm(x, (512,), w), (1024, 512),
                                       (512,)),
         {"layer_norm_forward_parallel", "layer_norm_backward_parallel"}),
        ("batch_norm", lambda: fwd_bwd(lambda x, w: F.batch_norm(x, None, None, w,
                                                                 training=True),
                                       (8, 16, 64, 64), (16,)),
         {"batch_norm_stats_parallel", "channel_affine_parallel",
          "batch_norm_backward_parallel"}),
        ("group_norm", lambda: fwd_bwd(lambda x, w: F.group_norm(x, 4, w), (8, 16, 64, 64),
                                       (16,)),
         {"group_norm_forward_parallel", "group_norm_backward_parallel"}),
        ("sgd", lambda: step(torch.optim.SGD, lr=0.1, momentum=0.9), {"sgd_step_parallel"}),
        ("adam", lambda: step(torch.optim.Adam, lr=1e-3), {"adam_step_parallel"}),
        ("conv2d", lambda: fwd_bwd(lambda x, w: F.conv2d(x, w, padding=1), (1, 64, 96, 96),
                                   (8, 64, 3, 3)),
         {"_im2col_parallel", "_col2im_parallel"}),
        ("max_pool2d", lambda: fwd_bwd(lambda x: F.max_pool2d(x, 3, 1, 1), (8, 32, 64, 64)),
         {"_max_parallel"}),
        ("avg_pool2d", lambda: fwd_bwd(lambda x: F.avg_pool2d(x, 3, 1, 1), (8, 32, 64, 64)),
         {"_avg_parallel", "_avg_backward_parallel"}),
        ("embedding", lambda: fwd_bwd(lambda w: F.embedding(
            torch.tensor(np.arange(1024) % 1000), w), (1000, 128)),
         {"embedding_backward_parallel"}),
        ("matmul numba", matmul_numba, {"gemm_packed"}),
        ("jit fused", fused, set()),
    ]

    expected = {}
    for name, fn, kernels in CASES:
        RAN.clear()
        expected[name] = fn()
        assert kernels <= RAN, f"{name}: the parent ran {sorted(RAN)}, not {sorted(kernels)}"
    from numba.np.ufunc import parallel
    assert parallel._is_initialized and openmp.USABLE

    pid = os.fork()
    if pid == 0:
        failed = 0
        RAN.clear()
        for name, fn, _ in CASES:
            try:
                assert not openmp.USABLE
                for got, want in zip(fn(), expected[name]):
                    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
            except BaseException:
                failed += 1
                print(f"child: {name} failed", flush=True)
                traceback.print_exc()
        RAN.discard("run_rows_split")   # the spinning helpers (no OpenMP) may run here
        if RAN:
            failed += 1
            print(f"child ran parallel kernels {sorted(RAN)}", flush=True)
        sys.stdout.flush()
        os._exit(1 if failed else 0)
    _, status = os.waitpid(pid, 0)
    print("child status", status, "cases", len(CASES))
    sys.exit(0 if status == 0 else 1)
""")

# A DataLoader worker (forked on Linux) reducing a big tensor, after the parent started
# OpenMP's threads.
_DATALOADER = textwrap.dedent(r"""
    import nbtorch as torch
    from nbtorch.utils.data import DataLoader, Dataset
    from numba.np.ufunc import parallel

    class Sums(Dataset):
        def __len__(self):
            return 4
        def __getitem__(self, i):
            return torch.full((1 << 17,), float(i)).sum()

    assert float(torch.ones(1 << 20).sum()) == 1 << 20
    assert parallel._is_initialized
    got = [float(v) for b in DataLoader(Sums(), batch_size=2, num_workers=2) for v in b]
    assert got == [float(i << 17) for i in range(4)], got
    print("ok")
""")


def _run(script):
    env = dict(os.environ, NUMBA_NUM_THREADS="2")     # the parallel variants need 2 threads
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env=env)


def test_forked_child_runs_every_family_serially():
    r = _run(_FORKED_FAMILIES)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "child status 0" in r.stdout


def test_dataloader_workers_after_parallel_kernel():
    r = _run(_DATALOADER)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok" in r.stdout
