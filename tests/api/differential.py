"""A differential test generator: the same call on PyTorch and nbtorch, compared.

A case is (op, dtype, layout, variant). The op is one line of OPS: a name, a call
``f(m, *inputs)`` written once for both libraries (`m` is the module: torch or
nbtorch), the input kinds and the dtypes it takes. The generator builds the inputs
from the same NumPy values for both libraries in the case's layout, runs the call on
each, and compares what came out:

- an exception on one side only is a failure; on both, the exception classes must
  match (RuntimeError, IndexError, TypeError, ValueError, NotImplementedError);
- results (tensors, tuples of them, Python numbers) must agree in dtype, shape and
  value (NaN where PyTorch has NaN; floats within the dtype's tolerance).

Input kinds, one letter per input: "a" a (3, 4) tensor, "b" a second one that
broadcasts against it ((1, 4) in the broadcast layout), "v" a 1-D (5,) tensor,
"s" a sorted 1-D tensor, "i" an int64 index tensor valid along dim 1 of "a",
"m" a bool mask like "a", "p" positive values like "a", "q" a (4, 3) matrix for
products with "a". Layouts: contiguous, noncontig (strided views of a wider buffer),
transposed (a transposed view), broadcast (stride-0 dims), 0d and empty; an op says
which layouts make sense for it. "Invalid" cases are the op's own `bad` calls (an
out-of-range dim, mismatched shapes...; a (call, dtype) pair runs in that dtype), which
must raise the same error class.
Adding an op is one line in OPS.
"""
import random

import numpy as np

ALL_LAYOUTS = ("contiguous", "noncontig", "transposed", "broadcast", "0d", "empty")
SHAPED = ("contiguous", "noncontig", "transposed", "empty")   # ops that need a fixed shape
DENSE2 = ("contiguous", "noncontig", "transposed")

INTS = ("uint8", "int8", "int16", "int32", "int64")
FLOATS = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
NUM = INTS + FLOATS
ALL = ("bool",) + NUM
FLT = FLOATS
DEFAULT_DTYPES = ("int64", "float32")      # the quick run: kernels the suite compiles anyway
_TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-9,
        "complex64": 2e-5, "complex128": 1e-9}


class Op:
    """One line of the op table: PyTorch's and nbtorch's `call(m, *inputs)` compared."""

    def __init__(self, name, call, inputs="a", dtypes=ALL, layouts=ALL_LAYOUTS, bad=(),
                 tol=None, values=None):
        self.name, self.call, self.inputs = name, call, inputs
        self.dtypes, self.layouts, self.bad = dtypes, layouts, tuple(bad)
        self.tol, self.values = tol, values

    def __repr__(self):
        return self.name


def _op(name, call, inputs="a", dtypes=ALL, layouts=ALL_LAYOUTS, bad=(), **kw):
    return Op(name, call, inputs, dtypes, layouts, bad, **kw)


