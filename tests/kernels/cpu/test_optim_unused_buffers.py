"""The optimizer loops never touch a buffer an option leaves unused (kernels/cpu/optim.py
`_or_unused`): its stand-in may lie inside another operand's range or over memory never
written, and every flag combination gives the values of the rule's loop called on its
own, its flags then values known at run time only (the loop as it was before)."""
import numpy as np
import pytest

from nbtorch.kernels.cpu import optim, optim_adam, optim_adaptive

N = 40_000


def _state(dtype, seed=0):
    rng = np.random.default_rng(seed)
    p, g, m = (rng.standard_normal(N).astype(dtype) for _ in range(3))
    v = rng.random(N).astype(dtype)
    return [p, g, m, v, v + rng.random(N).astype(dtype)]


def _stand_ins(state, where):
    """(unused, unused2) placed `where`: inside the gradient's range or past an
    allocation's written part."""
    if where == "inside":
        return state[1][:0], state[1][5:5]
    spare = np.empty(4 * N, state[0].dtype)
    return spare[N:N], spare[3 * N:3 * N]


@pytest.mark.parametrize("where", ["inside", "past"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_without_amsgrad(where, dtype):
    state = _state(dtype)
    ref = [x.copy() for x in state]
    unused, _ = _stand_ins(state, where)
    args = (1.0, 0.01, 0.9, 0.999, 1e-8, 1e-3, 0.5, False, False, False)
    for fn in (optim_adam.adam_step_serial, optim_adam.adam_step_parallel):
        s = [x.copy() for x in state]
        fn(*s[:4], unused, *args)
        r = [x.copy() for x in ref]
        optim_adam._adam_loop(*r[:4], np.empty(0, dtype), *args)
        for a, b in zip(s, r):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(s[4], state[4])       # amsgrad's buffer untouched


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_with_amsgrad_keeps_the_running_max(dtype):
    s = _state(dtype)
    before = s[4].copy()
    optim_adam.adam_step_serial(*s, 1.0, 0.0, 0.9, 0.999, 1e-8, 1e-3, 0.5, True, False,
                                False)
    assert np.all(s[4] >= before) and np.any(s[4] > before)
    np.testing.assert_array_equal(s[4], np.maximum(before, s[3]))


@pytest.mark.parametrize("where", ["inside", "past"])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_sgd_with_and_without_momentum(where, momentum):
    state = _state(np.float32)
    unused, _ = _stand_ins(state, where)
    buf = state[2] if momentum else unused
    ref = [x.copy() for x in state]
    ref_buf = ref[2] if momentum else np.empty(0, np.float32)
    for first in (True, False):
        optim.sgd_step_serial(state[0], state[1], buf, 1e-2, 0.0, momentum, 1.0, False,
                              False, first)
        optim._sgd_loop(ref[0], ref[1], ref_buf, 1e-2, 0.0, momentum, 1.0, False, False,
                        first, momentum != 0)
    np.testing.assert_array_equal(state[0], ref[0])
    np.testing.assert_array_equal(state[1], ref[1])


@pytest.mark.parametrize("where", ["inside", "past"])
@pytest.mark.parametrize("centered,momentum", [(False, 0.0), (True, 0.0), (False, 0.9),
                                               (True, 0.9)])
def test_rmsprop_every_flag_combination(where, centered, momentum):
    state = _state(np.float64)
    unused, unused2 = _stand_ins(state, where)
    grad_avg = state[4] if centered else unused
    buf = state[2] if momentum else unused2
    ref = [x.copy() for x in state]
    ref_avg = ref[4] if centered else np.empty(0)
    ref_buf = ref[2] if momentum else np.empty(0)
    for fn in (optim_adaptive.rmsprop_step_serial, optim_adaptive.rmsprop_step_parallel):
        fn(state[0], state[1], state[3], grad_avg, buf, 1e-2, 0.99, 1e-8, 0.0, momentum,
           centered, False)
        optim_adaptive._rmsprop_loop(ref[0], ref[1], ref[3], ref_avg, ref_buf, 1e-2, 0.99,
                                     1e-8, 0.0, momentum, centered, False, momentum > 0)
    for a, b in zip(state, ref):
        np.testing.assert_array_equal(a, b)
