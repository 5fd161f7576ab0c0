"""The CPU random stream without PyTorch: the MT19937 engine's reference outputs, NumPy's
MT19937 (seeded the same way) as a word-for-word reference, PyTorch's transforms
recomputed from raw words in NumPy, the state layout, and known values PyTorch prints
(``torch.manual_seed(0); torch.randn(20)``, as in its tutorials)."""
import math
from fractions import Fraction

import numpy as np
import pytest

import nbtorch
from nbtorch.kernels.cpu import mt19937

M24 = np.uint64((1 << 24) - 1)
M53 = np.uint64((1 << 53) - 1)


def numpy_words(seed, n):
    """n 32-bit words of NumPy's MT19937 under the reference (Knuth) seeding."""
    bg = np.random.MT19937()
    bg._legacy_seeding(seed & 0xFFFFFFFF)
    return bg.random_raw(n).astype(np.uint64)


def words64(words):
    return (words[0::2] << np.uint64(32)) | words[1::2]


def fma64(a, b, c):
    """a * b + c rounded once (exact rationals, then one rounding to float64)."""
    return float(Fraction(a) * Fraction(b) + Fraction(c))


def test_reference_outputs_of_seed_5489():
    s = mt19937.seeded(5489)
    words = mt19937.raw32(s, 10000)
    assert list(words[:5]) == [3499211612, 581869302, 3890346734, 3586334585, 545404204]
    assert words[-1] == 4123659995


@pytest.mark.parametrize("seed", [0, 1, 42, 2 ** 32 - 1])
def test_words_match_numpys_mt19937_in_any_run_lengths(seed):
    s = mt19937.seeded(seed)
    runs = [mt19937.raw32(s, k) for k in (1, 7, 616, 624, 1, 2000)]
    assert np.array_equal(np.concatenate(runs), numpy_words(seed, 3249))
    assert list(s.pos) == [625 - 3249 % 624, 3249 % 624]        # PyTorch's left / next


def test_seeding_uses_the_low_32_bits_and_keeps_the_seed():
    g = nbtorch.Generator().manual_seed(2 ** 40 + 5)
    assert g.initial_seed() == 2 ** 40 + 5
    assert nbtorch.equal(nbtorch.rand(4, generator=g),
                         nbtorch.rand(4, generator=nbtorch.Generator().manual_seed(5)))
    assert nbtorch.Generator().initial_seed() == 67280421310721


def test_known_values_pytorch_prints():
    nbtorch.manual_seed(0)
    assert nbtorch.rand(3).tolist() == [0.49625658988952637, 0.7682217955589294,
                                        0.08847743272781372]
    nbtorch.manual_seed(0)
    x = nbtorch.randn(20)               # the fill path (float32, AVX2 kernel's numbers)
    assert x[[0, 1, 7, 15, 19]].tolist() == [-1.1258398294448853, -1.152360200881958,
                                            1.85300612449646, -0.843676745891571,
                                            0.05373690277338028]
    nbtorch.manual_seed(1234)
    assert nbtorch.randn(5).tolist() == [0.0461304634809494, 0.4024028182029724,
                                         -1.0115290880203247, 0.2167382389307022,
                                         -0.612273097038269]
    nbtorch.manual_seed(0)
    nbtorch.rand(3)
    assert nbtorch.randint(0, 10, (5,)).tolist() == [0, 3, 9, 7, 3]
    assert nbtorch.randperm(6).tolist() == [1, 4, 3, 5, 0, 2]


@pytest.mark.parametrize("n", [1, 5, 700])
def test_uniform_transforms(n):
    nbtorch.manual_seed(7)
    u = ((numpy_words(7, 2 * n) & M24) * (1.0 / 2 ** 24)).astype(np.float32)
    assert np.array_equal(nbtorch.rand(n).numpy(), u[:n])
    lo, hi = np.float32(-0.3), np.float32(1.7)      # fma(u, hi - lo, lo), words n..2n
    want = (u[n:].astype(np.float64) * np.float64(hi - lo) + lo).astype(np.float32)
    assert np.array_equal(nbtorch.empty(n).uniform_(-0.3, 1.7).numpy(), want)
    nbtorch.manual_seed(7)
    u53 = (words64(numpy_words(7, 2 * n)) & M53) * (1.0 / 2 ** 53)
    got = nbtorch.empty(n, dtype=nbtorch.float64).uniform_(2.5, 7.25).numpy()
    assert got.tolist() == [fma64(x, 7.25 - 2.5, 2.5) for x in u53]


