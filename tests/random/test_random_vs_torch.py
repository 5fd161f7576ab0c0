"""After the same seed, nbtorch's CPU samplers give PyTorch's CPU numbers, value for value:
sizes on both sides of the vectorised threshold (16), float32 and float64, several
seeds, other generators, non-contiguous targets, the state exchanged both ways, and the
layers and initialisers built on them."""
import numpy as np
import pytest

import nbtorch

torch = pytest.importorskip("torch")

SEEDS = [0, 1, 12345, 2 ** 40 + 7]
SIZES = [1, 3, 15, 16, 17, 31, 33, 100, 4097]
FLOATS = ["float32", "float64"]


def _intel_mkl():
    """PyTorch draws scalar-p bernoulli_ (dropout's masks) with MKL's own stream on Intel
    CPUs; nbtorch follows its portable path, the one every other CPU runs."""
    try:
        with open("/proc/cpuinfo") as f:
            intel = "GenuineIntel" in f.read(4096)
    except OSError:
        intel = False
    return intel and torch.backends.mkl.is_available()


needs_portable_bernoulli = pytest.mark.skipif(_intel_mkl(), reason="PyTorch uses MKL's "
                                              "Bernoulli stream on Intel CPUs")


def _np(t):
    if t.dtype in (nbtorch.bfloat16, torch.bfloat16):
        t = t.float()
    return t.detach().numpy()


def same(f, seed=3):
    """f(nbtorch) and f(torch) after manual_seed(seed): equal arrays."""
    nbtorch.manual_seed(seed)
    torch.manual_seed(seed)
    ours, theirs = f(nbtorch), f(torch)
    if isinstance(theirs, (list, tuple)):
        return all(same_values(a, b) for a, b in zip(ours, theirs))
    return same_values(ours, theirs)


def same_values(a, b):
    a, b = _np(a), _np(b)
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("seed", SEEDS)
def test_rand_randn_normal_uniform(seed, dtype):
    for n in SIZES:
        assert same(lambda t: t.rand(n, dtype=getattr(t, dtype)), seed), n
        assert same(lambda t: t.randn(n, dtype=getattr(t, dtype)), seed), n
        assert same(lambda t: t.empty(n, dtype=getattr(t, dtype)).normal_(0.5, 2.5), seed), n
        assert same(lambda t: t.empty(n, dtype=getattr(t, dtype)).uniform_(-0.3, 1.7),
                    seed), n


def test_streams_continue_across_calls_and_the_kept_normal():
    def f(t):
        return [t.randn(3, dtype=t.float64), t.randn(5), t.rand(2),
                t.randn(1, dtype=t.float64), t.randn(20), t.randn(7, 3)]
    assert same(f)


def test_other_generators_and_the_default_left_alone():
    def f(t):
        g = t.Generator().manual_seed(9)
        return [t.randn(40, generator=g), t.rand(3), t.randint(0, 5, (4,), generator=g),
                t.randperm(9, generator=g), t.empty(5).uniform_(generator=g)]
    assert same(f)


def test_state_moves_between_the_libraries():
    torch.manual_seed(77)
    torch.randn(3, dtype=torch.float64)              # leaves a kept normal in the state
    nbtorch.set_rng_state(nbtorch.from_numpy(torch.get_rng_state().numpy().copy()))
    assert same_values(nbtorch.randn(5, dtype=nbtorch.float64),
                       torch.randn(5, dtype=torch.float64))
    nbtorch.rand(1000)
    torch.set_rng_state(torch.from_numpy(nbtorch.get_rng_state().numpy().copy()))
    assert same_values(nbtorch.randn(50), torch.randn(50))
    g = nbtorch.Generator().manual_seed(3)
    nbtorch.rand(10, generator=g)
    assert np.array_equal(g.get_state().numpy(),
                          torch.Generator().manual_seed(3).get_state().numpy()) is False
    tg = torch.Generator().manual_seed(3)
    torch.rand(10, generator=tg)
    assert np.array_equal(g.get_state().numpy(), tg.get_state().numpy())


