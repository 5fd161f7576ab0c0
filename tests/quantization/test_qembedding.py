"""Quantized Embedding (per_channel_affine_float_qparams) against PyTorch: the observer's
float qparams, the quantized rows, looked-up values, repr and checkpoints both ways."""
import warnings

import numpy as np
import pytest

import nbtorch


def _converted(t, w):
    m = t.nn.Sequential(t.nn.Embedding(*w.shape))
    m[0].weight.data = t.from_numpy(w.copy())
    m[0].qconfig = t.ao.quantization.float_qparams_weight_only_qconfig
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t.ao.quantization.convert(t.ao.quantization.prepare(m))


def test_embedding_matches_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((50, 7)) * rng.uniform(0.1, 5, (50, 1))).astype(np.float32)
    w[3] = 0.25                                       # a constant row: the eps fallback
    idx = rng.integers(0, 50, (4, 6))
    tc, nc = _converted(torch, w), _converted(nbtorch, w)
    assert repr(nc) == repr(tc)
    tw, nw = tc[0].weight(), nc[0].weight()
    assert str(nw.qscheme()) == str(tw.qscheme()) == "torch.per_channel_affine_float_qparams"
    np.testing.assert_array_equal(nw.int_repr().numpy(), tw.int_repr().numpy())
    np.testing.assert_array_equal(nw.q_per_channel_scales().numpy(),
                                  tw.q_per_channel_scales().numpy())
    np.testing.assert_array_equal(nw.q_per_channel_zero_points().numpy(),
                                  tw.q_per_channel_zero_points().numpy())
    np.testing.assert_array_equal(nw.dequantize().numpy(), tw.dequantize().numpy())
    want = tc(torch.from_numpy(idx)).numpy()
    np.testing.assert_array_equal(nc(nbtorch.from_numpy(idx)).numpy(), want)
    torch.save(tc.state_dict(), tmp_path / "t.pt")
    fresh = _converted(nbtorch, np.zeros((50, 7), np.float32) + 1)
    fresh.load_state_dict(nbtorch.load(tmp_path / "t.pt"))
    np.testing.assert_array_equal(fresh(nbtorch.from_numpy(idx)).numpy(), want)
    nbtorch.save(nc.state_dict(), tmp_path / "n.pt")
    tfresh = _converted(torch, np.ones((50, 7), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tfresh.load_state_dict(torch.load(tmp_path / "n.pt"))
    np.testing.assert_array_equal(tfresh(torch.from_numpy(idx)).numpy(), want)


def test_embedding_needs_float_qparams_qconfig():
    m = nbtorch.nn.Sequential(nbtorch.nn.Embedding(5, 3))
    m.qconfig = nbtorch.ao.quantization.default_qconfig
    with pytest.raises(AssertionError, match="float_qparams_weight_only_qconfig"):
        nbtorch.ao.quantization.convert(nbtorch.ao.quantization.prepare(m))


@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_matches_pytorch(include_last_offset):
    """Bags by offsets (empty bag included), per-sample weights and 2-D indices; PyTorch's
    quantized EmbeddingBag sums whatever its mode."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((30, 6)) * rng.uniform(0.1, 5, (30, 1))).astype(np.float32)
    idx, off = rng.integers(0, 30, 17), np.array([0, 3, 3, 9, 12])
    psw, idx2 = rng.uniform(0.1, 2, 17).astype(np.float32), rng.integers(0, 30, (4, 5))
    results = []
    for t in (torch, nbtorch):
        m = t.nn.Sequential(t.nn.EmbeddingBag(30, 6, mode="mean",
                                              include_last_offset=include_last_offset))
        m[0].weight.data = t.from_numpy(w.copy())
        m[0].qconfig = t.ao.quantization.float_qparams_weight_only_qconfig
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = t.ao.quantization.convert(t.ao.quantization.prepare(m))
        bag = c[0]
        outs = [bag(t.from_numpy(idx), t.from_numpy(off)).numpy(),
                bag(t.from_numpy(idx), t.from_numpy(off),
                    per_sample_weights=t.from_numpy(psw)).numpy()]
        if not include_last_offset:
            outs.append(bag(t.from_numpy(idx2)).numpy())
        results.append((repr(c), outs))
    assert results[1][0] == results[0][0]
    for got, want in zip(results[1][1], results[0][1]):
        np.testing.assert_array_equal(got, want)
