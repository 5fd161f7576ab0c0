"""grid_sample kernels on CUDA: a thread per sampling point runs the bodies of
`kernels/grid_sample.py` (the CPU loops call the same ones); the input gradient is
scattered with atomic adds (taps of different points can share an input pixel).

Contracts of `kernels/cpu/grid_sample.py` plus ``stream=``.
"""
from numba import cuda

from nbtorch.kernels.grid_sample import n_taps, point_coords, tap
from ._launch import grid as launch_grid

__all__ = ["grid_sample_forward", "grid_sample_backward", "typecheck_signatures"]


@cuda.jit(cache=True)
def grid_sample_forward_kernel(inp, grid, W, H, D, mode, padding, align, out):
    """for each (n, p) (grid-stride): out[n, :, p] = sum_k w_k * inp[n, :, idx_k]."""
    N, C = inp.shape[0], inp.shape[1]
    P, nd = grid.shape[1], grid.shape[2]
    K = n_taps(mode, nd)
    for t in range(cuda.grid(1), N * P, cuda.gridsize(1)):
        n = t // P
        p = t - n * P
        gz = grid[n, p, 2] if nd == 3 else 0.0
        ix, iy, iz, _, _, _ = point_coords(grid[n, p, 0], grid[n, p, 1], gz, W, H, D, mode,
                                           padding, align)
        for c in range(C):
            out[n, c, p] = 0.0
        for k in range(K):
            idx, w, _, _, _ = tap(k, ix, iy, iz, W, H, D, mode, padding, align)
            if idx >= 0:
                for c in range(C):
                    out[n, c, p] += w * inp[n, c, idx]


@cuda.jit(cache=True)
def grid_sample_backward_kernel(gout, inp, grid, W, H, D, mode, padding, align, gin,
                                want_input, ggrid):
    """for each (n, p): atomic gin[n, :, idx_k] += w_k * gout[n, :, p]; ggrid[n, p]."""
    N, C = inp.shape[0], inp.shape[1]
    P, nd = grid.shape[1], grid.shape[2]
    K = n_taps(mode, nd)
    for t in range(cuda.grid(1), N * P, cuda.gridsize(1)):
        n = t // P
        p = t - n * P
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
                    cuda.atomic.add(gin, (n, c, idx), w * g)
                s += inp[n, c, idx] * g
            ax += wx * s
            ay += wy * s
            az += wz * s
        ggrid[n, p, 0] = ax * mx
        ggrid[n, p, 1] = ay * my
        if nd == 3:
            ggrid[n, p, 2] = az * mz


def grid_sample_forward(inp, grid, W, H, D, mode, padding, align, out, stream=0):
    if out.size == 0:
        return
    grid_sample_forward_kernel[launch_grid(grid.shape[0] * grid.shape[1]) + (stream,)](
        inp, grid, W, H, D, mode, padding, bool(align), out)


def grid_sample_backward(gout, inp, grid, W, H, D, mode, padding, align, gin, ggrid,
                         stream=0):
    if grid.shape[0] * grid.shape[1] == 0:
        return
    want = gin is not None
    if not want:
        gin = cuda.device_array((1, 1, 1), inp.dtype, stream=stream)
    grid_sample_backward_kernel[launch_grid(grid.shape[0] * grid.shape[1]) + (stream,)](
        gout, inp, grid, W, H, D, mode, padding, bool(align), gin, want, ggrid)


def typecheck_signatures():
    from numba import types as nt
    i, b = nt.int64, nt.boolean
    for t in (nt.float32, nt.float64):
        a3 = nt.Array(t, 3, "C")
        yield (f"grid_sample_forward[{t}]", grid_sample_forward_kernel.py_func,
               (a3, a3, i, i, i, i, i, b, a3))
        yield (f"grid_sample_backward[{t}]", grid_sample_backward_kernel.py_func,
               (a3, a3, a3, i, i, i, i, i, b, a3, b, a3))
