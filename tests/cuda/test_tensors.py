"""Tensors on CUDA: creation, transfers, views sharing memory, host conversions, device rules."""
import numpy as np
import pytest

import nbtorch

pytestmark = pytest.mark.cuda


def test_creation_functions_take_a_cuda_device(device):
    for t in (nbtorch.zeros(2, 3, device=device), nbtorch.ones(2, 3, device=device),
              nbtorch.full((2, 3), 7, device=device), nbtorch.empty(2, 3, device=device),
              nbtorch.arange(6, device=device), nbtorch.linspace(0, 1, 5, device=device),
              nbtorch.eye(3, device=device), nbtorch.tensor([1, 2], device=device),
              nbtorch.rand(3, device=device), nbtorch.randn(3, device=device)):
        assert t.device.type == device
        assert t.is_cuda == (device == "cuda")
    z = nbtorch.zeros(2, 3, device=device)
    assert z.tolist() == [[0.0] * 3] * 2
    assert nbtorch.full((2,), 7, device=device).tolist() == [7, 7]
    np.testing.assert_allclose(nbtorch.linspace(-1, 1, 7, device=device).cpu().numpy(),
                               np.linspace(-1, 1, 7, dtype=np.float32))
    assert nbtorch.arange(1, 10, 3, device=device).tolist() == [1, 4, 7]
    assert nbtorch.arange(0, 1, 0.25, dtype=nbtorch.float16, device=device).tolist() == \
        [0, 0.25, 0.5, 0.75]
    assert nbtorch.eye(2, 3, device=device).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert nbtorch.ones(2, device=device).new_zeros(3).device.type == device
    assert nbtorch.zeros_like(z).device == z.device
    assert nbtorch.zeros(0, 3, device=device).shape == (0, 3)


def test_device_strings_and_index():
    t = nbtorch.ones(2, device="cuda:0")
    assert t.device == nbtorch.device("cuda", 0) and str(t.device) == "cuda:0"
    assert t.get_device() == 0
    assert nbtorch.ones(2).cuda().device == t.device
    assert nbtorch.ones(2).to(nbtorch.device("cuda")).device == t.device


def test_round_trip_every_dtype():
    for dt in (nbtorch.float16, nbtorch.float32, nbtorch.float64, nbtorch.int8, nbtorch.int16,
               nbtorch.int32, nbtorch.int64, nbtorch.uint8, nbtorch.bool):
        x = nbtorch.tensor([[0, 1, 2], [3, 4, 5]]).to(dt)
        y = x.cuda()
        assert y.dtype is dt and y.shape == x.shape
        np.testing.assert_array_equal(y.cpu().numpy(), x.numpy())


def test_strided_and_broadcast_sources_transfer_and_copy():
    a = nbtorch.arange(24.0).reshape(2, 3, 4)
    g = a.cuda()
    np.testing.assert_array_equal(g.permute(2, 0, 1).cpu().numpy(),
                                  a.permute(2, 0, 1).numpy())
    np.testing.assert_array_equal(g[:, ::2, 1:].cpu().numpy(), a[:, ::2, 1:].numpy())
    np.testing.assert_array_equal(a.permute(2, 0, 1).cuda().cpu().numpy(),
                                  a.permute(2, 0, 1).numpy())
    dst = nbtorch.zeros(2, 3, 4, device="cuda")
    dst[:, 1].copy_(nbtorch.tensor([1.0, 2.0, 3.0, 4.0]))       # host source, broadcast
    assert dst[1, 1].tolist() == [1, 2, 3, 4] and dst[0, 0].tolist() == [0] * 4
    c = g.transpose(0, 2).contiguous()
    assert c.is_contiguous() and c.cpu().tolist() == a.transpose(0, 2).tolist()
    assert g.double().dtype is nbtorch.float64 and g.int().cpu().tolist() == a.int().tolist()
    np.testing.assert_array_equal(g.expand(2, 2, 3, 4).cpu().numpy(),
                                  np.broadcast_to(a.numpy(), (2, 2, 3, 4)))


