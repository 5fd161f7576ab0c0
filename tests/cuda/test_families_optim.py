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


@pytest.mark.parametrize("name,kw", [("NAdam", dict(lr=0.01, weight_decay=0.1)),
                                     ("ASGD", dict(lr=0.05, t0=1, lambd=0.01))])
def test_scalar_state_loaded_onto_the_device(name, kw):
    """A state_dict loaded for CUDA parameters moves NAdam's mu_product and ASGD's
    eta/mu there too (as PyTorch does); the steps keep matching the CPU run."""
    rng = np.random.default_rng(1)
    start = rng.standard_normal(6).astype(np.float64)
    grads = [rng.standard_normal(6) for _ in range(4)]
    cpu = nbtorch.tensor(start, requires_grad=True)
    opt = getattr(nbtorch.optim, name)([cpu], **kw)
    dev = nbtorch.tensor(start).to("cuda").requires_grad_(True)
    dev_opt = getattr(nbtorch.optim, name)([dev], **kw)
    for i, g in enumerate(grads):
        cpu.grad = nbtorch.tensor(g)
        opt.step()
        if i == 1:
            with nbtorch.no_grad():
                dev.copy_(cpu.to("cuda"))
            dev_opt.load_state_dict(opt.state_dict())
            scalars = [v for k, v in dev_opt.state[dev].items() if k != "step" and v.dim() == 0]
            assert scalars and all(v.device.type == "cuda" for v in scalars)
        elif i > 1:
            dev.grad = nbtorch.tensor(g).to("cuda")
            dev_opt.step()
    np.testing.assert_allclose(dev.detach().cpu().numpy(), cpu.detach().numpy(), rtol=1e-6)


def _lbfgs_solution(device):
    a = nbtorch.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=nbtorch.float64).to(device)
    b = nbtorch.tensor([1.0, -1.0], dtype=nbtorch.float64).to(device)
    x = nbtorch.zeros(2, dtype=nbtorch.float64).to(device).requires_grad_(True)
    opt = nbtorch.optim.LBFGS([x], max_iter=6, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x * (a @ x)).sum() - (b * x).sum()
        loss.backward()
        return loss
    opt.step(closure)
    return x.detach().cpu().numpy(), opt.state[x]["func_evals"]


def test_lbfgs_on_the_device():
    got, evals = _lbfgs_solution("cuda")
    want, want_evals = _lbfgs_solution("cpu")
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert evals == want_evals
    np.testing.assert_allclose(got, np.linalg.solve([[2.0, 0.5], [0.5, 1.0]], [1.0, -1.0]),
                               rtol=1e-4)
