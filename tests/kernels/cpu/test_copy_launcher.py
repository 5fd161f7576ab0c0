"""kernels/cpu/copy.py's launchers: any source into any destination layout, written in
the destination's memory order (dims sorted by its strides first)."""
import numpy as np
import pytest

from nbtorch.kernels.cpu import copy as cpu_copy


def _strided(flat, offset, strides, shape):
    item = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat[offset:], shape, [s * item for s in strides])


@pytest.mark.parametrize("shape, d_strides, s_strides", [
    ((300, 200), (1, 300), (1, 300)),            # the same transposed layout: a dense copy
    ((300, 200), (1, 300), (200, 1)),            # C-ordered source, transposed destination
    ((4, 5, 6, 7), (210, 1, 35, 5), (210, 42, 7, 1)),     # channels-last destination
    ((64, 300), (1, 64), (0, 1)),                # a broadcast source
    ((3, 4, 5), (1, 15, 3), (20, 5, 1)),         # small: NumPy's copy
    ((237, 141), (141, 1), (1, 237)),            # a transposing copy: 8x8 tiles and edges
    ((3, 77, 95), (7315, 95, 1), (7315, 1, 77)),  # batched
    ((300, 7), (7, 1), (1, 300)),                # too few columns for a tile
    ((16, 64, 4, 32), (8192, 128, 32, 1), (8192, 32, 2048, 1)),   # attention's heads
    ((40000,), (1,), (3,)),                      # 1-D, a strided source
])
@pytest.mark.parametrize("src_dtype", [np.float32, np.float64])
def test_copy_into_any_dense_layout(shape, d_strides, s_strides, src_dtype):
    rng = np.random.default_rng(0)
    n = int(np.prod(shape))
    extent = 1 + sum((k - 1) * st for k, st in zip(shape, s_strides))
    src = rng.standard_normal(extent + 3).astype(src_dtype)
    dst = np.full(n + 5, np.nan, np.float32)
    cpu_copy.copy(src, 3, s_strides, dst, 2, d_strides, shape)
    want = _strided(src, 3, s_strides, shape).astype(np.float32)
    np.testing.assert_array_equal(_strided(dst, 2, d_strides, shape), want)
    assert np.isnan(dst[:2]).all() and np.isnan(dst[n + 2:]).all()   # nothing else written


def test_fill_of_a_transposed_destination_fills_its_block():
    dst = np.zeros(300 * 200 + 2, np.float32)
    cpu_copy.fill(dst, 1, (1, 300), (300, 200), 2.5)
    assert dst[0] == 0 and dst[-1] == 0 and (dst[1:-1] == 2.5).all()
