"""Inverse hyperbolics, sinc, angles, copysign/signbit/nextafter/ldexp/frexp, heaviside,
logaddexp2, gcd/lcm, bit shifts: values vs NumPy on every device, gradients, PyTorch."""
import numpy as np
import pytest

import nbtorch
from harness import ALL_FLOATS, FLOATS, check_op

S = (3, 4)


@pytest.mark.parametrize("name,ref,lo,hi", [
    ("asinh", np.arcsinh, -3, 3), ("acosh", np.arccosh, 1.1, 4), ("atanh", np.arctanh, -0.9, 0.9),
    ("sinc", np.sinc, -2, 2),
])
def test_float_unary(name, ref, lo, hi, device):
    check_op(getattr(nbtorch, name), ref, S, dtypes=ALL_FLOATS, low=lo, high=hi, device=device)


def test_angles_copysign_logaddexp2(device):
    check_op(nbtorch.deg2rad, np.deg2rad, S, device=device)
    check_op(nbtorch.rad2deg, np.rad2deg, S, device=device)
    check_op(nbtorch.copysign, np.copysign, S, S, low=0.2, high=2, device=device, grad=False)
    check_op(lambda a, b: nbtorch.copysign(a, b - 1), lambda a, b: np.copysign(a, b - 1), S, S,
             low=0.2, high=2, device=device)
    check_op(nbtorch.logaddexp2, np.logaddexp2, S, S, low=-30, high=30, device=device)
    check_op(nbtorch.nextafter, np.nextafter, S, S, grad=False, device=device)
    check_op(nbtorch.ldexp, lambda a, e: a * 2.0 ** e, S, np.arange(12).reshape(S) - 6.0,
             grad=False, layouts=("contiguous", "noncontig", "0d"), device=device)


def test_integer_ops(device):
    ints = (nbtorch.int64,)
    check_op(nbtorch.gcd, np.gcd, S, S, dtypes=ints, low=-30, high=30, grad=False,
             device=device)
    check_op(nbtorch.lcm, np.lcm, S, S, dtypes=ints, low=-30, high=30, grad=False,
             device=device)
    check_op(nbtorch.bitwise_left_shift, np.left_shift, S, S, dtypes=ints, low=0, high=9,
             grad=False, device=device)
    check_op(nbtorch.bitwise_right_shift, np.right_shift, S, S, dtypes=ints, low=-200,
             high=200, grad=False, device=device)


def test_special_values():
    nan, inf = float("nan"), float("inf")
    for dtype in FLOATS:
        x = nbtorch.tensor([0.5, 1.0, 1e30, inf, -inf, nan], dtype=dtype)
        y = nbtorch.tensor([-1.0, 1.0, 1.5, -0.0, 0.25, nan], dtype=dtype)
        with np.errstate(all="ignore"):
            for fn, ref, t in ((nbtorch.acosh, np.arccosh, x), (nbtorch.asinh, np.arcsinh, -x),
                               (nbtorch.atanh, np.arctanh, y)):
                want = ref(t.numpy().astype(np.float64))
                np.testing.assert_allclose(fn(t).numpy(), want, rtol=2.5e-7)
    assert nbtorch.signbit(nbtorch.tensor([-0.0, 0.0, -nan, 2.0, -3])).tolist() == [
        True, False, True, False, True]
    assert nbtorch.heaviside(nbtorch.tensor([-1.0, 0.0, 2.0, nan]),
                             nbtorch.tensor(0.5)).tolist() == [0.0, 0.5, 1.0, 0.0]
    m, e = nbtorch.frexp(nbtorch.tensor([0.0, 1e-40, inf, 8.0, -3.0]))
    assert e.dtype is nbtorch.int32 and e.tolist() == [0, -132, 0, 4, 2]
    assert m.tolist()[2:] == [inf, 0.5, -0.75]
    assert nbtorch.sinc(nbtorch.tensor([0.0])).item() == 1.0
    x = nbtorch.tensor([1.0])
    assert nbtorch.positive(x) is x


