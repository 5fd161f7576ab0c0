"""kernels/cpu/scalar_operand.py: an array and one value (``x * 0.5``, ``1 - x``) into a
fresh output, split over the spinning helpers: NumPy's bits, either operand order."""
import numpy as np
import pytest

from harness import awkward_floats
from nbtorch.kernels.cpu import scalar_operand, ufuncs, workers

N = (1 << 17) + 37         # above the parallel threshold, not a multiple of a chunk
FNS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(FNS))
def test_value_loops_give_numpys_bits_in_either_order(name, dtype, monkeypatch):
    x = awkward_floats(N + 3, dtype, 1, specials=256).reshape(-1, 4)         # 2-D: flattened by the plan
    ran = []
    run = scalar_operand.run
    monkeypatch.setattr(scalar_operand, "run", lambda *a: ran.append(1) or run(*a))
    monkeypatch.setattr(ufuncs, "use_helpers", lambda key: True)
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    for value in (0.37, -0.0, np.inf, np.nan, 3e-39):
        s = np.asarray(value, dtype)
        for args in ((x, s), (s, x), (x, s[()]), (x, s.reshape(1))):
            out = np.full(x.shape, 7, dtype)
            ufuncs.kernel(name)(out, *args)
            with np.errstate(all="ignore"):
                want = FNS[name](*args)
            np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8),
                                          err_msg=f"{name} {value} {args[0].shape}")
    assert len(ran) == 20


def test_plan_refuses_what_the_loops_cannot_read():
    x = np.ones(N, np.float32)
    s = np.asarray(2.0, np.float32)
    out = np.empty(N, np.float32)
    assert scalar_operand.plan("mul", out, (x, s)) is not None
    assert scalar_operand.plan("pow", out, (x, s)) is None              # no loop for it
    assert scalar_operand.plan("mul", out, (x, x)) is None              # no single value
    assert scalar_operand.plan("mul", x, (x, s)) is None                # in place
    assert scalar_operand.plan("mul", out[::2], (x[::2], s)) is None    # strided
    assert scalar_operand.plan("mul", out, (x.astype(np.float64), s)) is None
    assert scalar_operand.plan("mul", out, (x, np.asarray(2.0))) is None   # float64 value



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_dense_plan_is_plans_answer_where_its_contract_holds(dtype):
    # dense_value_call's callers hand it a fresh C-contiguous out, x of its shape and
    # dtype and a NumPy scalar: plan_dense skips the checks and must plan the same call
    x = np.arange(N, dtype=dtype).reshape(-1, 1)
    out = np.zeros(x.shape, dtype)
    s = dtype(0.37)
    for name in FNS:
        want, got = scalar_operand.plan(name, out, (x, s)), scalar_operand.plan_dense(
            name, out, x, s)
        assert got[0] == want[0] and np.array_equal(got[2], want[2])
        for a, b in zip(got[1], want[1]):
            assert a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b)
            assert a.__array_interface__["data"][0] == b.__array_interface__["data"][0] \
                or a.ndim == 0
