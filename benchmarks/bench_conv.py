"""Convolution and pooling, forward + backward, float32: the cases (see _driver.py).

Each step runs the op forward and backward from a given output gradient (every
input and parameter gradient; no loss op in the timing). nbtorch's and PyTorch's
steps are the same code (`lib` swapped); NumPy's is a plain im2col
(sliding_window_view + one matmul per product; the input gradient by k*k strided
adds). Convolutions are printed as a fraction of the GEMM peak at 3 * 2*N*O*C*k*k*OH*OW
flops (forward, input gradient, weight gradient).

    python benchmarks/bench_conv.py [--only 56x56] [--rounds 5]
"""
from _case import Case

_GROUP = "convolution and pooling, forward+backward, float32"


def _conv_step(shape, wshape, pad):
    def setup(lib):
        import numpy as np
        rng = np.random.default_rng(0)
        n, _, h, wd = shape
        k = wshape[2]
        x = lib.tensor(rng.standard_normal(shape, dtype=np.float32), requires_grad=True)
        w = lib.tensor(rng.standard_normal(wshape, dtype=np.float32) * 0.1, requires_grad=True)
        b = lib.zeros(wshape[0], requires_grad=True)
        out_shape = (n, wshape[0], h + 2 * pad - k + 1, wd + 2 * pad - k + 1)
        g = lib.tensor(rng.standard_normal(out_shape, dtype=np.float32))
        conv2d = lib.nn.functional.conv2d

        def step():
            x.grad = w.grad = b.grad = None
            conv2d(x, w, b, padding=pad).backward(g)
        return step
    return setup


def _pool_step(shape, k, kind):
    def setup(lib):
        import numpy as np
        x = lib.tensor(np.random.default_rng(0).standard_normal(shape, dtype=np.float32),
                       requires_grad=True)
        n, c, h, wd = shape
        g = lib.ones(n, c, h // k, wd // k)
        pool = getattr(lib.nn.functional, kind)

        def step():
            x.grad = None
            pool(x, k).backward(g)
        return step
    return setup


def _numpy_conv(shape, wshape, pad):
    def setup(np):
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape, dtype=np.float32)
        w = rng.standard_normal(wshape, dtype=np.float32)
        o, c, k, _ = wshape
        win = np.lib.stride_tricks.sliding_window_view

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
    return setup


def _numpy_pool(shape, k, kind):
    def setup(np):
        x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
        win = np.lib.stride_tricks.sliding_window_view

        def step():
            v = win(x, (k, k), axis=(2, 3))[:, :, ::k, ::k]
            n, c, oh, ow = v.shape[:4]
            flat = v.reshape(n, c, oh, ow, k * k)
            if kind == "max_pool2d":
                arg = flat.argmax(-1)
                gx = np.zeros((n, c, oh * k, ow * k), np.float32)
                ii, jj = np.divmod(arg, k)
                rows = np.arange(oh)[:, None] * k + ii
                cols = np.arange(ow)[None, :] * k + jj
                np.put_along_axis(gx.reshape(n, c, -1),
                                  (rows * ow * k + cols).reshape(n, c, -1), 1.0, -1)
                return np.take_along_axis(flat, arg[..., None], -1), gx
            return flat.mean(-1), np.full(x.shape, 1.0 / (k * k), np.float32)
        return step
    return setup


def _conv(name, shape, wshape, pad):
    n, c, h, w = shape
    o, _, k, _ = wshape
    oh, ow = h + 2 * pad - k + 1, w + 2 * pad - k + 1
    return Case(name, _GROUP, nbtorch=_conv_step(shape, wshape, pad),
                torch=_conv_step(shape, wshape, pad), numpy=_numpy_conv(shape, wshape, pad),
                flops=3 * 2 * n * o * c * k * k * oh * ow)


def _pool(name, shape, k, kind):
    return Case(name, _GROUP, nbtorch=_pool_step(shape, k, kind), torch=_pool_step(shape, k, kind),
                numpy=_numpy_pool(shape, k, kind))


CASES = [
    _conv("conv2d 32x16x28x28 -> 32, 3x3 p1", (32, 16, 28, 28), (32, 16, 3, 3), 1),
    _conv("conv2d 8x64x56x56 -> 64, 3x3 p1", (8, 64, 56, 56), (64, 64, 3, 3), 1),
    _conv("conv2d 64x1x28x28 -> 6, 5x5 (LeNet c1)", (64, 1, 28, 28), (6, 1, 5, 5), 0),
    _conv("conv2d 64x6x12x12 -> 16, 5x5 (LeNet c2)", (64, 6, 12, 12), (16, 6, 5, 5), 0),
    _pool("max_pool2d 64x6x24x24, 2x2", (64, 6, 24, 24), 2, "max_pool2d"),
    _pool("avg_pool2d 64x16x8x8, 2x2", (64, 16, 8, 8), 2, "avg_pool2d"),
]

if __name__ == "__main__":
    import _driver
    raise SystemExit(_driver.main(["bench_conv"]))
