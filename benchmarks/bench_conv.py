"""Convolution and pooling speed: nbtorch against PyTorch (when installed) or NumPy.

Each case times forward + backward from a given output gradient (all
parameter and input gradients; no loss op in the timing), nbtorch and the
reference in alternating blocks of runs (so both see similar machine load),
and prints best and median times and the ratio of the best times.  Without PyTorch the
reference is a plain NumPy im2col (sliding_window_view + one matmul; the
input gradient by k*k strided adds).  The first row is issue 3's target:
conv2d N=32, 16->32 channels, 28x28, 3x3 (padding 1), <= 2x PyTorch.

Run: python benchmarks/bench_conv.py [--repeat 30] [--threads N]
"""
import argparse
import time

from _threads import THREADS as _THREADS  # noqa: E402  (before NumPy and Numba)

import numpy as np  # noqa: E402

import nbtorch  # noqa: E402
from nbtorch.nn.functional import conv as C  # noqa: E402
from nbtorch.nn.functional import pooling as P  # noqa: E402

try:
    import torch
    if _THREADS:
        torch.set_num_threads(_THREADS)
except ImportError:
    torch = None

# name, (N, C, H, W), conv weight (O, C, k, k) or pooling kernel, padding
CASES = [
    ("conv2d 32x16x28x28 -> 32, 3x3 p1", (32, 16, 28, 28), (32, 16, 3, 3), 1),
    ("conv2d 64x1x28x28 -> 6, 5x5 (LeNet c1)", (64, 1, 28, 28), (6, 1, 5, 5), 0),
    ("conv2d 64x6x12x12 -> 16, 5x5 (LeNet c2)", (64, 6, 12, 12), (16, 6, 5, 5), 0),
    ("max_pool2d 64x6x24x24, 2x2", (64, 6, 24, 24), 2, 0),
    ("avg_pool2d 64x16x8x8, 2x2", (64, 16, 8, 8), 2, 0),
]


def _times_ms(fn, ref_fn, repeat, rounds=3):
    """Best and median (ms) of fn and ref_fn, timed in alternating blocks of runs.

    Blocks, not single interleaved runs: each library's worker threads (BLAS,
    OpenMP) spin for a while after a call and would slow the other one down.
    """
    ours, ref = [], []
    for _ in range(rounds):
        for f, acc in ((fn, ours), (ref_fn, ref)):
            f()
            for _ in range(max(1, repeat // rounds)):
                t0 = time.perf_counter()
                f()
                acc.append(1e3 * (time.perf_counter() - t0))
    return (min(ours), float(np.median(ours))), (min(ref), float(np.median(ref)))


def _inputs(shape, spec, kind):
    """x, weight (conv only) and the output gradient, as float32 NumPy arrays."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32)
    if kind == "conv":
        w = rng.standard_normal(spec, dtype=np.float32) * 0.1
        n, _, h, wd = shape
        return x, w, rng.standard_normal((n, spec[0], h, wd), dtype=np.float32)
    return x, None, None


def _step(lib, shape, spec, pad, kind):
    """forward + backward(grad_out) with nbtorch or torch (same code, `lib` swapped)."""
    x_np, w_np, g_np = _inputs(shape, spec, kind)
    F = C if lib is nbtorch else torch.nn.functional
    x = lib.tensor(x_np, requires_grad=True)
    if kind == "conv":
        w = lib.tensor(w_np, requires_grad=True)
        b = lib.zeros(spec[0], requires_grad=True)
        k = spec[2]
        g = lib.tensor(g_np[:, :, :shape[2] + 2 * pad - k + 1, :shape[3] + 2 * pad - k + 1].copy())

        def step():
            x.grad = w.grad = b.grad = None
            F.conv2d(x, w, b, padding=pad).backward(g)
        return step
    pool = (P if lib is nbtorch else torch.nn.functional)
    pool = pool.max_pool2d if kind == "max" else pool.avg_pool2d
    n, c, h, wd = shape
    g = lib.tensor(np.ones((n, c, h // spec, wd // spec), np.float32))

    def step():
        x.grad = None
        pool(x, spec).backward(g)
    return step


def _numpy_step(shape, spec, pad, kind):
    """A NumPy reference: im2col by sliding_window_view and one matmul per product."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape, dtype=np.float32)
    win = np.lib.stride_tricks.sliding_window_view
    if kind == "conv":
        w = rng.standard_normal(spec, dtype=np.float32)
        o, c, k, _ = spec

        def step():
            xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
            cols = np.ascontiguousarray(win(xp, (k, k), axis=(2, 3)).transpose(0, 2, 3, 1, 4, 5))
            n, oh, ow = cols.shape[:3]
            cols = cols.reshape(n * oh * ow, c * k * k)
            out = cols @ w.reshape(o, -1).T                     # (N*OH*OW, O)
            g = np.ones_like(out)
            gw = g.T @ cols                                      # weight gradient
            gcols = (g @ w.reshape(o, -1)).reshape(n, oh, ow, c, k, k)
            gx = np.zeros_like(xp)
            for i in range(k):
                for j in range(k):
                    gx[:, :, i:i + oh, j:j + ow] += gcols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
            return out, gw, g.sum(0), gx
        return step
    k = spec

    def step():
        v = win(x, (k, k), axis=(2, 3))[:, :, ::k, ::k]
        n, c, oh, ow = v.shape[:4]
        flat = v.reshape(n, c, oh, ow, k * k)
        if kind == "max":
            arg = flat.argmax(-1)
            gx = np.zeros((n, c, oh * k, ow * k, ), np.float32)
            ii, jj = np.divmod(arg, k)
            rows = np.arange(oh)[:, None] * k + ii
            cols = np.arange(ow)[None, :] * k + jj
            np.put_along_axis(gx.reshape(n, c, -1), (rows * ow * k + cols).reshape(n, c, -1),
                              1.0, -1)
            return np.take_along_axis(flat, arg[..., None], -1), gx
        out = flat.mean(-1)
        return out, np.full(x.shape, 1.0 / (k * k), np.float32)
    return step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for BLAS, Numba and torch alike (default: theirs)")
    args = parser.parse_args()
    ref_name = f"torch {torch.__version__}" if torch is not None else "NumPy im2col"
    threads = args.threads or "default"
    print(f"nbtorch vs {ref_name}: forward + backward, float32, {args.repeat} runs each in "
          f"alternating blocks, threads={threads}; times best / median in ms, ratio of the "
          "best times\n")
    print(f"{'case':42s} {'1st call':>9s} {'nbtorch':>15s} {ref_name[:15]:>15s} {'ratio':>6s}")
    for name, shape, spec, pad in CASES:
        kind = "conv" if name.startswith("conv") else name[:3]
        step = _step(nbtorch, shape, spec, pad, kind)
        t0 = time.perf_counter()
        step()
        first = 1e3 * (time.perf_counter() - t0)
        ref_step = (_step(torch, shape, spec, pad, kind) if torch is not None
                    else _numpy_step(shape, spec, pad, kind))
        ours, ref = _times_ms(step, ref_step, args.repeat)
        print(f"{name:42s} {first:7.1f}ms {ours[0]:7.2f} /{ours[1]:6.2f} {ref[0]:7.2f} /"
              f"{ref[1]:6.2f} {ours[0] / ref[0]:5.2f}x")


if __name__ == "__main__":
    main()
