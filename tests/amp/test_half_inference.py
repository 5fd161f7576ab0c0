"""`model.half()` / `model.bfloat16()` inference on the CPU against PyTorch 2.13: the main
layers give PyTorch's dtypes and (to half precision) its values."""
import numpy as np
import pytest

import nbtorch

torch = pytest.importorskip("torch")


def _cnn(m):
    nn = m.nn
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, groups=2), nn.GroupNorm(2, 4),
                         nn.SiLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 6),
                         nn.LayerNorm(6), nn.GELU(), nn.Linear(6, 3), nn.Tanh(),
                         nn.Softmax(-1))


def _mlp(m):
    nn = m.nn
    return nn.Sequential(nn.Linear(5, 8), nn.Sigmoid(), nn.Dropout(0.5), nn.Linear(8, 8),
                         nn.LeakyReLU(), nn.Linear(8, 2, bias=False))


def _copy(model, ref):
    sd = {k: nbtorch.tensor(v.numpy()) for k, v in ref.state_dict().items()}
    model.load_state_dict(sd)
    return model


@pytest.mark.parametrize("make,shape", [(_cnn, (2, 3, 8, 8)), (_mlp, (4, 5))])
@pytest.mark.parametrize("cast", ["half", "bfloat16"])
def test_low_precision_model_inference(make, shape, cast):
    torch.manual_seed(0)
    ref = make(torch)
    with torch.no_grad():                      # running statistics away from 0/1
        ref(torch.randn(*shape))
    getattr(ref.eval(), cast)().float()        # weights rounded to the low dtype
    model = getattr(_copy(make(nbtorch), ref).eval(), cast)()
    getattr(ref, cast)()
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)
    with torch.no_grad():
        want = ref(torch.tensor(x).to(getattr(torch, cast)))
    with nbtorch.no_grad():
        got = model(nbtorch.tensor(x).to(getattr(nbtorch, cast)))
    assert str(got.dtype) == str(want.dtype)
    assert all(str(p.dtype) == str(want.dtype) for p in model.parameters())
    tol = 2e-2 if cast == "half" else 8e-2
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=tol, atol=tol)
