"""autocast on CUDA tensors: PyTorch 2.13's CUDA op lists (float16 matmuls and convs,
float32 pointwise math, reductions and losses, promotion for multi-input ops), and a
GradScaler training step. Tiny shapes: this runs on the simulator too."""
import pytest

import nbtorch
import nbtorch.nn.functional as F

pytestmark = pytest.mark.cuda

f16, f32 = nbtorch.float16, nbtorch.float32


def _t(*shape, dtype=f32):
    return nbtorch.randn(*shape, device="cuda").to(dtype)


@pytest.mark.parametrize("call,want", [
    (lambda a, h: nbtorch.mm(a, a), f16),
    (lambda a, h: a @ h, f16),
    (lambda a, h: F.linear(a, a, nbtorch.zeros(2, device="cuda")), f16),
    (lambda a, h: nbtorch.mv(a, a[0]), f16),
    (lambda a, h: h.exp(), f32),
    (lambda a, h: h ** 2, f32),
    (lambda a, h: nbtorch.log1p(h.abs()), f32),
    (lambda a, h: h.sum(), f32),
    (lambda a, h: h.sum(dtype=f16), f16),
    (lambda a, h: nbtorch.softmax(h, -1), f32),
    (lambda a, h: h.cumsum(0), f32),
    (lambda a, h: F.layer_norm(h, (2,)), f32),
    (lambda a, h: F.mse_loss(h, h), f32),
    (lambda a, h: F.cross_entropy(h, nbtorch.tensor([0, 1], device="cuda")), f32),
    (lambda a, h: nbtorch.addcmul(h, h, a), f32),
    (lambda a, h: nbtorch.addcmul(h, h, h), f16),
    (lambda a, h: nbtorch.cat([h, h]), f16),
    (lambda a, h: h.relu(), f16),
])
def test_cuda_op_dtypes(call, want):
    a, h = _t(2, 2), _t(2, 2, dtype=f16)
    with nbtorch.autocast("cuda"):
        assert call(a, h).dtype == want


def test_cuda_banned_and_bfloat16():
    with nbtorch.autocast("cuda"):
        with pytest.raises(RuntimeError, match="binary_cross_entropy and torch.nn.BCELoss "
                                               "are unsafe to autocast"):
            F.binary_cross_entropy(_t(2).sigmoid(), nbtorch.ones(2, device="cuda"))
    with pytest.raises(RuntimeError, match="does not support bfloat16"):
        nbtorch.autocast("cuda", dtype=nbtorch.bfloat16)


def test_cuda_grad_scaler_step():
    model = nbtorch.nn.Linear(3, 2).cuda()
    opt = nbtorch.optim.SGD(model.parameters(), lr=0.1)
    scaler = nbtorch.amp.GradScaler("cuda", init_scale=4.0, growth_interval=1)
    before = model.weight.detach().cpu().numpy().copy()
    with nbtorch.autocast("cuda"):
        loss = model(_t(4, 3)).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert model.weight.grad.dtype == f32 and scaler.get_scale() == 8.0
    assert (model.weight.detach().cpu().numpy() != before).any()
