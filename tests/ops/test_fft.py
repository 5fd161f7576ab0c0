"""torch.fft: values against NumPy (and PyTorch when importable), dtypes, PyTorch's errors,
out=, and gradients of real losses against finite differences (float64) and PyTorch.

A loss of a complex output y is L = sum Re(conj(w) y) for a fixed w, whose gradient is
what ``y.backward(w)`` computes (PyTorch's convention: dL/dRe x + i dL/dIm x)."""
import numpy as np
import pytest

import nbtorch
import nbtorch.fft as F
from nbtorch.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)
ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
N_D = ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn", "hfft2",
       "ihfft2", "hfftn", "ihfftn")
REAL_ONLY = ("rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn")
_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _numpy_ref(name, a, norm, **kw):
    """NumPy's transform (hfft2/hfftn/ihfft2/ihfftn from irfftn/rfftn of the conjugate)."""
    if name in ("hfft2", "hfftn"):
        kw.setdefault("axes", (-2, -1) if name == "hfft2" else None)
        return np.fft.irfftn(np.conj(a), norm=_SWAP[norm], **kw)
    if name in ("ihfft2", "ihfftn"):
        kw.setdefault("axes", (-2, -1) if name == "ihfft2" else None)
        return np.conj(np.fft.rfftn(a, norm=_SWAP[norm], **kw))
    return getattr(np.fft, name)(a, norm=norm, **kw)


def _data(shape, complex_, dtype=np.float64):
    a = RNG.standard_normal(shape)
    if complex_:
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(dtype if not complex_ else np.result_type(dtype, np.complex64))


def _close(t, ref, tol):
    got = t.detach().cpu().numpy()
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * max(1.0, np.abs(ref).max()))


# ---- values --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ONE_D + N_D)
def test_values_against_numpy(name, device):
    for complex_ in (False, True):
        if complex_ and name in REAL_ONLY:
            continue
        a = _data((2, 3, 4), complex_)
        for norm in (("ortho",) if complex_ else (None, "forward")):
            y = getattr(F, name)(nbtorch.tensor(a, device=device), norm=norm)
            assert y.device.type == device
            _close(y, _numpy_ref(name, a, norm), 1e-10)


@pytest.mark.parametrize("name", ONE_D)
def test_one_dim_sizes_and_dims(name):
    complex_ = name not in REAL_ONLY
    a = _data((3, 5, 6), complex_)
    for n, dim in ((None, 1), (4, 1), (9, -1), (1, 0), (7, -3)):
        y = getattr(F, name)(nbtorch.tensor(a), n=n, dim=dim)
        _close(y, getattr(np.fft, name)(a, n=n, axis=dim), 1e-10)
    t = nbtorch.tensor(a).transpose(0, 2)                 # strided input
    _close(getattr(F, name)(t, dim=1), getattr(np.fft, name)(a.transpose(2, 1, 0), axis=1),
           1e-10)


@pytest.mark.parametrize("name", N_D)
def test_n_dim_shapes_and_dims(name):
    complex_ = name not in REAL_ONLY
    a = _data((3, 4, 5), complex_)
    two = name.endswith("2")
    for s, dim in (((2, 6), None), ((-1, 3), (0, 2)), (None, (2, 0)), ((3, 4, 7), None)):
        if two and s is not None and len(s) != 2:
            continue
        if dim is None and two:
            dim = (-2, -1)
        y = getattr(F, name)(nbtorch.tensor(a), s=s, dim=dim)
        axes = dim if dim is not None else (None if s is None else
                                            tuple(range(3 - len(s), 3)))
        ns = None if s is None else tuple(a.shape[d] if v == -1 else v
                                          for d, v in zip(axes, s))
        if s is not None and s[-1] == -1 and name.startswith(("irfft", "hfft")):
            ns = ns[:-1] + (2 * (a.shape[axes[-1]] - 1),)
        _close(y, _numpy_ref(name, a, None, s=ns, axes=axes), 1e-10)


