"""Parts of PyTorch's surface that touch CUDA: the default device, torch.cuda.*Tensor
legacy types, deterministic-algorithm alerts of the atomic backward kernels (simulator
or GPU); __cuda_array_interface__ and DLPack on device memory (a real GPU)."""
import numpy as np
import pytest

import nbtorch

pytestmark = pytest.mark.cuda


def test_default_device_cuda():
    with nbtorch.device("cuda"):
        made = [nbtorch.zeros(2), nbtorch.randn(2), nbtorch.tensor([1.0]), nbtorch.arange(3),
                nbtorch.as_tensor(np.zeros(2)), nbtorch.nn.Linear(2, 2).weight,
                nbtorch.randint(3, (2,)), nbtorch.eye(2)]
        assert all(t.device == nbtorch.device("cuda", 0) for t in made)
        assert nbtorch.FloatTensor(2).device.type == "cpu"         # legacy: always its own
        assert nbtorch.from_numpy(np.zeros(1)).device.type == "cpu"
        nn_init = nbtorch.empty(3, 3)
        nbtorch.nn.init.kaiming_normal_(nn_init)                   # host draws, device tensor
        assert nn_init.device.type == "cuda"
    assert nbtorch.zeros(1).device.type == "cpu"
    nbtorch.set_default_device("cuda")
    try:
        assert nbtorch.get_default_device() == nbtorch.device("cuda", 0)
        assert nbtorch.ones(1).device.type == "cuda"
    finally:
        nbtorch.set_default_device(None)


def test_cuda_legacy_types():
    x = nbtorch.cuda.FloatTensor(2, 3)
    assert x.device.type == "cuda" and x.dtype is nbtorch.float32
    assert isinstance(x, nbtorch.cuda.FloatTensor) and not isinstance(x, nbtorch.FloatTensor)
    assert x.type() == "torch.cuda.FloatTensor"
    assert nbtorch.ones(2).type(nbtorch.cuda.LongTensor).device.type == "cuda"
    assert nbtorch.ones(2).type("torch.cuda.DoubleTensor").dtype is nbtorch.float64
    assert nbtorch.cuda.LongTensor([1, 2]).tolist() == [1, 2]


def test_deterministic_alerts_on_atomic_kernels():
    x = nbtorch.randn(1, 1, 4, 4, device="cuda", requires_grad=True)
    nbtorch.use_deterministic_algorithms(True)
    try:
        with pytest.raises(RuntimeError, match="max_pool2d_with_indices_backward_cuda"):
            nbtorch.nn.functional.max_pool2d(x, 2).sum().backward()
        with pytest.raises(RuntimeError, match="embedding_backward_cuda"):
            emb = nbtorch.nn.Embedding(4, 2).to("cuda")
            emb(nbtorch.tensor([1, 1], device="cuda")).sum().backward()
        nbtorch.use_deterministic_algorithms(True, warn_only=True)
        with pytest.warns(UserWarning, match="avg_pool2d_backward_cuda"):
            nbtorch.nn.functional.avg_pool2d(x, 2).sum().backward()
        y = nbtorch.zeros(3, device="cuda")        # an assignment, not an accumulation
        nbtorch.use_deterministic_algorithms(True)
        y[nbtorch.tensor([0, 1], device="cuda")] = 1.0
    finally:
        nbtorch.use_deterministic_algorithms(False)
    nbtorch.nn.functional.max_pool2d(x, 2).sum().backward()


@pytest.mark.gpu
def test_cuda_array_interface_and_dlpack_share_device_memory():
    from numba import cuda
    x = nbtorch.zeros(2, 3, device="cuda")
    cai = x.__cuda_array_interface__
    assert cai["shape"] == (2, 3) and cai["typestr"] == "<f4" and cai["version"] == 2
    view = cuda.as_cuda_array(x)
    view[1, 2] = 5.0                                   # written through Numba's view
    assert x[1, 2].item() == 5.0
    assert x.t().__cuda_array_interface__["strides"] == (4, 12)
    assert x.__dlpack_device__() == (2, 0)
    y = nbtorch.from_dlpack(x.__dlpack__(max_version=(1, 0)))
    assert y.device == x.device and y.data_ptr() == x.data_ptr()
    y[0, 0] = 7.0
    assert x[0, 0].item() == 7.0
    z = nbtorch.utils.dlpack.from_dlpack(nbtorch.utils.dlpack.to_dlpack(x.t()))
    assert z.stride() == (1, 3) and z[2, 1].item() == 5.0
    assert nbtorch.from_dlpack(x.__dlpack__(dl_device=(1, 0))).device.type == "cpu"
    cupy = pytest.importorskip("cupy")
    c = cupy.from_dlpack(x)
    c[0, 1] = 3.0
    assert x[0, 1].item() == 3.0
