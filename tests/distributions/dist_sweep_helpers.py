"""`same(f_ours, f_ref)`: run one call in nbtorch and in PyTorch and assert the same outcome
- equal values (shape, dtype, ~1e-10 in float64), or the same exception type and whole
message (up to the package name and whitespace; the invalid values' repr included). Shared by the differential sweeps of tests/distributions."""
import numpy as np

# PyTorch 2.13 failures nbtorch does not copy (its result is then not compared):
# Bernoulli.log_prob of an int64 value (BCE cannot write Long), GeneralizedPareto in float64
# (isclose against a float32 zero)
TORCH_BUGS = ("can't be cast to the desired output type", "did not match Float")


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def close(a, b, rtol=1e-9, atol=1e-12, tag=""):
    """Values of nbtorch `a` and PyTorch `b` agree: shape, dtype and ~rtol."""
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, (tag, a.shape, b.shape)
    assert a.dtype == b.dtype, (tag, a.dtype, b.dtype)
    if a.dtype.kind == "b" or a.dtype.kind in "iu":
        np.testing.assert_array_equal(a, b, err_msg=tag)
        return
    if a.dtype == np.float32:
        rtol, atol = max(rtol, 3e-6), max(atol, 1e-6)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=tag)


def _message(e):
    return " ".join(str(e).replace("nbtorch.", "torch.").split())


def same(f_ours, f_ref, tag="", rtol=1e-9, atol=1e-12, message=True):
    """Call both; the same exception (type and message), or close results
    (tensors, numbers, tuples, strings, bools). Returns (ours, theirs) or (None, None)."""
    try:
        want, want_error = f_ref(), None
    except Exception as e:      # noqa: BLE001 - any exception is part of the behaviour
        want, want_error = None, e
    if want_error is not None and any(s in str(want_error) for s in TORCH_BUGS):
        return None, None
    try:
        got, got_error = f_ours(), None
    except Exception as e:      # noqa: BLE001
        got, got_error = None, e
    if want_error is not None or got_error is not None:
        assert type(got_error).__name__ == type(want_error).__name__, (
            tag, repr(got_error)[:300], repr(want_error)[:300])
        if message:
            assert _message(got_error) == _message(want_error), tag
        return None, None
    if hasattr(want, "detach") or isinstance(want, float):
        close(got, want, rtol, atol, tag)
    elif isinstance(want, (int, str, tuple, bool)):
        assert got == want, (tag, got, want)
    return got, want
