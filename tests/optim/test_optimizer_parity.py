"""Optimizer behaviour as PyTorch's: step hooks see (optimizer, (optimizer, *args), kwargs),
global step hooks run around every optimizer, state_dict / load_state_dict hooks may
replace the dict, a duplicated parameter warns (PyTorch 2.13), complex parameters step as
their real and imaginary parts."""
import numpy as np
import pytest

import nbtorch
from nbtorch.optim.optimizer import (register_optimizer_step_post_hook,
                                     register_optimizer_step_pre_hook)


def _opt():
    p = nbtorch.nn.Parameter(nbtorch.ones(2))
    p.grad = nbtorch.ones(2)
    return nbtorch.optim.SGD([p], lr=0.1), p


def test_step_hooks_see_the_optimizer_in_args_and_global_hooks_wrap_every_optimizer():
    opt, _ = _opt()
    seen = []
    opt.register_step_pre_hook(lambda o, args, kw: seen.append(("pre", args[0] is o)))
    opt.register_step_post_hook(lambda o, args, kw: seen.append(("post", len(args))))
    g_pre = register_optimizer_step_pre_hook(lambda o, a, k: seen.append(("gpre", o is opt)))
    g_post = register_optimizer_step_post_hook(lambda o, a, k: seen.append(("gpost",)))
    try:
        opt.step()
    finally:
        g_pre.remove()
        g_post.remove()
    assert seen == [("gpre", True), ("pre", True), ("post", 1), ("gpost",)]
    opt.step()
    assert len(seen) == 6                   # the global ones removed


def test_state_dict_hooks_may_replace_the_dict():
    opt, p = _opt()
    opt.step()
    calls = []
    opt.register_state_dict_pre_hook(lambda o: calls.append("pre"))
    opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
    sd = opt.state_dict()
    assert calls == ["pre"] and sd["extra"] == 1
    other, _ = _opt()
    other.register_load_state_dict_pre_hook(
        lambda o, sd: {k: v for k, v in sd.items() if k != "extra"})
    other.register_load_state_dict_post_hook(lambda o: calls.append("loaded"))
    other.load_state_dict(sd)
    assert calls == ["pre", "loaded"]
    first = []
    other.register_load_state_dict_post_hook(lambda o: first.append(len(calls)), prepend=True)
    sd = opt.state_dict()
    n = len(calls)
    other.load_state_dict(sd)
    assert first == [n] and calls[-1] == "loaded"   # before the earlier-registered hook


def test_a_duplicated_parameter_warns_as_in_pytorch():
    p = nbtorch.nn.Parameter(nbtorch.ones(2))
    with pytest.warns(UserWarning, match="duplicate parameters"):
        nbtorch.optim.SGD([p, p], lr=0.1)


def test_complex_parameters_step_as_their_real_and_imaginary_parts():
    """As PyTorch's view_as_real updates (every optimizer refused complex before)."""
    torch = pytest.importorskip("torch")
    names = ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam",
             "RAdam", "ASGD", "Rprop")
    for name in names:
        got = []
        for lib in (nbtorch, torch):
            p = lib.nn.Parameter(lib.tensor([1 + 2j, -0.5 + 1j], dtype=lib.complex128))
            opt = getattr(lib.optim, name)([p], lr=0.1)
            for _ in range(3):
                p.grad = 2 * p.detach()
                opt.step()
            got.append(np.array(p.detach().tolist()))
        np.testing.assert_allclose(got[0], got[1], rtol=1e-12, err_msg=name)