def test_views_share_device_memory():
    x = nbtorch.zeros(3, 4, device="cuda")
    v = x[1]
    v.fill_(5)
    assert x.cpu()[1].tolist() == [5.0] * 4
    w = x.view(12)
    w[0:2] = 1
    assert x[0, :2].tolist() == [1.0, 1.0]
    tt = x.t()
    tt[0] += 10
    assert x[:, 0].tolist() == [11.0, 15.0, 10.0]
    assert x._storage is tt._storage


def test_numpy_raises_and_host_conversions_copy():
    x = nbtorch.tensor([[1.5, 2.0]], device="cuda")
    with pytest.raises(TypeError, match=r"can't convert cuda:0 device type tensor to numpy"):
        x.numpy()
    assert x.tolist() == [[1.5, 2.0]]
    assert x[0, 0].item() == 1.5 and float(x[0, 1]) == 2.0
    assert "device='cuda:0'" in repr(x)
    assert np.asarray(x).tolist() == [[1.5, 2.0]]
    assert bool(nbtorch.tensor(True, device="cuda"))


def test_cpu_scalar_tensors_mix_with_cuda_tensors():
    x = nbtorch.tensor([1.0, 2.0], device="cuda")
    s = nbtorch.tensor(3.0)
    assert (x * s).device == x.device and (x * s).tolist() == [3.0, 6.0]
    assert (s + x).device == x.device and (s + x).tolist() == [4.0, 5.0]
    assert nbtorch.where(x > 1, x, s).tolist() == [3.0, 2.0]


def test_mixed_devices_raise():
    x = nbtorch.ones(2, device="cuda")
    y = nbtorch.ones(2)
    msg = ("Expected all tensors to be on the same device, but found at least two devices, "
           "cuda:0 and cpu!")
    with pytest.raises(RuntimeError, match=msg):
        x + y
    with pytest.raises(RuntimeError, match="same device"):
        nbtorch.mul(y, x)
    with pytest.raises(RuntimeError, match="same device"):
        x.add_(y)


def test_non_blocking_and_pinned_memory():
    x = nbtorch.arange(8.0)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned()
    assert p.pin_memory() is p
    g = p.to("cuda", non_blocking=True)
    h = g.to("cpu", non_blocking=True)
    nbtorch.cuda.synchronize()
    assert h.tolist() == x.tolist()
    assert g.cuda(non_blocking=True) is g
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        g.pin_memory()


def test_autograd_flows_across_devices():
    x = nbtorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.cuda()
    z = (y * y + y).cpu()
    z.backward(nbtorch.ones(3))
    assert x.grad.device.type == "cpu"
    assert x.grad.tolist() == [3.0, 5.0, 7.0]
    w = nbtorch.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    (w * 3).backward(nbtorch.ones(2, device="cuda"))
    assert w.grad.device == w.device and w.grad.tolist() == [3.0, 3.0]


def test_empty_and_zero_d_tensors():
    e = nbtorch.ones(0, 4, device="cuda")
    assert (e + 1).shape == (0, 4) and e.cpu().shape == (0, 4)
    s = nbtorch.tensor(2.5, device="cuda")
    assert (s * 2).item() == 5.0 and s.cpu().dim() == 0


def test_is_device_array_tells_device_from_host():
    from numba import cuda as nb_cuda
    import numpy as np
    from nbtorch.kernels.cuda._launch import is_device_array
    assert is_device_array(nb_cuda.to_device(np.ones(3)))
    assert not is_device_array(np.ones(3)) and not is_device_array(1.0)


def test_checkpoint_saved_from_cuda_loads_with_map_location(tmp_path):
    model = nbtorch.nn.Linear(3, 2).to("cuda")
    opt = nbtorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(nbtorch.ones(4, 3, device="cuda")).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    nbtorch.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
    on_cpu = nbtorch.load(path, map_location="cpu")
    assert on_cpu["model"]["weight"].device.type == "cpu"
    np.testing.assert_array_equal(on_cpu["model"]["weight"].numpy(),
                                  model.weight.detach().cpu().numpy())
    fresh = nbtorch.nn.Linear(3, 2)
    fresh.load_state_dict(on_cpu["model"])
    as_saved = nbtorch.load(path)
    assert as_saved["model"]["bias"].device.type == "cuda"
