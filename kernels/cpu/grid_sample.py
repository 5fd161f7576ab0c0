"""grid_sample kernels for the CPU: forward and backward over every sampling point, with
the per-point bodies of `kernels/grid_sample.py` (coordinates, taps).

Contracts (raw C-contiguous float32/float64 arrays, outputs allocated by the op layer;
2-D sampling is the D = 1 case)::

    grid_sample_forward(inp (N,C,D*H*W), grid (N,P,nd), W, H, D, mode, padding, align,
                        out (N,C,P))
        for n, p: out[n, :, p] = sum over the point's taps k of w_k * inp[n, :, idx_k]
    grid_sample_backward(gout (N,C,P), inp, grid, W, H, D, mode, padding, align,
                         gin (N,C,D*H*W) zeroed or None, ggrid (N,P,nd))
        gin[n, :, idx_k] += w_k * gout[n, :, p];  ggrid[n, p] = d loss / d grid[n, p]
"""
import numba
import numpy as np

from nbtorch.kernels.grid_sample import n_taps, point_coords, tap

__all__ = ["grid_sample_forward", "grid_sample_backward"]


@numba.njit(cache=True)
def _forward(inp, grid, W, H, D, mode, padding, align, out):
    N, C, _ = inp.shape
    P, nd = grid.shape[1], grid.shape[2]
    K = n_taps(mode, nd)
    for n in range(N):
        for p in range(P):
            gz = grid[n, p, 2] if nd == 3 else 0.0
            ix, iy, iz, _, _, _ = point_coords(grid[n, p, 0], grid[n, p, 1], gz, W, H, D,
                                               mode, padding, align)
            for c in range(C):
                out[n, c, p] = 0.0
            for k in range(K):
                idx, w, _, _, _ = tap(k, ix, iy, iz, W, H, D, mode, padding, align)
                if idx >= 0:
                    for c in range(C):
                        out[n, c, p] += w * inp[n, c, idx]


@numba.njit(cache=True)
def _backward(gout, inp, grid, W, H, D, mode, padding, align, gin, want_input, ggrid):
    N, C, _ = inp.shape
    P, nd = grid.shape[1], grid.shape[2]
    K = n_taps(mode, nd)
    for n in range(N):
        for p in range(P):
            gz = grid[n, p, 2] if nd == 3 else 0.0
            ix, iy, iz, mx, my, mz = point_coords(grid[n, p, 0], grid[n, p, 1], gz, W, H, D,
                                                  mode, padding, align)
            ax, ay, az = 0.0, 0.0, 0.0
            for k in range(K):
                idx, w, wx, wy, wz = tap(k, ix, iy, iz, W, H, D, mode, padding, align)
                if idx < 0:
                    continue
                s = 0.0
                for c in range(C):
                    g = gout[n, c, p]
                    if want_input:
                        gin[n, c, idx] += w * g
                    s += inp[n, c, idx] * g
                ax += wx * s
                ay += wy * s
                az += wz * s
            ggrid[n, p, 0] = ax * mx
            ggrid[n, p, 1] = ay * my
            if nd == 3:
                ggrid[n, p, 2] = az * mz


def grid_sample_forward(inp, grid, W, H, D, mode, padding, align, out):
    _forward(inp, grid, W, H, D, mode, padding, bool(align), out)


def grid_sample_backward(gout, inp, grid, W, H, D, mode, padding, align, gin, ggrid):
    want = gin is not None
    _backward(gout, inp, grid, W, H, D, mode, padding, bool(align),
              gin if want else np.zeros((1, 1, 1), inp.dtype), want, ggrid)