def _normal_serial(u53_pairs, cached=None):
    """PyTorch's scalar Box-Muller: (r cos t, then the kept r sin t) per pair."""
    out = [] if cached is None else [cached]
    for u1, u2 in u53_pairs:
        r = math.sqrt(-2.0 * math.log1p(-u2))
        t = 2.0 * math.pi * u1
        out += [r * math.cos(t), r * math.sin(t)]
    return out


def _normal_fill_f64(u):
    out = list(u)
    for i in range(0, len(u) - 15, 16):
        for j in range(8):
            r = math.sqrt(-2.0 * math.log(1.0 - u[i + j]))
            t = 2.0 * math.pi * u[i + j + 8]
            out[i + j], out[i + j + 8] = r * math.cos(t), r * math.sin(t)
    return out


def test_normal_float64_serial_path_and_its_cached_sample():
    nbtorch.manual_seed(11)
    a = nbtorch.randn(3, dtype=nbtorch.float64).tolist()
    b = nbtorch.randn(2, dtype=nbtorch.float64).tolist()
    u = (words64(numpy_words(11, 12)) & M53) * (1.0 / 2 ** 53)
    want = _normal_serial([(u[0], u[1]), (u[2], u[3]), (u[4], u[5])])
    assert a + b == want[:5]
    state = nbtorch.get_rng_state().numpy()
    assert state[5040] == 1 and state[5024:5032].view(np.float64)[0] == want[5]
    nbtorch.manual_seed(11)                         # seeding clears the kept sample
    assert nbtorch.randn(1, dtype=nbtorch.float64).tolist() == want[:1]


@pytest.mark.parametrize("n", [16, 37])
def test_normal_float64_fill_path(n):
    nbtorch.manual_seed(3)
    got = nbtorch.randn(n, dtype=nbtorch.float64).tolist()
    u = list((words64(numpy_words(3, 2 * n + 32)) & M53) * (1.0 / 2 ** 53))
    want = _normal_fill_f64(u[:n])
    if n % 16:
        want[n - 16:] = _normal_fill_f64(u[n:n + 16])
    assert got == want


def test_normal_float32_fill_path_statistics():
    nbtorch.manual_seed(0)
    x = nbtorch.randn(200_000).numpy().astype(np.float64)
    assert abs(x.mean()) < 0.01 and abs(x.std() - 1) < 0.01
    assert abs((np.abs(x) < 1).mean() - 0.6827) < 0.005


def test_integers_bernoulli_randperm_from_words():
    nbtorch.manual_seed(5)
    w = numpy_words(5, 20 + 40 + 8 + 9)
    assert nbtorch.randint(3, 17, (20,)).tolist() == list((w[:20] % 14 + 3).astype(int))
    got = nbtorch.randint(0, 2 ** 40, (20,)).tolist()
    assert got == list((words64(w[20:60]) % np.uint64(2 ** 40)).astype(int))
    p = nbtorch.linspace(0, 1, 8)
    u24 = ((w[60:68] & M24) * (1.0 / 2 ** 24)).astype(np.float32)
    assert np.array_equal(nbtorch.bernoulli(p).numpy(), (u24 < p.numpy()).astype(np.float32))
    r = list(range(10))
    for i, z in enumerate(w[68:77]):
        z = i + int(z) % (10 - i)
        r[i], r[z] = r[z], r[i]
    assert nbtorch.randperm(10).tolist() == r


def test_multinomial_with_replacement_from_words():
    probs = np.array([[0.1, 0.2, 0.7, 0.0], [1.0, 2.0, 3.0, 4.0]], np.float32)
    nbtorch.manual_seed(4)
    got = nbtorch.multinomial(nbtorch.tensor(probs), 6, replacement=True).numpy()
    u = (words64(numpy_words(4, 24)) & M53) * (1.0 / 2 ** 53)
    for r in range(2):
        cum = np.cumsum(probs[r], dtype=np.float32)
        cum = (cum / cum[-1]).astype(np.float32)
        cum[-1] = 1
        assert got[r].tolist() == list(np.searchsorted(cum, u[6 * r:6 * r + 6], "left"))


def test_exponential_from_words():
    nbtorch.manual_seed(2)
    got = nbtorch.empty(50, dtype=nbtorch.float64).exponential_(2.5).tolist()
    u = (words64(numpy_words(2, 100)) & M53) * (1.0 / 2 ** 53)
    assert got == [-1.0 / 2.5 * math.log1p(-x) for x in u]


def test_in_place_samplers_fill_in_storage_order():
    nbtorch.manual_seed(9)
    t = nbtorch.empty(4, 6).t().uniform_()           # transposed: storage order
    nbtorch.manual_seed(9)
    assert nbtorch.equal(t, nbtorch.rand(4, 6).t())