# ---- the op table: one line per op (bad: calls that must raise as PyTorch does) --------
OPS = [
    # shape and construction (issue 11, part 4)
    _op("diag", lambda m, a: m.diag(a, 1), "v", ALL, SHAPED),
    _op("diag 2d", lambda m, a: m.diag(a, -1), "a", ALL, SHAPED,
        bad=[lambda m, a: m.diag(a.unsqueeze(0))]),
    _op("diag_embed", lambda m, a: m.diag_embed(a, 1, 0, 2), "a", ALL, SHAPED),
    _op("diagflat", lambda m, a: m.diagflat(a, -1), "a", ALL),
    _op("diagonal_scatter", lambda m, a, b: m.diagonal_scatter(a, b[0, :3]), "ab", NUM, DENSE2),
    _op("select_scatter", lambda m, a, b: m.select_scatter(a, b[1], 0, -1), "ab", NUM, DENSE2,
        bad=[lambda m, a, b: m.select_scatter(a, b[1], 0, 5)]),
    _op("slice_scatter", lambda m, a, b: m.slice_scatter(a, b[:, ::2], 1, 0, None, 2), "ab",
        NUM, DENSE2),
    _op("tril_indices", lambda m, a: m.tril_indices(3, 4, -1), "a", ("int64",), ("contiguous",)),
    _op("triu_indices", lambda m, a: m.triu_indices(4, 2, 1), "a", ("int64",), ("contiguous",)),
    _op("block_diag", lambda m, a, b: m.block_diag(a, b, a[0]), "ab", ALL, DENSE2),
    _op("cartesian_prod", lambda m, a, b: m.cartesian_prod(a, b), "vv", ALL, ("contiguous",)),
    _op("combinations", lambda m, a: m.combinations(a, 2, True), "v", ALL, ("contiguous",)),
    _op("kron", lambda m, a, b: m.kron(a, b), "ab", NUM),
    _op("tensordot", lambda m, a, b: m.tensordot(a, b, 1), "aq", ("int64",) + FLT[2:], DENSE2,
        bad=[lambda m, a, b: m.tensordot(a, b, ([0], [0]))]),
    _op("cross", lambda m, a, b: m.linalg.cross(a[:, :3], b[:, :3]), "ab", NUM[4:], DENSE2,
        bad=[lambda m, a, b: m.linalg.cross(a, b)]),
    _op("rot90", lambda m, a: m.rot90(a, 3, [1, 0]), "a", ALL, SHAPED),
    _op("atleast_3d", lambda m, a: m.atleast_3d(a), "a"),
    _op("hstack", lambda m, a, b: m.hstack([a, b]), "ab", ALL, SHAPED),
    _op("vstack", lambda m, a, b: m.vstack((a, b)), "ab", ALL, SHAPED),
    _op("dstack", lambda m, a, b: m.dstack([a, b]), "ab", ALL, SHAPED),
    _op("column_stack", lambda m, a, b: m.column_stack([a, b]), "ab", ALL, SHAPED),
    _op("hsplit", lambda m, a: m.hsplit(a, 2), "a", ALL, SHAPED,
        bad=[lambda m, a: m.hsplit(a, 3)]),
    _op("tensor_split", lambda m, a: m.tensor_split(a, [1, 3], 1), "a", ALL, SHAPED),
    _op("unflatten", lambda m, a: a.unflatten(1, (2, -1)), "a", ALL, SHAPED),
    _op("movedim", lambda m, a: m.movedim(a, 0, 1), "a", ALL, SHAPED,
        bad=[lambda m, a: m.movedim(a, 0, 2)]),
    _op("swapaxes", lambda m, a: m.swapaxes(a, 0, 1), "a", ALL, SHAPED),
    _op("take_along_dim", lambda m, a, i: m.take_along_dim(a, i, 1), "ai", ALL, SHAPED),
    _op("take_along_dim flat", lambda m, a, i: m.take_along_dim(a, i), "ai", ALL, SHAPED),
    _op("index_fill", lambda m, a, i: a.index_fill(1, i[0], -1), "ai", ALL, SHAPED),
    _op("index_reduce", lambda m, a, i: a.index_reduce(1, i[0, :2], a[:, :2], "amax"), "ai",
        NUM, SHAPED, bad=[lambda m, a, i: a.index_reduce(1, i[0, :2], a[:, :2], "sum")]),
    _op("scatter_reduce sum", lambda m, a, i: a.scatter_reduce(1, i, a, "sum"), "ai", NUM,
        SHAPED),
    _op("scatter_reduce prod", lambda m, a, i: a.scatter_reduce(1, i, a, "prod",
                                                                include_self=False),
        "ai", NUM, SHAPED),
    _op("scatter_reduce mean", lambda m, a, i: a.scatter_reduce(1, i, a, "mean"), "ai", NUM,
        SHAPED),
    _op("scatter_reduce amin", lambda m, a, i: a.scatter_reduce(1, i, a, "amin"), "ai", ALL,
        SHAPED, bad=[lambda m, a, i: a.scatter_reduce(1, i * 0 - 1, a, "amin")]),
    _op("scatter multiply", lambda m, a, i: a.scatter(1, i, 2, reduce="multiply"), "ai",
        NUM, SHAPED),
    _op("masked_scatter", lambda m, a, k: a.masked_scatter(k, a.flip(0)), "am", ALL, SHAPED),
    _op("put", lambda m, a, i: a.put(i[0], a[0, :4]), "ai", ALL, SHAPED,
        bad=[lambda m, a, i: a.put(i[0] + 100, a[0, :4])]),
    _op("diff", lambda m, a: m.diff(a, 1, 0), "a", ALL, SHAPED),
    _op("diff prepend", lambda m, a, b: m.diff(a, 2, -1, prepend=b), "ab", NUM, DENSE2),
    _op("gradient", lambda m, a: m.gradient(a, spacing=2.0, dim=1), "a", FLT[2:], SHAPED),
    _op("trapezoid", lambda m, a: m.trapezoid(a, dx=0.5), "a", NUM, SHAPED),
    _op("cumulative_trapezoid", lambda m, a: m.cumulative_trapezoid(a, dim=0), "a", FLT[2:],
        SHAPED),
    _op("histc", lambda m, a: m.histc(a, 4, -1, 1), "a", FLT[2:]),
    _op("histogram", lambda m, a: m.histogram(a, 5, range=(-1.0, 1.0)), "a", FLT[2:]),
    _op("histogramdd", lambda m, a: m.histogramdd(a[:, :2], bins=[3, 2]), "a", FLT[2:],
        DENSE2),
    _op("segment_reduce", lambda m, a: m.segment_reduce(a, "max", lengths=m.tensor([2, 0, 1])),
        "a", FLT[2:], DENSE2, bad=[lambda m, a: m.segment_reduce(a, "max",
                                                                 lengths=m.tensor([1, 1]))]),
    _op("bincount", lambda m, i: m.bincount(i[0], minlength=6), "i", ("int64",),
        ("contiguous",)),
    _op("searchsorted", lambda m, s, a: m.searchsorted(s, a), "sa", NUM),
    _op("searchsorted right", lambda m, s, a: m.searchsorted(s, a, right=True, out_int32=True),
        "sa", FLT[2:]),
    _op("bucketize", lambda m, a, s: m.bucketize(a, s), "as", NUM),
    _op("unique_consecutive", lambda m, a: m.unique_consecutive(a, return_counts=True), "a",
        ALL),
    _op("quantile", lambda m, a: m.quantile(a, 0.3, dim=1), "a", FLT[2:], SHAPED,
        bad=[lambda m, a: m.quantile(a, 1.5)]),
    _op("nanquantile", lambda m, a: m.nanquantile(a, 0.7, 0, True, interpolation="nearest"),
        "a", FLT[2:], SHAPED),
    _op("nanmedian", lambda m, a: m.nanmedian(a, 1), "a", NUM, SHAPED),
    _op("mode", lambda m, a: m.mode(a, 1), "a", NUM, SHAPED),
    _op("logcumsumexp", lambda m, a: m.logcumsumexp(a, 1), "a", FLT, SHAPED),
    _op("cummax", lambda m, a: m.cummax(a, 0), "a", NUM, SHAPED),
    _op("cov", lambda m, a: m.cov(a), "a", FLT[2:], DENSE2),
    _op("corrcoef", lambda m, a: m.corrcoef(a), "a", FLT[2:], DENSE2),
    _op("cdist", lambda m, a, b: m.cdist(a, b, 1.0), "ab", FLT[2:], DENSE2),
    _op("pdist", lambda m, a: m.pdist(a), "a", FLT[2:], DENSE2),
    _op("dist", lambda m, a, b: m.dist(a, b, 3), "ab", FLT[2:]),
    _op("hann_window", lambda m, a: m.hann_window(6, dtype=a.dtype), "a", FLT[2:],
        ("contiguous",)),
    _op("kaiser_window", lambda m, a: m.kaiser_window(5, False, 4.0, dtype=a.dtype), "a",
        FLT[2:], ("contiguous",), tol=1e-5),
    _op("zeros_like", lambda m, a: m.zeros_like(a, memory_format=m.preserve_format), "a"),
    _op("full_like", lambda m, a: m.full_like(a, 3), "a"),
    _op("isin", lambda m, a, b: m.isin(a, b), "ab", NUM),
    # argument conventions (part 8)
    _op("sum axis", lambda m, a: m.sum(a, axis=1, keepdim=True), "a", NUM, SHAPED),
    _op("mean dtype", lambda m, a: m.mean(a, 0, dtype=m.float64), "a", NUM, SHAPED),
    _op("amax axis", lambda m, a: m.amax(a, axis=0), "a", NUM, SHAPED),
    _op("cumsum axis", lambda m, a: a.cumsum(axis=1), "a", NUM, SHAPED),
    _op("zeros size", lambda m, a: m.zeros(size=(2, 3), dtype=a.dtype), "a", ALL,
        ("contiguous",)),
    # behaviour at the edges (part 9)
    _op("gather", lambda m, a, i: m.gather(a, 1, i), "ai", ALL, SHAPED,
        bad=[lambda m, a, i: m.gather(a, 1, i - 5), lambda m, a, i: m.gather(a, 1, i + 4)]),
    _op("index_select", lambda m, a, i: m.index_select(a, 1, i[0]), "ai", ALL, SHAPED,
        bad=[lambda m, a, i: m.index_select(a, 1, i[0] + 4)]),
    _op("index_add", lambda m, a, i: a.index_add(1, i[0], a[:, :4]), "ai", NUM, SHAPED,
        bad=[lambda m, a, i: a.index_add(1, i[0] - 9, a[:, :4])]),
    _op("index_copy", lambda m, a, i: a.index_copy(1, i[0, :1], a[:, :1]), "ai", ALL, SHAPED,
        bad=[lambda m, a, i: a.index_copy(1, i[0, :1] + 9, a[:, :1])]),
    _op("scatter", lambda m, a, i: a.scatter(1, i, a), "ai", ALL, SHAPED,
        bad=[lambda m, a, i: a.scatter(1, i - 8, a)]),
    _op("scatter_add", lambda m, a, i: a.scatter_add(1, i, a), "ai", NUM, SHAPED),
    _op("take", lambda m, a, i: m.take(a, i), "ai", ALL, SHAPED,
        bad=[lambda m, a, i: m.take(a, i + 100)]),
    _op("advanced index", lambda m, a, i: a[:, i[0]], "ai", ALL, SHAPED,
        bad=[lambda m, a, i: a[:, i[0] + 7]]),
    _op("clamp scalars", lambda m, a: a.clamp(min=2, max=-2), "a", NUM),
    _op("floordiv rscalar", lambda m, a: -2 // a.abs().clamp(min=1), "a", NUM[1:]),
    _op("sub bool", lambda m, a, b: a - b, "ab", ALL),
    _op("neg", lambda m, a: -a, "a", ALL),
    _op("add alpha", lambda m, a, b: m.add(a, b, alpha=2), "ab", NUM,
        bad=[(lambda m, a, b: m.add(a, b, alpha=0.5), "int64"),
             (lambda m, a, b: m.add(a, b, alpha=True), "int64")]),
    _op("fmax scalar", lambda m, a, b: m.fmax(a, b), "ab", NUM,
        bad=[lambda m, a, b: m.fmax(a, 2.0)]),
    _op("flip", lambda m, a: a.flip([0, 1]), "a", ALL, SHAPED,
        bad=[lambda m, a: a.flip([0, 0])]),
    _op("where 0d", lambda m, a: m.where(a.reshape(-1)[0].reshape(()) > 0), "a", NUM,
        ("contiguous",)),
    _op("nonzero tuple", lambda m, a: m.nonzero(a, as_tuple=True), "a", ALL),
    _op("norm", lambda m, a: m.linalg.vector_norm(a * 1e37), "a", FLT[2:]),
    _op("linspace 1", lambda m, a: m.linspace(2.0, 5.0, 1, dtype=a.dtype), "a", FLT[2:],
        ("contiguous",)),
    _op("arange float step", lambda m, a: m.arange(0, 3, 0.7, dtype=m.int64), "a", ("int64",),
        ("contiguous",)),
    _op("isclose inf nan", lambda m, a, b: m.isclose(a, b, equal_nan=True), "ab", FLT[2:],
        values="special"),
    _op("std_mean inf", lambda m, a: m.std_mean(a, 1), "a", FLT[2:], SHAPED, values="special"),
    _op("kl_div negative", lambda m, a, b: m.nn.functional.kl_div(a, b, reduction="sum"), "ab",
        FLT[2:]),
    _op("layer_norm huge", lambda m, a: m.nn.functional.layer_norm(a * 1e30, (4,)), "a",
        FLT[2:], SHAPED),
    # general ops, for breadth
    _op("add", lambda m, a, b: a + b, "ab", ALL),
    _op("mul", lambda m, a, b: a * b, "ab", ALL),
    _op("div", lambda m, a, b: a / b, "ab", ALL),
    _op("matmul", lambda m, a, b: a @ b, "aq", NUM[4:], DENSE2),
    _op("sum", lambda m, a: a.sum(), "a", ALL),
    _op("prod dim", lambda m, a: a.prod(0), "a", NUM, SHAPED),
    _op("argmax", lambda m, a: a.argmax(1), "a", NUM, SHAPED,
        bad=[lambda m, a: a.argmax(2)]),
    _op("sort", lambda m, a: a.sort(dim=1, stable=True), "a", NUM, SHAPED),
    _op("softmax", lambda m, a: a.softmax(1), "a", FLT, SHAPED),
    _op("exp", lambda m, a: a.exp(), "a", FLT),
    _op("where", lambda m, k, a, b: m.where(k, a, b), "mab", ALL),
    _op("cat", lambda m, a, b: m.cat([a, b], 1), "ab", ALL, SHAPED,
        bad=[lambda m, a, b: m.cat([a, b.t()], 1)]),
    # complex dtypes (part 6)
    _op("real imag", lambda m, a: (a.real, a.imag), "a", COMPLEX),
    _op("real of real", lambda m, a: m.real(a), "a", NUM,
        bad=[lambda m, a: m.imag(a)]),
    _op("angle", lambda m, a: m.angle(a), "a", INTS[1:] + FLT[2:] + COMPLEX),
    _op("abs complex", lambda m, a: a.abs(), "a", COMPLEX),
    _op("conj_physical", lambda m, a: m.conj_physical(a), "a", NUM + COMPLEX),
    _op("sgn", lambda m, a: m.sgn(a), "a", FLT[2:] + COMPLEX,
        bad=[(lambda m, a: m.sign(a), "complex64")]),
    _op("view_as_real", lambda m, a: m.view_as_real(a), "a", COMPLEX,
        bad=[(lambda m, a: m.view_as_real(a), "float32")]),
    _op("view_as_complex", lambda m, a: m.view_as_complex(a.reshape(-1, 2).contiguous()), "a",
        FLT[2:], ("contiguous", "noncontig", "transposed"),
        bad=[lambda m, a: m.view_as_complex(a)]),
    _op("complex", lambda m, a, b: m.complex(a, b), "ab", FLT[2:],
        bad=[(lambda m, a, b: m.complex(a, b), "int64"),
             (lambda m, a, b: m.complex(a, b.double()), "float32")]),
    _op("polar", lambda m, a, p: m.polar(p, a), "ap", FLT[2:]),
    _op("mul complex", lambda m, a, b: a * b, "ab", COMPLEX),
    _op("exp complex", lambda m, a: a.exp(), "a", COMPLEX),
    _op("mean complex", lambda m, a: a.mean(0), "a", COMPLEX, SHAPED),
    _op("prod complex", lambda m, a: a.prod(1), "a", COMPLEX, SHAPED),
    _op("matmul complex", lambda m, a, b: a @ b, "aq", COMPLEX, DENSE2),
    _op("adjoint", lambda m, a: m.adjoint(a), "a", NUM + COMPLEX, SHAPED,
        bad=[lambda m, a: m.adjoint(a[0])]),
    # torch-level forms of nn.functional ops, in-place functions, linalg additions
    _op("torch.layer_norm", lambda m, a: m.layer_norm(a, [4]), "a", FLT[2:], SHAPED),
    _op("torch.threshold", lambda m, a: m.threshold(a, 0.5, -1.0), "a", FLT[2:]),
    _op("torch.hardshrink", lambda m, a: m.hardshrink(a, 1.0), "a", FLT[2:]),
    _op("torch.constant_pad_nd", lambda m, a: m.constant_pad_nd(a, [1, 2], 3), "a", NUM,
        SHAPED),
    _op("torch.cosine_similarity", lambda m, a, b: m.cosine_similarity(a, b), "ab", FLT[2:],
        SHAPED),
    _op("torch.pairwise_distance", lambda m, a, b: m.pairwise_distance(a, b), "ab", FLT[2:],
        SHAPED),
    _op("torch.kl_div", lambda m, a, b: m.kl_div(a, b, 2), "ab", FLT[2:]),
    _op("torch.abs_", lambda m, a: m.abs_(a.clone()), "a", NUM),
    _op("torch.clamp_", lambda m, a: m.clamp_(a.clone(), -1, 1), "a", NUM),
    _op("torch.vander", lambda m, a: m.vander(a, 3), "v", NUM[4:] + FLT[2:], ("contiguous",)),
    _op("torch.frobenius_norm", lambda m, a: m.frobenius_norm(a, [0, 1]), "a", FLT[2:],
        SHAPED),
    _op("torch.nuclear_norm", lambda m, a: m.nuclear_norm(a), "a", FLT[2:], DENSE2),
    _op("linalg.eigvals", lambda m, a, b: m.linalg.eigvals(a @ b).abs().sort().values, "aq",
        FLT[2:], DENSE2, tol=1e-4,
        bad=[lambda m, a, b: m.linalg.eigvals(a)]),
    _op("linalg.ldl_factor", lambda m, a: m.linalg.ldl_factor(a @ a.mT), "a", FLT[2:], DENSE2,
        tol=1e-4, bad=[lambda m, a: m.linalg.ldl_factor(a)]),
    # torch.fft (no "empty" layout: PyTorch's MKL refuses an empty batch that nbtorch takes)
    _op("fft.fft", lambda m, a: m.fft.fft(a, n=5), "a", ALL + COMPLEX, DENSE2 + ("0d",),
        bad=[lambda m, a: m.fft.fft(a, dim=2), lambda m, a: m.fft.fft(a, norm="x"),
             lambda m, a: m.fft.fft(a, n=0)]),
    _op("fft.ifft2", lambda m, a: m.fft.ifft2(a, s=(2, 5), norm="ortho"), "a", NUM + COMPLEX,
        DENSE2, bad=[lambda m, a: m.fft.ifft2(a, dim=(0, 0))]),
    _op("fft.rfft", lambda m, a: m.fft.rfft(a, dim=0, norm="forward"), "a", ALL + COMPLEX,
        DENSE2),
    _op("fft.irfftn", lambda m, a: m.fft.irfftn(a, s=(3, 6)), "a", NUM + COMPLEX, DENSE2,
        bad=[lambda m, a: m.fft.irfftn(a, dim=())]),
    _op("fft.hfft", lambda m, a: m.fft.hfft(a, n=7), "a", NUM + COMPLEX, DENSE2),
    _op("fft.ihfftn", lambda m, a: m.fft.ihfftn(a), "a", NUM + COMPLEX, DENSE2),
    _op("fft.fftshift", lambda m, a: m.fft.fftshift(a, dim=-1), "a", ALL + COMPLEX, SHAPED),
    _op("stft", lambda m, v: m.stft(v, 4, hop_length=1, window=m.ones(4, dtype=v.dtype),
                                    return_complex=True), "v", FLT[2:], DENSE2),
]


# ---- inputs -----------------------------------------------------------------------------

def _values(kind, shape, dtype, rng, special):
    if kind == "m" or dtype == "bool":
        return rng.random(shape) > 0.5
    if kind == "i":
        return rng.integers(0, 3, shape).astype(np.int64)
    if dtype in COMPLEX:
        return (rng.normal(0, 2, shape) + 1j * rng.normal(0, 2, shape)).round(2)
    if dtype in INTS:
        lo = 0 if dtype == "uint8" or kind in "ps" else -4
        a = rng.integers(lo, 6, shape)
    else:
        a = rng.normal(0, 2, shape).round(2)
        if kind in "ps":
            a = np.abs(a) + 0.5
        if special and a.size:
            flat = a.reshape(-1)
            picks = rng.integers(0, flat.size, min(3, flat.size))
            flat[picks] = rng.choice([np.inf, -np.inf, np.nan, 0.0], len(picks))
    if kind == "s" and a.ndim:
        a = np.sort(a, axis=-1)
    return a


_BASE = {"a": (3, 4), "b": (3, 4), "p": (3, 4), "m": (3, 4), "q": (4, 3), "i": (3, 4),
         "v": (5,), "s": (6,)}


def _shape(kind, layout, first):
    shape = _BASE[kind]
    if layout == "0d" and kind not in "qi":
        return ()
    if layout == "empty" and kind in "abpm":
        return (0,) + shape[1:]
    if layout == "broadcast" and kind == "b":
        return (1,) + shape[1:]
    return shape


def make_case_inputs(op, dtype, layout, seed):
    """The NumPy arrays of one case (same values for both libraries)."""
    rng = np.random.default_rng(seed)
    special = op.values == "special"
    return [_values(k, _shape(k, layout, i == 0), "int64" if k == "i" else
                    ("bool" if k == "m" else dtype), rng, special)
            for i, k in enumerate(op.inputs)]


def to_tensor(m, arr, dtype_name, layout, kind):
    """`arr` as a module-`m` tensor of `dtype_name` in `layout` (values unchanged)."""
    dt = getattr(m, "int64" if kind == "i" else ("bool" if kind == "m" else dtype_name))
    if arr.dtype == np.bool_ or dt == m.bool:
        base = m.tensor(np.asarray(arr, dtype=bool))
    else:
        kinds = {"f": np.float64, "c": np.complex128}
        base = m.tensor(np.asarray(arr, dtype=kinds.get(arr.dtype.kind, np.int64)))
    t = base.to(dt)
    if layout == "noncontig" and t.dim() >= 1 and t.numel():
        wide = m.zeros(tuple(t.shape[:-1]) + (2 * t.shape[-1],), dtype=dt)
        wide[..., ::2] = t
        t = wide[..., ::2]
    elif layout == "transposed" and t.dim() == 2:
        t = t.t().contiguous().t()
    elif layout == "broadcast" and kind == "a" and t.dim() >= 1:
        t = t[:1].expand(t.shape)
    return t


def cases(ops=OPS, dtypes=None, layouts=None, seed=0, limit=None):
    """Every (op, dtype, layout, variant) of the table, or `limit` of them sampled with
    `seed`; variant -1 is the op's valid call, k >= 0 its k-th bad call."""
    out = []
    for op in ops:
        for dtype in op.dtypes:
            if dtypes is not None and dtype not in dtypes:
                continue
            for layout in op.layouts:
                if layouts is not None and layout not in layouts:
                    continue
                out.append((op, dtype, layout, -1))
        for k, bad in enumerate(op.bad):
            dt = bad[1] if isinstance(bad, tuple) else \
                ("float32" if "float32" in op.dtypes else op.dtypes[-1])
            out.append((op, dt, op.layouts[0], k))
    if limit is not None and limit < len(out):
        rnd = random.Random(seed)
        bad = [c for c in out if c[3] >= 0]                 # invalid calls: always kept
        good = [c for c in out if c[3] < 0]
        out = bad + rnd.sample(good, max(limit - len(bad), 0))
    return out


def case_id(case):
    op, dtype, layout, k = case
    return f"{op.name}-{dtype}-{layout}" + (f"-bad{k}" if k >= 0 else "")


# ---- running and comparing ----------------------------------------------------------------

def run(m, op, arrays, dtype, layout, variant):
    """(result, None) or (None, exception) of the case on module `m`."""
    try:
        inputs = [to_tensor(m, a, dtype, layout, k) for a, k in zip(arrays, op.inputs)]
    except Exception as e:                 # dtype not constructible: reported as such
        return None, e
    fn = op.call if variant < 0 else op.bad[variant]
    fn = fn[0] if isinstance(fn, tuple) else fn
    try:
        with np.errstate(all="ignore"):
            return fn(m, *inputs), None
    except Exception as e:
        return None, e


_ERRORS = (NotImplementedError, IndexError, TypeError, ValueError, ZeroDivisionError,
           RuntimeError)


def error_class(e):
    """The builtin class PyTorch promises for an error (its own error types map onto one)."""
    for cls in _ERRORS:
        if isinstance(e, cls):
            return cls.__name__
    return type(e).__name__


def _flatten(x):
    if isinstance(x, (tuple, list)):
        return [y for item in x for y in _flatten(item)]
    return [x]


def _to_numpy(t):
    if hasattr(t, "detach"):
        t = t.detach().cpu()
        if hasattr(t, "resolve_conj"):          # PyTorch's lazy conjugate/negative bits
            t = t.resolve_conj().resolve_neg()
        name = str(t.dtype).replace("torch.", "")
        if name in ("bfloat16", "float16"):
            t = t.float()
        return name, tuple(t.shape), np.asarray(t.numpy())
    return type(t).__name__, (), np.asarray(t)


def compare(torch_out, nb_out, tol=None):
    """None if the results agree, else a message saying how they differ."""
    a, b = _flatten(torch_out), _flatten(nb_out)
    if len(a) != len(b):
        return f"{len(a)} results from PyTorch, {len(b)} from nbtorch"
    for k, (x, y) in enumerate(zip(a, b)):
        dx, sx, vx = _to_numpy(x)
        dy, sy, vy = _to_numpy(y)
        if dx != dy and not (dx in ("int", "float", "bool") and dy == dx):
            return f"result {k}: dtype {dy}, PyTorch {dx}"
        if sx != sy:
            return f"result {k}: shape {sy}, PyTorch {sx}"
        if vx.dtype.kind in "biu" and vy.dtype.kind in "biu":
            if not np.array_equal(vx, vy):
                return f"result {k}: values {vy.tolist()} != PyTorch {vx.tolist()}"
            continue
        rtol = tol if tol is not None else _TOL.get(dx, 1e-6)
        fx, fy = vx.astype(np.complex128 if vx.dtype.kind == "c" else np.float64), \
            vy.astype(np.complex128 if vy.dtype.kind == "c" else np.float64)
        if not np.allclose(fy, fx, rtol=rtol, atol=rtol, equal_nan=True):
            return f"result {k}: values {fy.tolist()} != PyTorch {fx.tolist()}"
    return None


def check_case(torch, nbtorch, case, seed=0):
    """None when nbtorch agrees with PyTorch on the case, else a description."""
    op, dtype, layout, variant = case
    arrays = make_case_inputs(op, dtype, layout, seed)
    t_out, t_err = run(torch, op, arrays, dtype, layout, variant)
    n_out, n_err = run(nbtorch, op, arrays, dtype, layout, variant)
    if t_err is not None and n_err is not None:
        if error_class(t_err) != error_class(n_err):
            return (f"PyTorch raised {type(t_err).__name__} ({str(t_err)[:120]}), nbtorch "
                    f"{type(n_err).__name__} ({str(n_err)[:120]})")
        return None
    if t_err is not None:
        return f"nbtorch returned, PyTorch raised {type(t_err).__name__}: {str(t_err)[:160]}"
    if n_err is not None:
        return f"nbtorch raised {type(n_err).__name__}: {str(n_err)[:200]}"
    return compare(t_out, n_out, op.tol)


def all_dtypes_available(nbtorch):
    return tuple(d for d in ALL + COMPLEX if hasattr(nbtorch, d))

