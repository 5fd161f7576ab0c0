"""Elementwise ops on CUDA: every registered kernel against the CPU's, then layouts and dtypes."""
import inspect

import numpy as np
import pytest

import nbtorch
from nbtorch._registry import get_kernel
from nbtorch.kernels import scalar
from nbtorch.kernels.elementwise import OPS

pytestmark = pytest.mark.cuda

POINTWISE = [(op, op) for op in sorted(OPS)]      # (op, its scalar body): the same name


def _inputs(dtype, nargs, rng):
    if dtype == np.bool_:
        return [rng.random(6) < 0.5 for _ in range(nargs)]
    if dtype == np.int64:
        return [rng.integers(1, 6, 6).astype(np.int64) for _ in range(nargs)]
    return [rng.uniform(0.2 + 0.1 * (k > 0), 0.8 + 0.1 * (k > 0), 6).astype(dtype)
            for k in range(nargs)]


def _result_dtype(body, args):
    """The body's natural result dtype (bool for predicates), found by running it in Python."""
    try:
        r = getattr(scalar, body)(*[a[0] for a in args])
    except Exception:
        return args[0].dtype
    return np.dtype(np.bool_) if isinstance(r, (bool, np.bool_)) else args[0].dtype


def _cpu_reference(op, body, nargs, rng):
    """(inputs, output) for the first dtype the CPU kernel accepts: float32, int64, bool."""
    for dtype in (np.float32, np.int64, np.bool_):
        args = _inputs(dtype, nargs, rng)
        out = np.empty(6, _result_dtype(body, args))
        try:
            get_kernel(op, "cpu")(out, *args)
        except Exception:
            continue
        return args, out
    pytest.skip(f"{op}: no CPU kernel for float32, int64 or bool")


@pytest.mark.parametrize("op,body", POINTWISE, ids=[o for o, _ in POINTWISE])
def test_every_pointwise_kernel_matches_the_cpu(op, body):
    from numba import cuda
    nargs = len(inspect.signature(getattr(scalar, body)).parameters)
    args, expected = _cpu_reference(op, body, nargs, np.random.default_rng(0))
    out = cuda.device_array(6, expected.dtype)
    get_kernel(op, "cuda")(out, *[cuda.to_device(a) for a in args])
    np.testing.assert_allclose(out.copy_to_host(), expected, rtol=2e-6, atol=1e-6,
                               equal_nan=True, err_msg=op)


def _both(fn, device, *arrays):
    """fn over tensors made from `arrays` on `device`, returned as NumPy."""
    ts = [nbtorch.from_numpy(np.ascontiguousarray(a)).to(device) for a in arrays]
    return fn(*ts).cpu().numpy()


def _check(fn, *arrays, rtol=1e-6):
    np.testing.assert_allclose(_both(fn, "cuda", *arrays), _both(fn, "cpu", *arrays),
                               rtol=rtol, atol=1e-6, equal_nan=True)


def test_strided_broadcast_and_scalar_operands():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((5,)).astype(np.float32)
    _check(lambda x, y: x.permute(2, 0, 1) + y[:, None, None], a, b)     # strided + broadcast
    _check(lambda x, y: x[:, ::2, 1:] * y[1:], a, b)                     # sliced
    _check(lambda x, y: nbtorch.where(x > 0, x, 2.0) - y, a, b)         # bool cond, scalar
    _check(lambda x: nbtorch.clamp(x, -0.5, 0.5) * 3 + 1, a)              # scalar params
    _check(lambda x: x.expand(2, 3, 4, 5).exp(), a)
    _check(lambda x, y: x.unsqueeze(0).expand(2, 3, 4, 5) / y, a, b)


def test_more_than_four_merged_dims():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3, 2, 3, 2, 2)).astype(np.float32)
    _check(lambda x: x.permute(5, 3, 1, 4, 2, 0) * 2, a)
    _check(lambda x: x.permute(0, 2, 4, 1, 3, 5) + x.permute(0, 2, 4, 1, 3, 5)[1], a)


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32, np.int64, np.uint8])
def test_dtypes(dtype):
    a = (np.arange(12).reshape(3, 4) % 7 + 1).astype(dtype)
    _check(lambda x: x * 2 + x, a)
    _check(lambda x: (x > 3) & (x < 6), a)
    _check(lambda x: x.t() - x.t()[0], a)
    if np.dtype(dtype).kind == "f":
        _check(lambda x: nbtorch.sigmoid(x).exp(), a, rtol=1e-3 if dtype == np.float16 else 1e-6)
    else:
        _check(lambda x: x // 3 + x % 3, a)


def test_inplace_on_views_and_out():
    x = nbtorch.arange(12.0).reshape(3, 4)
    g = x.cuda()
    g[:, 1::2].mul_(10)
    x[:, 1::2].mul_(10)
    assert g.tolist() == x.tolist()
    out = nbtorch.empty(3, 4, device="cuda")
    nbtorch.add(g, 1, out=out)
    assert out.tolist() == (x + 1).tolist()
    out64 = nbtorch.empty(3, 4, dtype=nbtorch.float64, device="cuda")
    nbtorch.mul(g, g, out=out64)
    assert out64.dtype is nbtorch.float64 and out64.tolist() == (x * x).tolist()


def test_gradients_on_cuda_match_cpu():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4))
    grads = []
    for device in ("cpu", "cuda"):
        x = nbtorch.tensor(a, device=device, requires_grad=True)
        y = (nbtorch.tanh(x) * x.sigmoid() + nbtorch.nn.functional.gelu(x)) / (x * x + 1)
        y.backward(nbtorch.ones_like(y))
        assert x.grad.device == x.device
        grads.append(x.grad.cpu().numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