def test_state_round_trips_in_pytorchs_layout():
    nbtorch.manual_seed(123)
    nbtorch.randn(3, dtype=nbtorch.float64)
    state = nbtorch.get_rng_state()
    raw = state.numpy()
    assert raw.size == 5056
    assert raw[:8].view(np.uint64)[0] == 123
    assert raw[8:12].view(np.int32)[0] == 617 and raw[16:24].view(np.uint64)[0] == 8
    after = [nbtorch.randn(5, dtype=nbtorch.float64), nbtorch.rand(700)]
    nbtorch.set_rng_state(state)
    assert nbtorch.equal(nbtorch.randn(5, dtype=nbtorch.float64), after[0])
    assert nbtorch.equal(nbtorch.rand(700), after[1])
    assert nbtorch.initial_seed() == 123
    before = nbtorch.get_rng_state().tolist()
    with nbtorch.random.fork_rng():
        nbtorch.rand(5)
    assert nbtorch.get_rng_state().tolist() == before


def test_invalid_states_are_refused():
    good = nbtorch.get_rng_state().numpy().copy()
    with pytest.raises(RuntimeError, match="CPUGeneratorImplState of size 5056 but found "
                                           "the input RNG state size to be 10"):
        nbtorch.set_rng_state(nbtorch.zeros(10, dtype=nbtorch.uint8))
    bad = good.copy()
    bad[8:12] = 0                                     # left = 0
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        nbtorch.set_rng_state(nbtorch.from_numpy(bad))
    bad = good.copy()
    bad[8:12] = np.array([5], np.int32).view(np.uint8)
    bad[16:24] = np.array([624], np.uint64).view(np.uint8)   # would read past the key
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        nbtorch.set_rng_state(nbtorch.from_numpy(bad))


def test_pcg64_stays_selectable():
    previous = nbtorch.random.use_generator("pcg64")
    try:
        assert previous == "mt19937"
        nbtorch.manual_seed(3)
        want = np.random.Generator(np.random.PCG64(3)).random(4)
        assert np.array_equal(nbtorch.rand(4, dtype=nbtorch.float64).numpy(), want)
        g = nbtorch.Generator().manual_seed(3)
        state = g.get_state()
        a = nbtorch.randn(5, generator=g)
        assert nbtorch.equal(nbtorch.randn(5, generator=g.set_state(state)), a)
        assert nbtorch.randperm(5).sort()[0].tolist() == list(range(5))
    finally:
        nbtorch.random.use_generator(previous)
    with pytest.raises(ValueError, match="expected one of"):
        nbtorch.random.use_generator("philox")
    nbtorch.manual_seed(0)
    assert nbtorch.rand(1).item() == 0.49625658988952637


@pytest.mark.parametrize("p", [0.0, 5e-324, 1e-300, 1 / 3, 0.5, 0.9, 0.999999, 1.0, 1.5,
                               float("nan")])
def test_bernoulli_scalar_is_u53_below_p(p):
    """The kernel compares integers (x < ceil(p * 2**53)) for 0 <= p <= 1: the same
    booleans as PyTorch's u53 < p, for every p."""
    from nbtorch.kernels.cpu import mt19937, random_mt
    a, b = mt19937.seeded(7), mt19937.seeded(7)
    n = 5003
    out = np.empty(n, np.bool_)
    random_mt.bernoulli_scalar(a.key, a.pos, np.empty(1024, np.uint32), out, p)
    w = mt19937.raw64(b, n)
    u53 = (w & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0 ** -53
    np.testing.assert_array_equal(out, u53 < p)
    assert np.array_equal(a.key, b.key) and np.array_equal(a.pos, b.pos)


def test_multinomial_with_replacement_ignores_the_scratch_memory(monkeypatch):
    """The cumulative-sum scratch comes from np.empty: whatever it held (NaN here) must not
    reach the samples (a NaN made every sample category 0)."""
    from nbtorch.kernels.cpu import random as random_kernels
    probs = nbtorch.tensor(np.array([[0.1, 0.2, 0.7, 0.0], [1.0, 2.0, 3.0, 4.0]], np.float32))
    nbtorch.manual_seed(4)
    clean = nbtorch.multinomial(probs, 6, replacement=True).tolist()
    kernel = random_kernels._mt.multinomial_replacement

    def poisoned(key, pos, buf, probs, out, cum):
        cum[:] = np.nan
        return kernel(key, pos, buf, probs, out, cum)
    monkeypatch.setattr(random_kernels._mt, "multinomial_replacement", poisoned)
    nbtorch.manual_seed(4)
    assert nbtorch.multinomial(probs, 6, replacement=True).tolist() == clean
    assert any(clean[1])
