"""The contiguous float32 loops of `cpu/contiguous.py` (the fast path of `cpu/ufuncs.py`):
they give the ufunc loops' results bit for bit, special values included, and run only
where they apply (contiguous operands of one shape, float32, no partial overlap)."""
import numpy as np
import pytest

from nbtorch.kernels.cpu import contiguous
from nbtorch.kernels.cpu import ufuncs as pw

SPECIAL = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-38, -1e-38, 0.5, -0.5, 1, -1, 0.625, -0.625,
                    9, -9, 20, -20, 87.5, 88.8, 89.5, -87.5, -103, -104.5, -110, 1e30, -1e30,
                    3.4e38, -3.4e38, np.inf, -np.inf, np.nan], np.float32)
SMALL = pw.CONTIGUOUS_THRESHOLD + 37                  # one thread, ragged tail
LARGE = pw.PARALLEL_THRESHOLD + 13                    # split over the thread pool


def _arrays(name):
    loop = contiguous.CONTIGUOUS_LOOPS[name]
    return loop.py_func.__code__.co_argcount - 1 - contiguous.LOOP_PARAMETERS.get(name, 0)


def _operands(name, n, seed=0):
    """The array operands (random, then SPECIAL in the value operand), then parameters."""
    rng = np.random.default_rng(seed)
    xs = [(rng.standard_normal(n) * 4).astype(np.float32) for _ in range(_arrays(name))]
    xs[-1][:SPECIAL.size] = SPECIAL                   # the value operand (grads: after g)
    params = [np.array(v, np.float32) for v in (2.0, 3.0)[:contiguous.LOOP_PARAMETERS.get(name, 0)]]
    return xs + params


def _ufunc_result(name, xs):
    types = "f" * len(xs) + "->f"
    ref = np.empty_like(xs[0])
    with np.errstate(all="ignore"):
        pw.loop(name, types)(*xs, ref, signature=types)
    return ref


@pytest.fixture
def contiguous_calls(monkeypatch):
    """Records each call that took the contiguous-loop path."""
    calls = []
    original = pw._run_contiguous

    def spy(flat_loop, out, args, n_params=0, name=None):
        calls.append(flat_loop)
        return original(flat_loop, out, args, n_params, name)
    monkeypatch.setattr(pw, "_run_contiguous", spy)
    return calls


def _assert_same_bits(a, b):
    np.testing.assert_array_equal(a, b)               # NaN where NaN
    np.testing.assert_array_equal(np.signbit(a), np.signbit(b))


@pytest.mark.parametrize("n", [SMALL, LARGE])
@pytest.mark.parametrize("name", sorted(contiguous.CONTIGUOUS_LOOPS))
def test_contiguous_loop_matches_the_ufunc_bit_for_bit(name, n, contiguous_calls):
    xs = _operands(name, n)
    out = np.empty_like(xs[0])
    pw.kernel(name)(out, *xs)
    assert contiguous_calls == [contiguous.CONTIGUOUS_LOOPS[name]]
    _assert_same_bits(out, _ufunc_result(name, xs))


def test_multidimensional_contiguous_operands_take_the_fast_path(contiguous_calls):
    x = _operands("gelu", 64 * 97)[0].reshape(64, 97)
    out = np.empty_like(x)
    pw.kernel("gelu")(out, x)
    assert len(contiguous_calls) == 1
    _assert_same_bits(out, _ufunc_result("gelu", [x]))


def test_in_place_on_the_input_takes_the_fast_path(contiguous_calls):
    x = _operands("tanh", LARGE)[0]
    ref = _ufunc_result("tanh", [x])
    pw.kernel("tanh")(x, x)
    assert len(contiguous_calls) == 1
    _assert_same_bits(x, ref)


def _strided(n):
    return _operands("exp", 2 * n)[0][::2]


def _fortran(n):
    return np.asfortranarray(_operands("exp", n)[0].reshape(-1, 8)[:, ::-1].copy())


@pytest.mark.parametrize("case", ["strided", "fortran input", "float64", "small"])
def test_other_layouts_and_dtypes_use_the_ufunc(case, contiguous_calls):
    if case == "strided":
        x = _strided(LARGE)
    elif case == "fortran input":
        x = _fortran(LARGE - LARGE % 8)
    elif case == "float64":
        x = _operands("exp", LARGE)[0].astype(np.float64)
    else:
        x = _operands("exp", pw.CONTIGUOUS_THRESHOLD - 1)[0]
    out = np.empty(x.shape, x.dtype)
    pw.kernel("exp")(out, x)
    assert contiguous_calls == []
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(out, np.exp(x), rtol=3e-7 if x.dtype == np.float32
                                   else 1e-15)


def test_broadcast_gradient_operand_uses_the_ufunc(contiguous_calls):
    g = np.ones(1, np.float32)
    x = _operands("gelu_grad", SMALL)[1]
    out = np.empty_like(x)
    pw.kernel("gelu_grad")(out, g, x)
    assert contiguous_calls == []
    _assert_same_bits(out, _ufunc_result("gelu_grad", [np.ones_like(x), x]))


def test_partially_overlapping_input_keeps_numpy_semantics(contiguous_calls):
    buf = _operands("exp", LARGE + 1)[0] / 8
    ref = buf.copy()
    with np.errstate(over="ignore"):
        ref[1:] = np.exp(ref[:-1])                    # inputs read before any write
    pw.kernel("exp")(buf[1:], buf[:-1])
    assert contiguous_calls == []
    np.testing.assert_allclose(buf, ref, rtol=3e-7)