def test_non_contiguous_targets_fill_in_storage_order():
    assert same(lambda t: t.empty(8, 5).t().normal_())
    assert same(lambda t: t.empty(8, 5, dtype=t.float64).t().uniform_(1, 2))
    assert same(lambda t: t.zeros(8, 6)[:, ::2].uniform_())
    assert same(lambda t: t.zeros(40, 6)[:, 1:].normal_(1.0, 0.5))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_uniform(dtype):
    assert same(lambda t: t.rand(40, dtype=getattr(t, dtype)))
    assert same(lambda t: t.empty(40, dtype=getattr(t, dtype)).uniform_(-1, 2))
    # values that round up to `to` come back as `from` (PyTorch's half-open range)
    assert same(lambda t: t.empty(20000, dtype=getattr(t, dtype)).uniform_(-9, 9))


def test_integers():
    assert same(lambda t: t.randint(-3, 17, (50,)))
    assert same(lambda t: t.randint(0, 2 ** 40, (50,)))             # 64-bit draws
    assert same(lambda t: t.randint(5, (3, 4)))
    for dt in ("int32", "int16", "uint8", "float32", "float64"):
        assert same(lambda t: t.randint(0, 100, (30,), dtype=getattr(t, dt))), dt
    assert same(lambda t: t.randint_like(t.zeros(6), 3, 9))
    for args in [(), (7,), (2, 9), (-3, None), (-2 ** 63, None)]:
        assert same(lambda t: t.zeros(9, dtype=t.int64).random_(*args)), args
    for dt in ("float32", "float64", "int32", "int16", "uint8", "bool", "bfloat16"):
        assert same(lambda t: t.zeros(9, dtype=getattr(t, dt)).random_()), dt


def test_randperm_small_and_dtypes():
    assert same(lambda t: [t.randperm(n) for n in (0, 1, 2, 10, 1000)])
    assert same(lambda t: t.randperm(20, dtype=t.int32))
    assert same(lambda t: t.randperm(20, dtype=t.float32))


def test_bernoulli_with_tensor_probabilities():
    assert same(lambda t: t.bernoulli(t.linspace(0, 1, 60)))
    assert same(lambda t: t.bernoulli(t.linspace(0, 1, 60, dtype=t.float64)))
    assert same(lambda t: t.zeros(4, 15).bernoulli_(t.linspace(0, 1, 15)))
    assert same(lambda t: t.zeros(4, 15, dtype=t.float64).bernoulli_(
        t.linspace(0, 1, 15, dtype=t.float64)))