def test_float32_inverse_hyperbolics_within_three_ulp():
    """The vectorised float32 versions err up to 2.6 ulp (float32 log1p's own: 2.2)."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(2000) * s for s in (1e-4, 1, 30, 1e4)])
    x = x.astype(np.float32)
    for name, ref, arg in [("asinh", np.arcsinh, x), ("acosh", np.arccosh, 1 + np.abs(x)),
                           ("atanh", np.arctanh, np.tanh(x))]:
        got = getattr(nbtorch, name)(nbtorch.tensor(arg)).numpy()
        with np.errstate(all="ignore"):
            want = ref(arg.astype(np.float64))
        ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
        ok = np.isfinite(want)
        assert np.max(np.abs(got[ok] - want[ok]) / ulp[ok]) <= 3.0, name


def test_gradients_and_integer_promotion():
    from nbtorch.autograd import gradcheck
    x = nbtorch.tensor([0.3, -0.7, 1.9], dtype=nbtorch.float64, requires_grad=True)
    assert gradcheck(lambda t: nbtorch.frexp(t).mantissa, (x,))
    assert gradcheck(lambda t: nbtorch.sinc(t), (nbtorch.tensor([0.0, 0.4], dtype=nbtorch.float64,
                                                                requires_grad=True),))
    y = nbtorch.tensor([1.0, 2.0], requires_grad=True)
    nbtorch.nextafter(y, nbtorch.tensor(0.0)).sum().backward()
    assert y.grad.tolist() == [1.0, 1.0]
    assert nbtorch.asinh(nbtorch.tensor([1, 2])).dtype is nbtorch.float32
    assert nbtorch.deg2rad(nbtorch.tensor([180])).dtype is nbtorch.float32
    assert (nbtorch.tensor([3], dtype=nbtorch.int8) << 7).tolist() == [-128]
    assert (3 << nbtorch.tensor([1, 2])).tolist() == [6, 12]
    assert nbtorch.bitwise_left_shift(3, nbtorch.tensor([1], dtype=nbtorch.int8)).dtype \
        is nbtorch.int8
    t = nbtorch.tensor([1, 2])
    t >>= 1
    assert t.tolist() == [0, 1]


def test_errors():
    f, i = nbtorch.tensor([1.0]), nbtorch.tensor([1])
    with pytest.raises(NotImplementedError, match="gcd_cpu"):
        nbtorch.gcd(f, f)
    with pytest.raises(NotImplementedError, match="lshift_cpu"):
        f << 1
    with pytest.raises(NotImplementedError, match="nextafter_cpu"):
        nbtorch.nextafter(i, i)
    with pytest.raises(NotImplementedError, match="logaddexp2_cpu"):
        nbtorch.logaddexp2(i, i)
    with pytest.raises(TypeError, match="must be Tensor"):
        nbtorch.ldexp(f, 2)
    with pytest.raises(RuntimeError, match="different dtypes"):
        nbtorch.heaviside(f, i)
    with pytest.raises(RuntimeError, match="floating-point"):
        nbtorch.frexp(i)
    with pytest.raises(RuntimeError, match="bool tensor"):
        nbtorch.positive(nbtorch.tensor([True]))
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.acosh_()
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.deg2rad_()
    x = nbtorch.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="heaviside is not implemented"):
        nbtorch.heaviside(x, nbtorch.tensor([1.0])).sum().backward()
    with pytest.raises(RuntimeError, match="float_power_"):
        nbtorch.tensor([1.0]).float_power_(2)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = rng.standard_normal(50).astype(np.float32) * 3
    b = rng.standard_normal(50).astype(np.float32) * 3
    a[:3] = [0.0, -0.0, 1.0]
    na, nb_ = nbtorch.tensor(a), nbtorch.tensor(b)
    ta, tb = torch.tensor(a), torch.tensor(b)
    for name in ("asinh", "sinc", "deg2rad", "rad2deg", "signbit"):
        np.testing.assert_allclose(getattr(nbtorch, name)(na).numpy(),
                                   getattr(torch, name)(ta).numpy(), rtol=3e-7, atol=1e-7)
    np.testing.assert_allclose(nbtorch.atanh(na / 10).numpy(), torch.atanh(ta / 10).numpy(),
                               rtol=3e-7)
    for name in ("copysign", "logaddexp2", "nextafter", "heaviside", "float_power"):
        np.testing.assert_allclose(getattr(nbtorch, name)(na, nb_).numpy(),
                                   getattr(torch, name)(ta, tb).numpy(), rtol=3e-7, atol=3e-7)
    ia = rng.integers(-50, 50, 40)
    ib = rng.integers(-50, 50, 40)
    for name in ("gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift"):
        for dt in ("int64", "int8", "uint8"):
            x = np.abs(ia) if dt == "uint8" else ia
            got = getattr(nbtorch, name)(nbtorch.tensor(x, dtype=getattr(nbtorch, dt)),
                                         nbtorch.tensor(ib, dtype=getattr(nbtorch, dt)))
            want = getattr(torch, name)(torch.tensor(x).to(getattr(torch, dt)),
                                        torch.tensor(ib).to(getattr(torch, dt)))
            assert got.tolist() == want.tolist(), (name, dt)
    m, e = nbtorch.frexp(na)
    tm, te = torch.frexp(ta)
    assert m.tolist() == tm.tolist() and e.tolist() == te.tolist()


def test_small_calls_leave_out_the_signature_only_where_numpy_picks_that_loop():
    """_small_calls._picks: a small call may omit signature= only when NumPy's own choice
    for those operand dtypes is the loop (a float64 loop listed first would take float32
    operands: then the signature stays)."""
    import numba
    from nbtorch.ops._small_calls import _picks
    both = numba.vectorize(["float64(float64, float64)", "float32(float32, float32)"])(
        lambda a, b: a + b).ufunc
    f32 = numba.vectorize(["float32(float32, float32)"])(lambda a, b: a + b).ufunc
    assert not _picks(both, "ff->f", False) and _picks(both, "dd->d", False)
    assert _picks(f32, "ff->f", False) and _picks(f32, "ff->f", True)
    assert _picks(np.add, "ff->f", True) and _picks(np.exp, "f->f", False)
    a, b = nbtorch.tensor([1.5]), nbtorch.tensor([2.25])
    assert (a + b).item() == 3.75 and (a * 0.1).item() == np.float32(1.5) * np.float32(0.1)
