"""nbtorch.library on CUDA: a user's cuda.jit kernel, elementwise ops from a scalar function,
overriding a built-in CUDA kernel (simulator or GPU; owned by the library tests)."""
import numpy as np
import pytest
from numba import cuda

import nbtorch
from nbtorch import library, profiler

pytestmark = pytest.mark.cuda

if not cuda.is_available():       # True on the simulator too
    pytest.skip("needs the CUDA simulator or a GPU", allow_module_level=True)


@cuda.jit
def _scaled_add_cuda(x, y, alpha, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = x[i] + alpha * y[i]


@pytest.fixture
def lib(request):
    with library.Library("tc_" + request.node.name) as lib_:
        yield lib_


def _scaled_add(lib):
    @lib.define("scaled_add")
    def scaled_add(x, y, alpha=1.0):
        return library.TensorSpec(x.shape, x.dtype)

    @scaled_add.register_kernel("cpu")
    def _(x, y, alpha, out):
        out[...] = x + alpha * y

    scaled_add.register_kernel("cuda", _scaled_add_cuda)
    scaled_add.register_backward(lambda ctx, g: (g, g * ctx.inputs[2], None))
    return scaled_add


def test_custom_cuda_kernel_dispatch_and_backward(lib):
    op = _scaled_add(lib)
    a = nbtorch.randn(7, dtype=nbtorch.float64)
    b = nbtorch.randn(7, dtype=nbtorch.float64)
    ca = a.cuda().requires_grad_()
    cb = b.cuda().requires_grad_()
    y = op(ca, cb, 2.0)
    assert y.device.type == "cuda"
    np.testing.assert_allclose(y.detach().cpu().numpy(), op(a, b, 2.0).numpy())
    y.backward(nbtorch.ones(7, dtype=nbtorch.float64, device="cuda"))
    np.testing.assert_allclose(cb.grad.cpu().numpy(), np.full(7, 2.0))
    assert op.devices == ("cpu", "cuda")


def test_mixed_devices_are_refused(lib):
    op = _scaled_add(lib)
    with pytest.raises(RuntimeError, match="same device"):
        op(nbtorch.ones(3).cuda(), nbtorch.ones(3))


def test_elementwise_on_cuda_matches_cpu(lib):
    op = lib.elementwise(lambda x, y: x * y + 1.0, name="fma1",
                         grads=[lambda x, y: y, lambda x, y: x])
    x = nbtorch.randn(3, 4)
    y = nbtorch.randn(4)
    np.testing.assert_allclose(op(x.cuda(), y.cuda()).cpu().numpy(), op(x, y).numpy(),
                               rtol=1e-6)
    h = op(x.half().cuda(), 2.0)
    assert h.dtype is nbtorch.float16
    np.testing.assert_allclose(h.cpu().float().numpy(), op(x.half(), 2.0).float().numpy(),
                               rtol=1e-3)
    cx = x.cuda().requires_grad_()
    op(cx, y.cuda()).backward(nbtorch.ones(3, 4, device="cuda"))
    np.testing.assert_allclose(cx.grad.cpu().numpy(), np.broadcast_to(y.numpy(), (3, 4)))


def test_override_cuda_kernel_and_profile(lib):
    calls = []
    builtin = library.kernel("neg", "cuda")

    def my_neg(out, x, **kw):
        calls.append(1)
        builtin(out, x)

    with profiler.profile() as prof:
        with library.override("neg", "cuda", my_neg):
            y = -nbtorch.ones(3).cuda()
    assert calls == [1] and library.kernel("neg", "cuda") is builtin
    assert y.cpu().tolist() == [-1.0, -1.0, -1.0]
    assert any(e.name == "neg" and e.device == "cuda" for e in prof.events())


def test_inspect_cuda_reports_the_kernel(lib):
    r = nbtorch.kernels.inspect("add", device="cuda", dtype=nbtorch.float32)
    assert r.functions and r.functions[0].signatures == ["(float32, float32) -> float32"]
    assert r.ptx or "simulator" in r.functions[0].note
