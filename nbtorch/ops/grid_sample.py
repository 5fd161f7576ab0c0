"""Spatial transformers: ``grid_sample`` (sample an image or volume at arbitrary points) and
``affine_grid`` (the points of an affine transform of the output grid).

grid_sample's forward and backward are Numba kernels (per-point bodies in
`kernels/grid_sample.py`, shared by the CPU loops and the CUDA kernels); its backward
gives both the input's and the grid's gradients (not differentiable again).
affine_grid is a matmul of a fixed base grid with theta (autograd gives its gradient).
"""
import warnings

import numpy as np

from .. import _dtype
from .._registry import get_kernel
from .._tensor import empty
from ..autograd import Function, grad_mode
from ..autograd.function import delayed_error
from ._common import check_same_device

__all__ = ["grid_sample", "affine_grid", "GRID_SAMPLE_INTERPOLATION_MODES",
           "GRID_SAMPLE_PADDING_MODES"]

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                  "old behavior is desired. See the documentation of grid_sample for details.")


def _flat(t, *shape):
    """A contiguous raw array of `t` reshaped (a view when already contiguous)."""
    return t.contiguous()._array.reshape(shape)


class GridSample(Function):
    """out[n, c, p] = interpolation of input[n, c] at grid[n, p] (2-D: D = 1)."""

    @staticmethod
    def forward(ctx, x, grid, mode, padding, align):
        N, C = x.shape[:2]
        spatial = tuple(x.shape[2:])
        D, H, W = (1,) + spatial if len(spatial) == 2 else spatial
        out_spatial = tuple(grid.shape[1:-1])
        P = int(np.prod(out_spatial))
        nd = grid.shape[-1]
        xc, gc = x.contiguous(), grid.contiguous()
        out = empty((N, C) + out_spatial, x.dtype, x.device)
        kept = None                 # CPU: the tap tables, filled here, reused by backward
        if x.device.type == "cpu" and N * P and any(ctx.needs_input_grad[:2]):
            from ..kernels.cpu.grid_sample import tables
            kept = tables(N, P, nd, mode, x.dtype.np)
        if out.numel():
            extra = {} if kept is None else {"kept": kept}
            get_kernel("grid_sample_forward", x.device.type)(
                _flat(xc, N, C, D * H * W), _flat(gc, N, P, nd), W, H, D, mode, padding, align,
                _flat(out, N, C, P), **extra)
        else:
            kept = None
        ctx.save_for_backward(xc, gc)
        ctx.geom = (N, C, D, H, W, P, nd, mode, padding, align)
        ctx.kept = kept
        return out

    @staticmethod
    def backward(ctx, grad_out):
        xc, gc = ctx.saved_tensors
        N, C, D, H, W, P, nd, mode, padding, align = ctx.geom
        gin = empty(tuple(xc.shape), xc.dtype, xc.device).zero_() \
            if ctx.needs_input_grad[0] else None
        ggrid = empty(tuple(gc.shape), gc.dtype, gc.device)
        if N * P:
            extra = {} if ctx.kept is None else {"kept": ctx.kept}
            get_kernel("grid_sample_backward", xc.device.type)(
                _flat(grad_out.to(xc.dtype), N, C, P), _flat(xc, N, C, D * H * W),
                _flat(gc, N, P, nd), W, H, D, mode, padding, align,
                None if gin is None else _flat(gin, N, C, D * H * W), _flat(ggrid, N, P, nd),
                **extra)
        else:
            ggrid.zero_()
        if grad_mode.is_grad_enabled():     # create_graph=True: the kernel records nothing
            gin, ggrid = delayed_error((gin, ggrid), _NO_DOUBLE_BACKWARD,
                                       (xc, gc, grad_out))
        return gin, ggrid, None, None, None


_NO_DOUBLE_BACKWARD = ("the derivative of grid_sample's backward is not implemented in "
                       "nbtorch (double backward through grid_sample)")


def _check(x, grid, mode):
    check_same_device("grid_sampler", x, grid)
    if x.dim() == 0 or grid.dim() == 0 or x.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(x.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    nd = x.dim() - 2
    if grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, "
                           f"but got grid with sizes {list(grid.shape)}")
    for i in range(2, x.dim()):
        if x.shape[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(x.shape)} with dimension "
                               f"{i} being empty")
    if x.dim() not in (4, 5) or x.dim() != grid.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(x.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    if mode == "bicubic" and x.dim() != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if x.dtype is not grid.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.type_name(x.dtype)} but found "
                           f"{_dtype.type_name(grid.dtype)}")
    if not x.dtype.is_floating_point:
        kind = "2d" if x.dim() == 4 else "3d"
        raise NotImplementedError(f"\"grid_sampler_{kind}_cpu_kernel_impl\" not implemented "
                                  f"for '{_dtype.type_name(x.dtype)}'")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample `input` (N, C, H, W) or (N, C, D, H, W) at the points of `grid` (N, H', W', 2)
    or (N, D', H', W', 3), each in [-1, 1] (x, y[, z]) across the input's extent.

    mode: 'bilinear' (trilinear in 3-D), 'nearest' or 'bicubic' (2-D);
    padding_mode: what points outside read: 'zeros', 'border' or 'reflection'.

    Example:
        >>> x = nbtorch.arange(16.0).reshape(1, 1, 4, 4)
        >>> grid_sample(x, nbtorch.zeros(1, 1, 1, 2), align_corners=True)
        tensor([[[[7.5000]]]])
    """
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    _check(input, grid, mode)
    work = input.dtype if input.dtype in (_dtype.float32, _dtype.float64) else _dtype.float32
    out = GridSample.apply(input.to(work), grid.to(work), GRID_SAMPLE_INTERPOLATION_MODES[mode],
                           GRID_SAMPLE_PADDING_MODES[padding_mode], bool(align_corners))
    return out.to(input.dtype)


def _base_coords(steps, align_corners, dtype):
    """PyTorch's linspace_from_neg_one: steps points over [-1, 1] (shrunk by (steps-1)/steps
    without align_corners; a single point is 0)."""
    if steps <= 1:
        return np.zeros(max(steps, 0), dtype)
    r = np.linspace(-1.0, 1.0, steps)
    return (r if align_corners else r * (steps - 1) / steps).astype(dtype)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) or (N, D, H, W, 3) of affine maps `theta` (N, 2, 3) or
    (N, 3, 4) for an output of `size` (N, C, H, W) or (N, C, D, H, W): grid_sample's input.

    Example:
        >>> theta = nbtorch.tensor([[[1.0, 0, 0], [0, 1, 0]]])
        >>> affine_grid(theta, (1, 1, 2, 2), align_corners=True)[0, 0, 0]
        tensor([-1., -1.])
    """
    from .creation import tensor
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {theta.shape[2]}] but got: "
                           f"[{theta.shape[0]}, {theta.shape[2]}].")
    dt = theta.dtype.np if theta.dtype.np != np.float16 else np.float32
    axes = [_base_coords(s, align_corners, dt) for s in reversed(spatial)]   # x, y[, z]
    mesh = list(np.meshgrid(*axes[::-1], indexing="ij"))[::-1]               # each (*spatial)
    base = np.stack(mesh + [np.ones(spatial, dt)], -1).reshape(-1, len(spatial) + 1)
    base_t = tensor(base, dtype=theta.dtype, device=theta.device)
    grid = base_t.matmul(theta.transpose(1, 2))                              # (N, P, nd)
    return grid.reshape((size[0],) + tuple(spatial) + (len(spatial),))