def test_float32_precision_and_dtypes():
    a = _data((4, 16), False, np.float32)
    y = F.rfft(nbtorch.tensor(a))
    assert y.dtype is nbtorch.complex64
    _close(y, np.fft.rfft(a.astype(np.float64)), 1e-5)
    assert F.fft(nbtorch.tensor(a, dtype=nbtorch.float64)).dtype is nbtorch.complex128
    assert F.irfft(y).dtype is nbtorch.float32
    assert F.hfft(y.to(nbtorch.complex128)).dtype is nbtorch.float64
    for t in (nbtorch.arange(6), nbtorch.tensor([True, False, True])):   # to the default float
        assert F.fft(t).dtype is nbtorch.complex64
        _close(F.fft(t), np.fft.fft(t.numpy().astype(np.float64)), 1e-6)
        assert F.irfft(t).dtype is nbtorch.float32
    with nbtorch.autograd.grad_mode.no_grad():
        old = nbtorch.get_default_dtype()
        nbtorch.set_default_dtype(nbtorch.float64)
        try:
            assert F.rfft(nbtorch.arange(6)).dtype is nbtorch.complex128
        finally:
            nbtorch.set_default_dtype(old)
    for half in (nbtorch.float16, nbtorch.bfloat16):
        name = "Half" if half is nbtorch.float16 else "BFloat16"
        with pytest.raises(RuntimeError, match=f"Unsupported dtype {name}"):
            F.fft(nbtorch.ones(4, dtype=half))


def test_long_real_transforms():
    """Even lengths >= 4096 along the last dim take the packed path of kernels/cpu/fft.py."""
    for dtype, tol in ((np.float32, 2e-6), (np.float64, 1e-13)):
        a = RNG.standard_normal((2, 4096)).astype(dtype)
        for norm in (None, "ortho", "forward"):
            y = F.rfft(nbtorch.tensor(a), norm=norm)
            _close(y, np.fft.rfft(a.astype(np.float64), norm=norm), tol)
        _close(F.rfft(nbtorch.tensor(a).t(), dim=0), np.fft.rfft(a.T.astype(np.float64),
                                                                 axis=0), tol)


def test_no_dims_and_empty_batches():
    z = _data((2, 3), True)
    y = F.fftn(nbtorch.tensor(z), dim=())                 # no transform: a complex copy
    _close(y, z, 0)
    assert F.fftn(nbtorch.ones(2, 3), dim=()).dtype is nbtorch.complex64
    assert F.fftn(nbtorch.tensor(2.0)).dtype is nbtorch.complex64        # 0-d: all dims = ()
    assert F.fft(nbtorch.ones(0, 4)).shape == (0, 4)
    assert F.rfft(nbtorch.ones(0, 4)).shape == (0, 3)
    assert F.irfft(nbtorch.ones(2, 0, 4, dtype=nbtorch.complex64)).shape == (2, 0, 6)


# ---- errors (PyTorch 2.13's messages) -------------------------------------------------

