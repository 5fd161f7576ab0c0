"""nbtorch.quasirandom.SobolEngine: the sequence's defining properties (NumPy only), and
bit-for-bit equality with torch.quasirandom.SobolEngine where PyTorch is installed."""
import subprocess
import sys

import numpy as np
import pytest

import nbtorch
from nbtorch.quasirandom import SobolEngine
from nbtorch.quasirandom._joe_kuo import direction_table


def _balanced(points, m):
    """Each coordinate of 2**m points puts exactly one point in every [k, k+1) / 2**m."""
    cells = np.floor(points * 2 ** m).astype(np.int64)
    return all(np.array_equal(np.sort(c), np.arange(2 ** m)) for c in cells.T)


def test_first_points_and_repr():
    engine = SobolEngine(dimension=5)
    np.testing.assert_array_equal(engine.draw(3).numpy(), [
        [0, 0, 0, 0, 0], [0.5, 0.5, 0.5, 0.5, 0.5], [0.75, 0.25, 0.25, 0.25, 0.75]])
    assert engine.num_generated == 3
    assert repr(engine) == "SobolEngine(dimension=5)"
    assert repr(SobolEngine(2, scramble=True, seed=7)) == \
        "SobolEngine(dimension=2, scramble=True, seed=7)"
    assert nbtorch.quasirandom.SobolEngine is SobolEngine


def test_direction_table_is_admissible():
    poly, vinit = direction_table()
    assert poly.shape == (21201,) and vinit.shape == (21201, 18)
    degree = np.array([int(p).bit_length() - 1 for p in poly])
    assert (np.diff(degree) >= 0).all() and (poly[1:] & 1).all()
    for s in np.unique(degree[1:]):
        m = vinit[degree == s, :s]
        assert (m & 1).all() and (m < 2 ** np.arange(1, s + 1)).all()


@pytest.mark.parametrize("scramble", [False, True])
def test_draw_base2_is_balanced(scramble):
    engine = SobolEngine(12, scramble=scramble, seed=3)
    first = engine.draw_base2(6, dtype=nbtorch.float64).numpy()
    assert first.shape == (64, 12) and first.dtype == np.float64
    assert _balanced(first, 6) and ((0 <= first) & (first < 1)).all()
    both = np.concatenate([first, engine.draw_base2(6, dtype=nbtorch.float64).numpy()])
    assert _balanced(both, 7)
    with pytest.raises(ValueError, match=r"n=128\+2\*\*3=136"):
        engine.draw_base2(3)


def test_draws_continue_reset_and_fast_forward():
    whole = SobolEngine(4).draw(40, dtype=nbtorch.float64).numpy()
    engine = SobolEngine(4)
    parts = [engine.draw(n, dtype=nbtorch.float64).numpy() for n in (1, 1, 5, 13)]
    np.testing.assert_array_equal(np.concatenate(parts), whole[:20])
    engine.fast_forward(7)
    np.testing.assert_array_equal(engine.draw(13, dtype=nbtorch.float64).numpy(), whole[27:])
    engine.reset()
    assert engine.num_generated == 0
    engine.fast_forward(3)
    np.testing.assert_array_equal(engine.draw(2, dtype=nbtorch.float64).numpy(), whole[3:5])
    out = nbtorch.empty(0, dtype=nbtorch.float64)
    assert engine.reset().draw(6, out=out, dtype=nbtorch.float64) is out
    np.testing.assert_array_equal(out.numpy(), whole[:6])


def test_scrambling_is_seeded():
    a = SobolEngine(3, scramble=True, seed=11).draw(8).numpy()
    b = SobolEngine(3, scramble=True, seed=11).draw(8).numpy()
    c = SobolEngine(3, scramble=True, seed=12).draw(8).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c) and _balanced(a, 3)


def test_errors():
    for dim in (0, 21202):
        with pytest.raises(ValueError, match=r"SobolEngine is \[1, 21201\]"):
            SobolEngine(dim)
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        SobolEngine(2).draw(3, dtype=nbtorch.float16)
    assert SobolEngine(2).draw(1, dtype=nbtorch.float16).dtype is nbtorch.float16
    with pytest.raises(ValueError, match=r"at most 2\*\*30 points"):
        SobolEngine(2).fast_forward(2 ** 30 + 1)
    engine = SobolEngine(2)
    engine.num_generated = 2 ** 30 - 1            # as if drawn: the last point is left
    engine.draw(1)
    with pytest.raises(ValueError, match=r"at most 2\*\*30 points"):
        engine.draw(1)


def test_second_process_loads_kernels_from_cache():
    code = ("import nbtorch\n"
            "from nbtorch.kernels.cpu import sobol\n"
            "e = nbtorch.quasirandom.SobolEngine(3, scramble=True, seed=1)\n"
            "e.draw(4); e.draw(4, dtype=nbtorch.float64); e.fast_forward(3)\n"
            "fns = (sobol.init_direction_numbers, sobol.scramble, sobol.draw,"
            " sobol.fast_forward)\n"
            "print(sum(sum(f.stats.cache_misses.values()) for f in fns),"
            " sum(sum(f.stats.cache_hits.values()) for f in fns))\n")
    exec(code, {"print": lambda *a: None})      # compiles (and caches) here if need be
    misses, hits = subprocess.run([sys.executable, "-c", code], check=True,
                                  capture_output=True, text=True).stdout.split()
    assert (int(misses), int(hits)) == (0, 5)


class TestAgainstPyTorch:
    torch = pytest.importorskip("torch")

    @staticmethod
    def _same(ours, theirs):
        assert ours.dtype.name == str(theirs.dtype).split(".")[1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

    @pytest.mark.parametrize("dim", [1, 7, 1111, 21201])
    def test_unscrambled_bit_for_bit(self, dim):
        ours, theirs = SobolEngine(dim), self.torch.quasirandom.SobolEngine(dim)
        np.testing.assert_array_equal(ours.sobolstate.numpy(), theirs.sobolstate.numpy())
        self._same(ours.draw(1), theirs.draw(1))
        n = 3 if dim > 1000 else 70
        self._same(ours.draw(n), theirs.draw(n))
        ours.fast_forward(5), theirs.fast_forward(5)
        self._same(ours.draw(n, dtype=nbtorch.float64),
                   theirs.draw(n, dtype=self.torch.float64))

    @pytest.mark.parametrize("seed", [0, 2024])
    def test_scrambled_bit_for_bit(self, seed):
        torch = self.torch
        ours = SobolEngine(9, scramble=True, seed=seed)
        theirs = torch.quasirandom.SobolEngine(9, scramble=True, seed=seed)
        np.testing.assert_array_equal(ours.shift.numpy(), theirs.shift.numpy())
        for dt, tdt in ((nbtorch.float32, torch.float32), (nbtorch.float64, torch.float64)):
            ours.reset(), theirs.reset()
            # the first point is rounded to the default dtype at construction, as PyTorch's
            self._same(ours.draw(1, dtype=dt), theirs.draw(1, dtype=tdt))
            self._same(ours.draw(31, dtype=dt), theirs.draw(31, dtype=tdt))

    def test_unseeded_scramble_uses_the_global_generator(self):
        torch = self.torch
        nbtorch.manual_seed(5), torch.manual_seed(5)
        ours = SobolEngine(4, scramble=True).draw(16)
        self._same(ours, torch.quasirandom.SobolEngine(4, scramble=True).draw(16))
