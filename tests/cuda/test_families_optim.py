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
    ("Adadelta", dict(lr=0.5, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.8))),           # rectified from step 7
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("ASGD", dict(lr=0.05, t0=2, lambd=0.01, weight_decay=0.1)),
    ("Rprop", dict(lr=0.05, etas=(0.4, 1.5), step_sizes=(0.01, 0.2))),
]


def _run(name, kw, device, dtype, steps=3):
    rng = np.random.default_rng(0)
    p = nbtorch.tensor(rng.standard_normal((3, 5)).astype(dtype)).to(device)
    p.requires_grad_(True)
    opt = getattr(nbtorch.optim, name)([p], **kw)
    for step in range(steps):
        opt.zero_grad()
        ((p * p).sum() + p.sum() * step).backward()
        opt.step()
    return p.detach().cpu().numpy()


@pytest.mark.parametrize("config", range(len(CONFIGS)))
def test_optimizer_matches_cpu(config):
    name, kw = CONFIGS[config]
    steps = 8 if name == "RAdam" else 3
    want = _run(name, kw, "cpu", np.float32, steps)
    got = _run(name, kw, "cuda", np.float32, steps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_float64_adam():
    np.testing.assert_allclose(_run("Adam", dict(lr=0.01), "cuda", np.float64),
                               _run("Adam", dict(lr=0.01), "cpu", np.float64), rtol=1e-12)