@needs_portable_bernoulli
def test_bernoulli_with_a_number_and_dropout_masks():
    assert same(lambda t: t.bernoulli(t.zeros(60), 0.3))
    assert same(lambda t: t.zeros(60, dtype=t.float64).bernoulli_(0.7))
    F = "nn.functional"

    def fn(t, name):
        return getattr(t.nn.functional, name)
    assert same(lambda t: fn(t, "dropout")(t.ones(100), 0.3)), F
    assert same(lambda t: fn(t, "dropout")(t.randn(5, 40), 0.5))
    assert same(lambda t: fn(t, "dropout2d")(t.ones(4, 6, 3, 3), 0.3))
    assert same(lambda t: fn(t, "dropout1d")(t.ones(6, 3), 0.3))
    assert same(lambda t: fn(t, "alpha_dropout")(t.ones(100), 0.3, training=True))
    assert same(lambda t: t.nn.Dropout(0.25)(t.randn(3, 50)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_multinomial(dtype):
    probs = [[0.1, 0.2, 0.7, 0.0], [1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 3.0, 0.5]]
    positive = [[0.1, 0.2, 0.7, 0.05], [1.0, 1.0, 1.0, 1.0], [0.2, 0.1, 3.0, 0.5]]
    # Drawing more categories than a row has positive probabilities leaves PyTorch's
    # order among the zero-probability ones to libstdc++'s nth_element (ties, which
    # nbtorch does not emulate): those draws use rows without zeros.
    for rows, k, repl in [(probs, 1, False), (probs, 2, False), (positive, 3, False),
                          (positive, 4, False), (probs, 1, True), (probs, 20, True)]:
        assert same(lambda t: t.multinomial(t.tensor(rows, dtype=getattr(t, dtype)), k,
                                            replacement=repl)), (k, repl)
    assert same(lambda t: t.multinomial(t.rand(5, 9, dtype=getattr(t, dtype)), 30, True))
    assert same(lambda t: t.multinomial(t.tensor(probs[0], dtype=getattr(t, dtype)), 2))


def test_other_in_place_samplers():
    for dt in FLOATS:
        assert same(lambda t: t.empty(30, dtype=getattr(t, dt)).exponential_(2.5)), dt
        assert same(lambda t: t.empty(30, dtype=getattr(t, dt)).geometric_(0.3)), dt
        assert same(lambda t: t.empty(30, dtype=getattr(t, dt)).log_normal_(0.5, 0.7)), dt
        assert same(lambda t: t.empty(30, dtype=getattr(t, dt)).cauchy_(0.5, 2.0)), dt


def test_normal_with_tensor_arguments():
    assert same(lambda t: t.normal(t.arange(20.), t.arange(20.) / 10 + 0.1))
    assert same(lambda t: t.normal(t.arange(20.), 2.0))
    assert same(lambda t: t.normal(1.0, t.arange(5.) / 10 + 0.1))
    assert same(lambda t: t.normal(2.0, 3.0, (40,)))


def test_init_functions():
    init = "nn.init"
    cases = {
        "uniform_": lambda t, w: t.nn.init.uniform_(w, -0.2, 0.4),
        "normal_": lambda t, w: t.nn.init.normal_(w, 0.1, 0.3),
        "xavier_uniform_": lambda t, w: t.nn.init.xavier_uniform_(w),
        "xavier_normal_": lambda t, w: t.nn.init.xavier_normal_(w, gain=2.0),
        "kaiming_uniform_": lambda t, w: t.nn.init.kaiming_uniform_(w, a=5 ** 0.5),
        "kaiming_normal_": lambda t, w: t.nn.init.kaiming_normal_(w, mode="fan_out"),
        "trunc_normal_": lambda t, w: t.nn.init.trunc_normal_(w, std=0.5),
        "trunc_normal_ narrow": lambda t, w: t.nn.init.trunc_normal_(w, 0, 1, 1.5, 2.5),
        "sparse_": lambda t, w: t.nn.init.sparse_(w, 0.3),
    }
    for name, f in cases.items():
        assert same(lambda t: f(t, t.empty(12, 20))), (init, name)
    nbtorch.manual_seed(1)
    torch.manual_seed(1)
    a = nbtorch.nn.init.orthogonal_(nbtorch.empty(6, 10)).numpy()
    b = torch.nn.init.orthogonal_(torch.empty(6, 10)).numpy()
    np.testing.assert_allclose(a, b, atol=2e-6)           # the same draws; QR rounds apart
    assert same_values(nbtorch.rand(5), torch.rand(5))    # ... and the same draws consumed


MODULES = {
    "Linear": lambda nn: nn.Linear(7, 5),
    "Conv1d": lambda nn: nn.Conv1d(3, 4, 3),
    "Conv2d": lambda nn: nn.Conv2d(3, 8, 3),
    "ConvTranspose2d": lambda nn: nn.ConvTranspose2d(3, 4, 3),
    "Embedding": lambda nn: nn.Embedding(10, 4),
    "Bilinear": lambda nn: nn.Bilinear(3, 4, 5),
    "LSTM": lambda nn: nn.LSTM(4, 6, 2, bidirectional=True),
    "GRU": lambda nn: nn.GRU(4, 6),
    "MultiheadAttention": lambda nn: nn.MultiheadAttention(8, 2),
    "TransformerEncoderLayer": lambda nn: nn.TransformerEncoderLayer(8, 2, 16),
    "CNN": lambda nn: nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(),
                                    nn.Linear(36, 10)),
}


@pytest.mark.parametrize("name", list(MODULES))
def test_models_start_from_pytorchs_weights(name):
    nbtorch.manual_seed(0)
    ours = MODULES[name](nbtorch.nn).state_dict()
    torch.manual_seed(0)
    theirs = MODULES[name](torch.nn).state_dict()
    assert list(ours) == list(theirs)
    for key in theirs:
        assert same_values(ours[key], theirs[key]), key
