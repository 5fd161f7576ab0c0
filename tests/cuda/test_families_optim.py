"""Fused optimizer steps on CUDA against the CPU: same formulas, same trajectory."""
import numpy as np
import pytest

import nbtorch

pytestmark = pytest.mark.cuda

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1)),
]


def _run(name, kw, device, dtype):
    rng = np.random.default_rng(0)
    p = nbtorch.tensor(rng.standard_normal((3, 5)).astype(dtype)).to(device)
    p.requires_grad_(True)
    opt = getattr(nbtorch.optim, name)([p], **kw)
    for step in range(3):
        opt.zero_grad()
        ((p * p).sum() + p.sum() * step).backward()
        opt.step()
    return p.detach().cpu().numpy()


@pytest.mark.parametrize("config", range(len(CONFIGS)))
def test_optimizer_matches_cpu(config):
    name, kw = CONFIGS[config]
    want = _run(name, kw, "cpu", np.float32)
    got = _run(name, kw, "cuda", np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_float64_adam():
    np.testing.assert_allclose(_run("Adam", dict(lr=0.01), "cuda", np.float64),
                               _run("Adam", dict(lr=0.01), "cpu", np.float64), rtol=1e-12)
