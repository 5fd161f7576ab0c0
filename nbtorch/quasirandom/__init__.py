"""`nbtorch.quasirandom`: low-discrepancy sequences with the API of ``torch.quasirandom``.

`SobolEngine` draws Sobol' points from Joe & Kuo's direction numbers (search
criterion D(6), up to 21201 dimensions), by the Gray-code loop of
`kernels/cpu/sobol.py`. Unscrambled draws equal PyTorch's bit for bit; scrambled
ones too for the same seed, since the scrambling bits come from nbtorch's MT19937
generator, which draws `randint` as PyTorch's CPU generator does.

Example:
    >>> engine = nbtorch.quasirandom.SobolEngine(dimension=2)
    >>> engine.draw(3)
    tensor([[0.0000, 0.0000],
            [0.5000, 0.5000],
            [0.7500, 0.2500]])
"""
import numpy as np

import nbtorch
from nbtorch.kernels.cpu import sobol as _kernels

from ._joe_kuo import MAXDIM, direction_table

__all__ = ["SobolEngine"]

_DRAW_DTYPES = {"float32": np.float32, "float64": np.float64}


class SobolEngine:
    r"""An engine for (scrambled) Sobol' sequences in up to 21201 dimensions.

    Args:
        dimension (int): dimensionality of the points, 1 to 21201.
        scramble (bool): Owen's linear matrix scramble plus a random digital shift.
            Default: ``False``.
        seed (int, optional): seed of the scrambling's own generator; ``None`` draws
            the scrambling bits from the global generator.

    Points depend on those drawn before: `draw(n)` continues the sequence, `reset()`
    starts it again, `fast_forward(n)` skips n points.
    """

    MAXBIT = _kernels.MAXBIT
    MAXDIM = MAXDIM

    def __init__(self, dimension, scramble=False, seed=None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError("Supported range of dimensionality "
                             f"for SobolEngine is [1, {self.MAXDIM}]")
        self.seed = seed
        self.scramble = scramble
        self.dimension = dimension
        poly, vinit = direction_table()
        state = np.zeros((dimension, self.MAXBIT), dtype=np.int64)
        _kernels.init_direction_numbers(poly[:dimension], vinit[:dimension], state)
        self.sobolstate = nbtorch.from_numpy(state)
        if not self.scramble:
            self.shift = nbtorch.zeros(self.dimension, dtype=nbtorch.long)
        else:
            self._scramble()
        self.quasi = self.shift.clone()
        self._first_point = (self.quasi / 2 ** self.MAXBIT).reshape(1, -1)
        self.num_generated = 0

    def draw(self, n=1, out=None, dtype=None):
        r"""The next `n` points of the sequence, an (n, dimension) tensor of `dtype`
        (default: the default dtype), written into `out` when given."""
        if dtype is None:
            dtype = nbtorch.get_default_dtype()
        if self.num_generated == 0:
            if n == 1:
                result = self._first_point.to(dtype)
            else:
                rest = self._draw(n - 1, 0, dtype)
                result = nbtorch.cat((self._first_point.to(dtype), rest), dim=-2)
        else:
            result = self._draw(n, self.num_generated - 1, dtype)
        self.num_generated += n
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m, out=None, dtype=None):
        r"""The next ``2**m`` points; the total drawn must stay a power of 2 (what keeps
        Sobol' points balanced), else ValueError."""
        n = 2 ** m
        total_n = self.num_generated + n
        if not (total_n & (total_n - 1) == 0):
            raise ValueError(
                "The balance properties of Sobol' points require "
                f"n to be a power of 2. {self.num_generated} points have been "
                f"previously generated, then: n={self.num_generated}+2**{m}={total_n}. "
                "If you still want to do this, please use "
                "'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self):
        r"""Back to the first point (the scrambling is kept)."""
        self.quasi.copy_(self.shift)
        self.num_generated = 0
        return self

    def fast_forward(self, n):
        r"""Skip `n` points: the same as drawing them and throwing them away."""
        start = self.num_generated - 1 if self.num_generated else 0
        steps = n if self.num_generated else n - 1
        if steps > 0:
            self._check_range(start, steps)
            _kernels.fast_forward(self.quasi.numpy(), self.sobolstate.numpy(), start, steps)
        self.num_generated += n
        return self

    def _draw(self, n, start, dtype):
        """n points after the one `quasi` holds (Gray-code index `start`)."""
        np_dtype = _DRAW_DTYPES.get(getattr(dtype, "name", None))
        if np_dtype is None:
            raise NotImplementedError(
                f"\"_sobol_engine_draw\" not implemented for '{_type_name(dtype)}'")
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: "
                               f"[{n}, {self.dimension}]")
        self._check_range(start, n)
        out = np.empty((n, self.dimension), dtype=np_dtype)
        quasi = self.quasi.numpy()
        _kernels.draw(quasi, self.sobolstate.numpy(), start, out)
        return nbtorch.from_numpy(out)

    def _check_range(self, start, n):
        """The Gray-code loop reads direction number l = trailing ones of its index, so
        indices stop below 2**30 - 1 (PyTorch reads past its table there)."""
        if start + n > (1 << self.MAXBIT) - 1:
            raise ValueError(f"SobolEngine generates at most 2**{self.MAXBIT} points: "
                             f"{self.num_generated} generated, {n} more asked for")

    def _scramble(self):
        g = None
        if self.seed is not None:
            g = nbtorch.Generator()
            g.manual_seed(self.seed)
        shift_ints = nbtorch.randint(2, (self.dimension, self.MAXBIT), generator=g)
        weights = np.left_shift(np.int64(1), np.arange(self.MAXBIT, dtype=np.int64))
        self.shift = nbtorch.from_numpy(shift_ints.numpy() @ weights)
        ltm = nbtorch.randint(2, (self.dimension, self.MAXBIT, self.MAXBIT), generator=g)
        _kernels.scramble(self.sobolstate.numpy(), np.ascontiguousarray(ltm.numpy()))

    def __repr__(self):
        fmt_string = [f"dimension={self.dimension}"]
        if self.scramble:
            fmt_string += ["scramble=True"]
        if self.seed is not None:
            fmt_string += [f"seed={self.seed}"]
        return self.__class__.__name__ + "(" + ", ".join(fmt_string) + ")"


def _type_name(dtype):
    """PyTorch's scalar-type name in dispatch errors ('Half', 'Long', ...)."""
    names = {"float16": "Half", "bfloat16": "BFloat16", "int64": "Long", "int32": "Int",
             "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
             "complex64": "ComplexFloat", "complex128": "ComplexDouble"}
    name = getattr(dtype, "name", str(dtype))
    return names.get(name, name)
