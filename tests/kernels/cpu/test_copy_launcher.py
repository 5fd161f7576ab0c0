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


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8, np.bool_])
def test_a_one_value_source_is_a_fill_of_its_bits(dtype):
    """Every source stride 0 (a sum's gradient made dense): the destination is filled
    with that value's bits, dense or strided (NaN payloads and -0.0 kept)."""
    value = {np.float32: np.float32(np.nan), np.float64: np.float64(-0.0)}.get(
        dtype, dtype(1))
    src = np.array([7, value, 7], dtype)
    for d_strides, size in (((9, 1), 63), ((1, 7), 63), ((18, 2), 126)):
        dst = np.zeros(size, dtype)
        cpu_copy.copy(src, 1, (0, 0), dst, 0, d_strides, (7, 9))
        view = np.lib.stride_tricks.as_strided(dst, (7, 9),
                                               tuple(s * dst.itemsize for s in d_strides))
        assert (np.ascontiguousarray(view).view(np.uint8)
                == np.full((7, 9), value, dtype).view(np.uint8)).all()
        if size == 126:
            assert not dst[1::2].any()          # the gaps untouched


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, m", [(1024, 32), (5, 3), (8, 1), (19, 40)])
def test_transpose_into_writes_the_transpose(dtype, n, m):
    """`transpose_into(t, out)`: out = t.T (the copy back of a product computed transposed)."""
    from nbtorch.kernels.cpu.copy import transpose_into
    t = np.random.default_rng(n * m).standard_normal((n, m)).astype(dtype)
    for _ in range(2):                                   # a cached plan the second time
        out = np.full((m, n), np.nan, dtype)
        transpose_into(t, out)
        np.testing.assert_array_equal(out, t.T)
