"""flip and roll on CPU run one copy kernel over bit views (joining._copy_flipped): values
exact against NumPy over dtypes, layouts and dim sets; gradients by gradcheck."""
import itertools

import numpy as np
import pytest
from harness import dtype_sweep

import nbtorch as nt

DTYPES = ["float32", "float64", "int64", "int8", "bool", "float16", "complex64", "complex128"]


SWEEP = dtype_sweep(DTYPES, 3)
SHAPES = [(6, 5), (3, 1, 4, 5), (7,), (0, 3), (1,), (2, 1, 1, 3)]


def _np(t):
    return t.numpy()


@pytest.mark.parametrize("dt", SWEEP)
@pytest.mark.parametrize("shape", SHAPES)
def test_flip_roll_match_numpy(dt, shape):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shape) * 3).astype(getattr(nt, dt).np if dt != "bool" else bool)
    x = nt.tensor(a)
    for src_n, src_a in [(x, a), (x.transpose(0, -1), a.swapaxes(0, -1))]:
        nd = len(shape)
        for k in range(1, nd + 1):
            for dims in itertools.combinations(range(nd), k):
                assert np.array_equal(_np(src_n.flip(dims)), np.flip(src_a, dims))
                sh = tuple(int(v) for v in rng.integers(-7, 8, len(dims)))
                assert np.array_equal(_np(src_n.roll(sh, dims)), np.roll(src_a, sh, dims))
    assert np.array_equal(_np(x.roll(3)), np.roll(a, 3))


def test_flip_helpers_and_big():
    a = np.random.default_rng(1).standard_normal((1024, 512)).astype(np.float32)
    x = nt.tensor(a)
    assert np.array_equal(x.flip(1).numpy(), a[:, ::-1])
    assert np.array_equal(nt.fliplr(x).numpy(), np.fliplr(a))
    assert np.array_equal(nt.flipud(x).numpy(), np.flipud(a))
    assert np.array_equal(nt.rot90(x, 1, (0, 1)).numpy(), np.rot90(a, 1, (0, 1)))
    assert np.array_equal(x.roll((3, -5), (0, 1)).numpy(), np.roll(a, (3, -5), (0, 1)))
    assert np.array_equal(x.roll((3, 4), (1, 1)).numpy(), np.roll(a, 7, 1))


def test_flip_roll_bad_args():
    x = nt.randn(2, 3)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.flip(0, 0)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        x.roll((1, 2), 0)
    with pytest.raises((IndexError, RuntimeError)):
        x.flip(2)


def test_flip_roll_grads():
    x = nt.randn(3, 4, 5, dtype=nt.float64, requires_grad=True)
    assert nt.autograd.gradcheck(lambda x: x.flip(0, 2), (x,))
    assert nt.autograd.gradgradcheck(lambda x: x.flip((1,)), (x,))
    assert nt.autograd.gradcheck(lambda x: x.roll((2, -1), (0, 2)), (x,))
    assert nt.autograd.gradgradcheck(lambda x: x.roll(7), (x,))


def test_flip_roll_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(2).standard_normal((4, 5, 6)).astype(np.float32)
    t, x = torch.tensor(a), nt.tensor(a)
    assert np.array_equal(x.flip((0, 2)).numpy(), t.flip((0, 2)).numpy())
    assert np.array_equal(x.roll((1, -2), (1, 2)).numpy(), t.roll((1, -2), (1, 2)).numpy())
