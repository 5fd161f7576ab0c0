"""conv_gemm.py's one-image-at-a-time convolution (im2col + GEMM by address) against
conv.py's batch path: forward and input gradient bit for bit, the weight gradient to
float rounding (its images are summed in another order), in every mode (dense,
padded, pointwise), with groups, batch splits and both dtypes; the forward keeps
no columns where these kernels run."""
import numpy as np
import pytest

conv = pytest.importorskip("nbtorch.kernels.cpu.conv")
from nbtorch.kernels.cpu import blas, cblas, conv_gemm  # noqa: E402

pytestmark = pytest.mark.skipif(not cblas.gemm_address(np.float32),
                                reason="no OpenBLAS cblas_sgemm64_ to call by address")

# (N, C, O, groups, spatial in, kernel, stride, padding, dilation, mode)
CASES = [
    (5, 6, 16, 1, (12, 12), (5, 5), (1, 1), (0, 0), (1, 1), conv_gemm.DENSE),    # LeNet c2
    (3, 4, 6, 2, (9, 11), (3, 3), (1, 1), (1, 1), (1, 1), conv_gemm.PADDED),
    (2, 3, 4, 1, (9, 8), (3, 2), (2, 3), (1, 0), (1, 2), conv_gemm.PADDED),      # strided
    (3, 4, 6, 2, (7, 7), (1, 1), (1, 1), (0, 0), (1, 1), conv_gemm.POINTWISE),
    (2, 2, 3, 1, (1, 20), (1, 3), (1, 1), (0, 1), (1, 2), conv_gemm.PADDED),     # conv1d
    (2, 2, 4, 2, (4, 5, 6), (2, 3, 2), (1, 2, 1), (1, 1, 0), (2, 1, 1),
     conv_gemm.PADDED),                                                           # 3-D
]