ERRORS = [
    (lambda: F.fft(nbtorch.ones(4), norm="foo"), RuntimeError, 'Invalid normalization mode: "foo"'),
    (lambda: F.fft(nbtorch.ones(4), norm="Ortho"), RuntimeError, "Invalid normalization mode"),
    (lambda: F.fft(nbtorch.ones(4), dim=1), IndexError,
     r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"),
    (lambda: F.fft(nbtorch.tensor(1.0)), IndexError,
     "Dimension specified as -1 but tensor has no dimensions"),
    (lambda: F.fft(nbtorch.ones(4), n=0), RuntimeError, r"Invalid number of data points \(0\)"),
    (lambda: F.fft(nbtorch.ones(0)), RuntimeError, r"Invalid number of data points \(0\)"),
    (lambda: F.irfft(nbtorch.ones(1)), RuntimeError, r"Invalid number of data points \(0\)"),
    (lambda: F.rfft(nbtorch.ones(4, dtype=nbtorch.complex64)), RuntimeError,
     "rfft expects a real input tensor, but got ComplexFloat"),
    (lambda: F.ihfft(nbtorch.ones(4, dtype=nbtorch.complex128)), RuntimeError,
     "ihfft expects a real input tensor, but got ComplexDouble"),
    (lambda: F.rfft2(nbtorch.ones(2, 2, dtype=nbtorch.complex64)), RuntimeError,
     "rfftn expects a real-valued input tensor, but got ComplexFloat"),
    (lambda: F.ihfftn(nbtorch.ones(2, 2, dtype=nbtorch.complex64)), RuntimeError,
     "Only supports floating-point dtypes, but found: ComplexFloat"),
    (lambda: F.fftn(nbtorch.ones(4, 4), s=(2, 3, 4)), RuntimeError,
     "Got shape with 3 values but input tensor only has 2 dimensions."),
    (lambda: F.fftn(nbtorch.ones(4, 4), s=(2, 3), dim=(0,)), RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    (lambda: F.fftn(nbtorch.ones(4, 4), dim=(0, -2)), RuntimeError, "FFT dims must be unique"),
    (lambda: F.fft2(nbtorch.ones(4)), IndexError, "Dimension out of range"),
    (lambda: F.fftn(nbtorch.ones(4, 4), s=(2, 0)), RuntimeError,
     r"Invalid number of data points \(0\)"),
    (lambda: F.rfftn(nbtorch.ones(4, 4), dim=()), RuntimeError,
     "rfftn must transform at least one axis"),
    (lambda: F.irfftn(nbtorch.ones(4, 4), dim=()), RuntimeError,
     "irfftn must transform at least one axis"),
    (lambda: F.hfftn(nbtorch.ones(4, 4), dim=()), RuntimeError,
     "hfftn must transform at least one axis"),
    (lambda: F.ihfftn(nbtorch.ones(4, 4), dim=()), RuntimeError,
     "ihfftn must transform at least one axis"),
    (lambda: F.fft(nbtorch.ones(4), out=nbtorch.empty(4)), RuntimeError,
     "fft expects a complex output tensor, but got Float"),
    (lambda: F.irfft(nbtorch.ones(4, dtype=nbtorch.complex64),
                     out=nbtorch.empty(6, dtype=nbtorch.complex64)), RuntimeError,
     "irfft expects a floating point output tensor, but got ComplexFloat"),
    (lambda: F.fftfreq(4, dtype=nbtorch.int64), RuntimeError,
     "fftfreq requires a floating point or complex dtype"),
    (lambda: F.fftfreq(-1), RuntimeError, "Trying to create tensor with negative dimension -1"),
    (lambda: F.fftshift(nbtorch.tensor(3.0)), RuntimeError, "`shifts` required"),
    (lambda: F.ifftshift(nbtorch.ones(2, 3), dim=5), IndexError, "Dimension out of range"),
    (lambda: F.fft(nbtorch.ones(4), n=2.0), TypeError,
     "fft_fft\\(\\): argument 'n' must be int, not float"),
    (lambda: F.irfft(nbtorch.ones(4), norm=1), TypeError, "argument 'norm' must be str, not int"),
    (lambda: F.fftn(nbtorch.ones(4), s=(2.0,)), TypeError,
     "argument 's' must be tuple of ints, not tuple"),
    (lambda: F.rfft(nbtorch.ones(4), dim=True), TypeError, "argument 'dim' must be int, not bool"),
    (lambda: F.fft([1.0, 2.0]), TypeError, "must be Tensor"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    call, exc, match = ERRORS[i]
    with pytest.raises(exc, match=match):
        call()


def test_errors_match_pytorch():
    torch = pytest.importorskip("torch")
    import nbtorch.fft as nbfft
    for call, exc, _ in ERRORS[:-1]:
        code = call.__code__
        # rerun each call with PyTorch by swapping the module the lambda reads
        g = dict(call.__globals__, F=torch.fft, nbtorch=torch)
        tcall = type(call)(code, g)
        with pytest.raises(Exception) as te:
            tcall()
        with pytest.raises(Exception) as ne:
            call()
        assert type(ne.value) is type(te.value)
        assert str(ne.value).splitlines()[0] == str(te.value).splitlines()[0]
    assert nbfft.fft is F.fft


# ---- out=, axis=, frequencies, shifts -------------------------------------------------

def test_out_and_axis():
    x = nbtorch.tensor(_data((3, 4), False))
    out = nbtorch.empty(3, 4, dtype=nbtorch.complex64)
    r = F.fft(x, dim=0, out=out)
    assert r is out
    _close(out, np.fft.fft(x.numpy(), axis=0), 1e-6)           # complex128 cast down
    out = nbtorch.empty(2, dtype=nbtorch.float64)
    with pytest.warns(UserWarning, match="was resized"):
        F.irfft(F.rfft(x), out=out)
    assert out.shape == (3, 4)
    _close(out, x.numpy(), 1e-12)
    _close(F.fft(x, axis=0), np.fft.fft(x.numpy(), axis=0), 1e-12)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        F.fft(x.clone().requires_grad_(), out=nbtorch.empty(3, 4, dtype=nbtorch.complex128))


def test_fftfreq_rfftfreq(device):
    assert F.fftfreq(0).shape == (0,) and np.isnan(F.rfftfreq(0).numpy()).all()
    for n in (1, 4, 7):
        for d in (1.0, 0.3):
            _close(F.fftfreq(n, d, device=device), np.fft.fftfreq(n, d), 1e-7)
            _close(F.rfftfreq(n, d, dtype=nbtorch.float64, device=device),
                   np.fft.rfftfreq(n, d), 1e-15)
    f = F.fftfreq(5, requires_grad=True)
    assert f.requires_grad and f.dtype is nbtorch.float32 and f.device.type == "cpu"
    out = nbtorch.empty(5, dtype=nbtorch.float64)
    assert F.fftfreq(5, out=out) is out and out.dtype is nbtorch.float64
    with pytest.raises(RuntimeError, match=r"dtype Float does not match dtype of out parameter"):
        F.fftfreq(5, out=out, dtype=nbtorch.float32)


def test_shifts(device):
    a = np.arange(30.0).reshape(5, 6)
    t = nbtorch.tensor(a, device=device)
    for dim in (None, 0, 1, (0, 1), (-1,), (0, 0)):
        axes = dim if dim != (0, 0) else (0, 0)
        _close(F.fftshift(t, dim=dim), np.fft.fftshift(a, axes=axes), 0)
        _close(F.ifftshift(t, dim=dim), np.fft.ifftshift(a, axes=axes), 0)
    assert F.fftshift(nbtorch.arange(5)).dtype is nbtorch.int64
    x = nbtorch.tensor(a, requires_grad=True)
    F.fftshift(x).backward(nbtorch.tensor(a))
    _close(x.grad, np.fft.ifftshift(a), 0)


# ---- gradients --------------------------------------------------------------------------

def _grad_and_numeric(fn, a, eps=1e-6):
    """(analytic, numeric) gradients of L(x) = sum Re(conj(w) fn(x)) at a (float64)."""
    x = nbtorch.tensor(a, requires_grad=True)
    y = fn(x)
    w = RNG.standard_normal(tuple(y.shape))
    if y.dtype.is_complex:
        w = w + 1j * RNG.standard_normal(tuple(y.shape))
    y.backward(nbtorch.tensor(w, dtype=y.dtype))

    def loss(v):
        out = fn(nbtorch.tensor(v)).numpy()
        return float(np.sum(np.real(np.conj(w) * out)))

    num = np.zeros(a.shape, dtype=a.dtype)
    for idx in np.ndindex(*a.shape):
        for unit in ((1.0, 1j) if np.iscomplexobj(a) else (1.0,)):
            p, m = a.copy(), a.copy()
            p[idx] += eps * unit
            m[idx] -= eps * unit
            num[idx] += unit * (loss(p) - loss(m)) / (2 * eps)
    return x.grad.numpy(), num


CASES = [(name, kw) for name in ONE_D for kw in ({}, {"n": 3}, {"n": 7})] + \
        [(name, kw) for name in N_D for kw in ({}, {"s": (2, 5)})]


@pytest.mark.parametrize("name,kw", CASES)
def test_gradients_finite_differences(name, kw):
    for complex_ in (False, True):
        if complex_ and name in REAL_ONLY:
            continue
        a = _data((2, 3), complex_)
        norm = ("ortho", "forward", None)[len(name) % 3]
        fn = lambda x: getattr(F, name)(x, norm=norm, **kw)      # noqa: E731
        analytic, numeric = _grad_and_numeric(fn, a)
        np.testing.assert_allclose(analytic, numeric, atol=1e-6, rtol=1e-6)


def test_gradcheck_and_second_order():
    x = nbtorch.tensor(RNG.standard_normal((2, 5)), requires_grad=True)
    assert gradcheck(lambda t: nbtorch.view_as_real(F.rfft(t, norm="ortho")), (x,))
    assert gradcheck(lambda t: F.hfft(F.fft(t), n=6), (x,))
    assert gradgradcheck(lambda t: F.irfft(F.rfft(t) * F.rfft(t).abs(), n=5), (x,))
    assert gradgradcheck(lambda t: F.ihfft2(t * t).abs(), (x,))


@pytest.mark.parametrize("name,kw", CASES[::2])
def test_gradients_match_pytorch(name, kw):
    torch = pytest.importorskip("torch")
    for complex_ in (False, True):
        if complex_ and name in REAL_ONLY:
            continue
        a = _data((3, 4), complex_)
        ta = torch.tensor(a, requires_grad=True)
        ty = getattr(torch.fft, name)(ta, **kw)
        w = RNG.standard_normal(tuple(ty.shape)) + (1j * RNG.standard_normal(tuple(ty.shape))
                                                    if ty.is_complex() else 0)
        ty.backward(torch.tensor(w, dtype=ty.dtype))
        x = nbtorch.tensor(a, requires_grad=True)
        y = getattr(F, name)(x, **kw)
        assert str(y.dtype) == str(ty.dtype) and tuple(y.shape) == tuple(ty.shape)
        _close(y, ty.detach().resolve_conj().numpy(), 1e-10)
        y.backward(nbtorch.tensor(w, dtype=y.dtype))
        _close(x.grad, ta.grad.resolve_conj().numpy(), 1e-10)


def test_traced_and_compiled():
    """torch.fft calls are graph nodes (printed as torch.fft.*) and compile with gradients."""
    def f(x):
        return F.irfft(F.rfft(x) * 2, n=8).abs() + F.hfft(F.ihfft(x), n=8)

    x = nbtorch.tensor(RNG.standard_normal((3, 8)), requires_grad=True)
    traced = nbtorch.jit.trace(f, (x,))
    assert "torch.fft.rfft" in traced.code
    _close(traced(x), f(x).detach().numpy(), 1e-12)
    compiled = nbtorch.compile(f)
    compiled(x).sum().backward()
    g = x.grad.numpy().copy()
    x.grad = None
    f(x).sum().backward()
    _close(x.grad, g, 1e-12)


def _random_call(rnd):
    """A random (name, shape, dtype, kwargs) of torch.fft, valid or not."""
    name = rnd.choice(ONE_D + N_D)
    shape = tuple(rnd.randint(1, 6) if rnd.random() > 0.1 else 0
                  for _ in range(rnd.randint(0, 3)))
    dtype = rnd.choice(("float32", "float64", "complex64", "complex128", "int64", "float16"))
    kw = {}
    if name in ONE_D:
        if rnd.random() < 0.5:
            kw["n"] = rnd.randint(-1, 8)
        if rnd.random() < 0.7:
            kw["dim"] = rnd.randint(-4, 3)
    else:
        if rnd.random() < 0.5:
            kw["s"] = tuple(rnd.choice((-1, 0, 1, 2, 3, 5)) for _ in range(rnd.randint(0, 4)))
        if rnd.random() < 0.5:
            k = len(kw["s"]) if "s" in kw and rnd.random() < 0.7 else rnd.randint(0, 4)
            kw["dim"] = tuple(rnd.randint(-4, 3) for _ in range(k))
    if rnd.random() < 0.5:
        kw["norm"] = rnd.choice(("ortho", "forward", "backward", None))
    return name, shape, dtype, kw


def test_random_calls_match_pytorch():
    """Seeded random calls (shapes, dtypes, n/s/dim/norm, invalid ones included): the same
    dtype, shape and values as PyTorch, or the same error class and message."""
    torch = pytest.importorskip("torch")
    import random
    rnd = random.Random(7)
    for _ in range(300):
        name, shape, dtype, kw = _random_call(rnd)
        a = _data(shape, dtype.startswith("complex"))
        t_in = torch.tensor(a).to(getattr(torch, dtype))
        n_in = nbtorch.tensor(t_in.numpy() if dtype != "float16" else a).to(
            getattr(nbtorch, dtype))
        try:
            expected, t_err = getattr(torch.fft, name)(t_in, **kw), None
        except Exception as e:              # noqa: BLE001 - compared below
            expected, t_err = None, e
        if t_err is not None and "MKL" in str(t_err):
            continue                        # PyTorch's MKL refuses empty batches; we don't
        try:
            got, n_err = getattr(F, name)(n_in, **kw), None
        except Exception as e:              # noqa: BLE001
            got, n_err = None, e
        call = f"{name}{shape} {dtype} {kw}"
        if t_err is not None or n_err is not None:
            assert type(n_err) is type(t_err), f"{call}: {t_err!r} vs {n_err!r}"
            assert str(n_err).splitlines()[0] == str(t_err).splitlines()[0], call
            continue
        assert str(got.dtype) == str(expected.dtype) and got.shape == expected.shape, call
        tol = 1e-4 if dtype in ("float32", "complex64", "int64") else 1e-10
        _close(got, expected.resolve_conj().numpy(), tol)