def _ulps(got, ref64):
    """|got - ref| in units of the float32 spacing at ref, where both are finite."""
    ref32 = ref64.astype(np.float32)
    ok = np.isfinite(ref32) & np.isfinite(got)
    return np.abs(got[ok] - ref64[ok]) / np.spacing(np.abs(ref32[ok]))


@pytest.mark.parametrize("name, ref, shift", [("log", np.log, 0), ("log1p", np.log1p, -1)])
def test_float32_log_and_log1p_polynomials_within_a_few_ulps(name, ref, shift):
    rng = np.random.default_rng(1)
    x = np.concatenate([np.exp(rng.uniform(-103, 88, 20000)), rng.uniform(0.5, 2, 20000),
                        rng.uniform(-1e-3, 1e-3, 2000) - shift, SPECIAL.astype(np.float64),
                        [1e-45, 1e-40, 1.1754942e-38, 0.70710677, 0.70710683, 2 ** -24]])
    x = (x + shift).astype(np.float32)
    out = _ufunc_result(name, [x])
    with np.errstate(all="ignore"):
        exact = ref(x.astype(np.float64))
    assert _ulps(out, exact).max() <= (1 if name == "log" else 2.5)   # measured 0.8, 2.2
    np.testing.assert_array_equal(np.isnan(out), np.isnan(exact))     # x < domain, NaN
    inf = np.isinf(exact)
    np.testing.assert_array_equal(out[inf], exact[inf])               # 0 (or -1), +inf


def test_loops_compile_to_packed_simd_at_full_width():
    """The point of the loops: packed (not scalar) float math, 512 bits wide where the
    CPU has AVX-512 (LLVM's default there is 256). Recompiled uncached for the asm."""
    import re
    import llvmlite.binding as llvm
    import numba
    if not llvm.get_process_triple().startswith("x86_64"):
        pytest.skip("checks x86 assembly")
    loop = contiguous.CONTIGUOUS_LOOPS["gelu_grad"]      # a body LLVM would not inline itself
    fresh = numba.njit(nogil=True, error_model="numpy", fastmath={"contract"})(loop.py_func)
    x = np.ones(64, np.float32)
    fresh(np.empty_like(x), x, x)
    fmas = [line for line in "\n".join(fresh.inspect_asm().values()).splitlines()
            if re.search(r"vfmadd\w*ps\s", line)]
    assert fmas, "no packed fused multiply-add: the loop did not vectorise"
    if llvm.get_host_cpu_features().get("avx512f"):
        assert any("zmm" in line for line in fmas)


@pytest.mark.parametrize("name", ["gelu_grad", "mish"])
def test_big_bodies_are_inlined_into_their_ufunc_loops(name):
    """Strided and small calls run the ufunc: a body marked `inline_into_loops` must be
    inlined there too, or that loop runs scalar (gelu_grad: 13 ns an element)."""
    import re
    import llvmlite.binding as llvm
    import nbtorch
    if not llvm.get_process_triple().startswith("x86_64"):
        pytest.skip("checks x86 assembly")
    report = nbtorch.kernels.inspect(name, device="cpu", dtype=nbtorch.float32)
    asm = next(f.asm for f in report.functions if f.kind == "ufunc")
    assert re.search(r"vfmadd\w*ps\s", asm), "the ufunc loop did not vectorise"


@pytest.mark.parametrize("beta, threshold", [(1.0, 20.0), (2.0, 3.0), (0.5, 1000.0)])
def test_float32_softplus_is_pytorchs_formula_within_two_ulps(beta, threshold):
    """where(z > threshold, x, log1p(exp(z)) / beta), z = beta x: +inf where exp(z)
    overflows float32 below the threshold, exactly as that formula gives."""
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(-30, 30, 20000), rng.uniform(-1, 1, 5000),
                        np.linspace(-250, 250, 2001), SPECIAL]).astype(np.float32)
    out = _ufunc_result("softplus", [x, np.array(beta, np.float32),
                                     np.array(threshold, np.float32)])
    z = x.astype(np.float64) * beta
    with np.errstate(all="ignore"):
        exact = np.where(z > threshold, x, np.log1p(np.exp(z)) / beta)
        overflow = (z > np.log(np.finfo(np.float32).max)) & (z <= threshold)
    exact[overflow] = np.inf
    assert _ulps(out, exact).max() <= 2                                # measured 1.6
    np.testing.assert_array_equal(np.isnan(out), np.isnan(exact))
    np.testing.assert_array_equal(out[np.isinf(exact)], exact[np.isinf(exact)])


@pytest.mark.parametrize("threshold", [20.0, 3.0])
def test_softplus_default_beta_loop_matches_the_ufunc_bit_for_bit(threshold, contiguous_calls):
    """beta == 1 takes a loop without the multiply and divide: the same bits."""
    x = (np.random.default_rng(1).standard_normal(SMALL) * 30).astype(np.float32)
    x[:SPECIAL.size] = SPECIAL
    xs = [x, np.array(1.0, np.float32), np.array(threshold, np.float32)]
    out = np.empty_like(x)
    pw.kernel("softplus")(out, *xs)
    assert contiguous_calls == [contiguous.CONTIGUOUS_LOOPS["softplus"]]
    _assert_same_bits(out, _ufunc_result("softplus", xs))