def _out_len(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _arrays(case, dtype):
    n, c, o, groups, size, k, s, p, d, _ = case
    out_size = tuple(_out_len(*a) for a in zip(size, k, s, p, d))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c) + size).astype(dtype)
    w = rng.standard_normal((o, c // groups) + k).astype(dtype)
    b = rng.standard_normal(o).astype(dtype)
    g = rng.standard_normal((n, o) + out_size).astype(dtype)
    return x, w, b, g, (s, p, d, groups)


def _run(x, w, b, g, geo, keep, fused, monkeypatch):
    """Forward, input and weight gradients through conv.py, with conv_gemm's path on or off
    (off: with the forward's columns kept for the weight gradient when `keep`)."""
    s, p, d, groups = geo
    with monkeypatch.context() as m:
        if not fused:
            m.setattr(cblas, "gemm_address", lambda dtype, work=0: 0)
        out = np.full(g.shape, np.nan, x.dtype)
        shape = conv.columns_shape(x.shape, w.shape, s, p, g.shape[2:], x.itemsize)
        assert shape is None or not fused
        cols = np.full(shape, np.nan, x.dtype) if keep and shape else None
        conv.conv2d_forward(x, w, b, out, s, p, d, groups, columns=cols)
        gx = np.full(x.shape, np.nan, x.dtype)
        conv.conv2d_grad_input(g, w, gx, s, p, d, groups)
        gw = np.full(w.shape, np.nan, x.dtype)
        conv.conv2d_grad_weight(x, g, gw, s, p, d, groups, columns=cols)
    return out, gx, gw


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_one_image_at_a_time_equals_the_batch_path(case, dtype, keep, monkeypatch):
    x, w, b, g, geo = _arrays(case, dtype)
    plan = conv._gemm_plan(x, w, g, geo[3], w.shape[2:], *geo[:3], g.shape[2:])
    assert plan is not None and plan[1] == case[-1]
    out, gx, gw = _run(x, w, b, g, geo, False, True, monkeypatch)
    ref_out, ref_gx, ref_gw = _run(x, w, b, g, geo, keep, False, monkeypatch)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    if dtype == np.float32 and blas.private_library() is not None:
        # batch-path products above cblas.PRIVATE_MIN_WORK run on nbtorch's OpenBLAS copy
        # (Haswell kernels), the per-image blocks on NumPy's: the last bits may differ
        np.testing.assert_allclose(out, ref_out, rtol=tol, atol=tol * np.abs(ref_out).max())
        np.testing.assert_allclose(gx, ref_gx, rtol=tol, atol=tol * np.abs(ref_gx).max())
    else:
        np.testing.assert_array_equal(out, ref_out)
        np.testing.assert_array_equal(gx, ref_gx)
    np.testing.assert_allclose(gw, ref_gw, rtol=tol, atol=tol * np.abs(ref_gw).max())


def test_batch_split_over_threads_gives_the_serial_values(monkeypatch):
    """Ranges run on the helper threads (forced) give what one thread gives: the ranges
    and the order their weight-gradient sums are added depend only on the sizes."""
    from nbtorch.kernels.cpu import workers
    x, w, b, g, geo = _arrays(CASES[0], np.float32)
    monkeypatch.setattr(conv, "BATCH_SPLIT_MIN_MACS", 1)
    serial = _run(x, w, b, g, geo, False, True, monkeypatch)
    monkeypatch.setattr(workers, "helpers_usable", lambda key=None: True)
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    for _ in range(3):
        split = _run(x, w, b, g, geo, False, True, monkeypatch)
        for a, ref in zip(split, serial):
            np.testing.assert_array_equal(a, ref)


def test_output_padding_rows_past_the_last_window_get_zeros(monkeypatch):
    """conv_transpose's output_padding sizes the input gradient past the last window: the
    dense col2im clears the whole image first, so those rows are zeros, as the batch
    path gives."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    g = rng.standard_normal((2, 4, 4, 4)).astype(np.float32)
    gx = np.empty((2, 3, 10, 10), np.float32)           # stride 2, output_padding 1
    plan = conv._gemm_plan(gx, w, g, 1, (3, 3), (2, 2), (0, 0), (1, 1), (4, 4))
    assert plan[1] == conv_gemm.DENSE
    conv.conv2d_grad_input(g, w, gx, (2, 2), (0, 0), (1, 1), 1)
    ref = np.empty_like(gx)
    with monkeypatch.context() as m:
        m.setattr(cblas, "gemm_address", lambda dtype, work=0: 0)
        conv.conv2d_grad_input(g, w, ref, (2, 2), (0, 0), (1, 1), 1)
    np.testing.assert_array_equal(gx, ref)
    assert not gx[:, :, 9].any() and not gx[:, :, :, 9].any()


def test_other_dtypes_and_empty_products_keep_the_batch_path():
    x = np.ones((2, 3, 5, 5), np.float16)
    w = np.ones((4, 3, 3, 3), np.float16)
    y = np.empty((2, 4, 3, 3), np.float16)
    assert conv._gemm_plan(x, w, y, 1, (3, 3), (1, 1), (0, 0), (1, 1), (3, 3)) is None
    x, w = x.astype(np.float32), np.ones((0, 3, 3, 3), np.float32)
    y = np.empty((2, 0, 3, 3), np.float32)
    assert conv._gemm_plan(x, w, y, 1, (3, 3), (1, 1), (0, 0), (1, 1), (3, 3)) is None


def test_windows_not_known_to_fit_take_the_batch_path(monkeypatch):
    """Windows that may leave the padded input (never for sizes from the conv formula)
    run conv.py's general batch kernels, not these."""
    from nbtorch.kernels.cpu import conv_dense
    x, w, b, g, geo = _arrays(CASES[0], np.float32)
    assert conv._gemm_plan(x, w, g, geo[3], w.shape[2:], *geo[:3], g.shape[2:]) is not None
    monkeypatch.setattr(conv_dense, "fits", lambda geom, size: False)
    assert conv._gemm_plan(x, w, g, geo[3], w.shape[2:], *geo[:3], g.shape[2:]) is None


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES)
def test_both_gradients_in_one_pass_give_the_two_calls_bits(case, dtype, split, monkeypatch):
    """conv2d_grad_both: the input and weight gradients image after image, bit for bit
    what conv2d_grad_input and conv2d_grad_weight give (also split over threads); it
    leaves pointwise kernels to the two calls (False, nothing written)."""
    from nbtorch.kernels.cpu import workers
    x, w, b, g, geo = _arrays(case, dtype)
    if split:
        monkeypatch.setattr(conv, "BATCH_SPLIT_MIN_MACS", 1)
        monkeypatch.setattr(workers, "helpers_usable", lambda key=None: True)
        monkeypatch.setattr(workers, "NUM_THREADS", 2)
    gx = np.full(x.shape, np.nan, dtype)
    gw = np.full(w.shape, np.nan, dtype)
    done = conv.conv2d_grad_both(x, g, w, gx, gw, *geo)
    if case[-1] == conv_gemm.POINTWISE:
        assert not done and np.isnan(gx).all() and np.isnan(gw).all()
        return
    assert done
    ref_gx = np.full(x.shape, np.nan, dtype)
    ref_gw = np.full(w.shape, np.nan, dtype)
    conv.conv2d_grad_input(g, w, ref_gx, *geo)
    conv.conv2d_grad_weight(x, g, ref_gw, *geo)
    np.testing.assert_array_equal(gx, ref_gx)
    np.testing.assert_array_equal(gw, ref_gw)
