"""Shape and construction ops (ops/rearranging.py, products.py, diagonal.py) against NumPy,
gradients by gradcheck; every test runs on each device (see tests/harness.py)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import nbtorch
from harness import FLOATS, check_grad
from harness import check_op as _check_op

DENSE = ("contiguous", "noncontig", "empty")     # ops whose inputs don't broadcast
F64 = (nbtorch.float64,)


def check_op(nb_fn, np_fn, *specs, layouts=DENSE, grad=True, device="cpu", **kw):
    """The harness's check_op; gradients on the contiguous layout only (these ops' inputs
    do not broadcast against each other)."""
    _check_op(nb_fn, np_fn, *specs, layouts=layouts, grad=False, device=device, **kw)
    if grad:
        check_grad(nb_fn, *specs, layouts=("contiguous",), device=device)


def test_kron_tensordot_cross(device):
    check_op(nbtorch.kron, np.kron, (2, 3), (3, 2), layouts=DENSE, dtypes=FLOATS,
             device=device)
    check_op(lambda a, b: nbtorch.tensordot(a, b, dims=([1, 0], [0, 2])),
             lambda a, b: np.tensordot(a, b, axes=([1, 0], [0, 2])), (3, 4), (4, 2, 3),
             layouts=("contiguous", "noncontig"), device=device)
    check_op(lambda a, b: nbtorch.linalg.cross(a, b), lambda a, b: np.cross(a, b),
             (4, 3), (1, 3), layouts=("contiguous", "noncontig"), device=device)


def test_diag_family(device):
    check_op(lambda x: nbtorch.diag(x, 1), lambda x: np.diag(x, 1), (3,), layouts=DENSE,
             device=device)
    check_op(lambda x: x.diag(-1), lambda x: np.diag(x, -1).copy(), (3, 4),
             layouts=("contiguous", "noncontig"), device=device)
    check_op(nbtorch.diagflat, lambda x: np.diagflat(x), (2, 2), layouts=DENSE, device=device)

    def embed(x):
        out = np.zeros(x.shape[:-1] + (x.shape[-1] + 1,) * 2, x.dtype)
        idx = np.arange(x.shape[-1])
        out[..., idx, idx + 1] = x
        return out
    check_op(lambda x: nbtorch.diag_embed(x, 1), embed, (2, 3), layouts=DENSE, device=device)


def test_view_scatters(device):
    def np_diag_scatter(x, s):
        out = x.copy()
        i = np.arange(min(out.shape[0], out.shape[1] - 1))
        out[i, i + 1] = s
        return out
    check_op(lambda x, s: nbtorch.diagonal_scatter(x, s, 1), np_diag_scatter, (3, 4), (3,),
             layouts=("contiguous", "noncontig"), device=device)

    def np_slice(x, s):
        out = x.copy()
        out[:, 1::2] = s
        return out
    check_op(lambda x, s: x.slice_scatter(s, 1, 1, None, 2), np_slice, (3, 4), (3, 2),
             layouts=("contiguous", "noncontig"), device=device)

    def np_select(x, s):
        out = x.copy()
        out[:, -1] = s
        return out
    check_op(lambda x, s: nbtorch.select_scatter(x, s, 1, -1), np_select, (3, 4), (3,),
             layouts=("contiguous", "noncontig"), device=device)


def test_rearranging(device):
    check_op(lambda x: x.rot90(1, (0, 1)), lambda x: np.rot90(x, 1, (0, 1)).copy(), (3, 4),
             layouts=("contiguous", "noncontig"), device=device)
    check_op(lambda x: nbtorch.rot90(x, -1, (1, 0)), lambda x: np.rot90(x, -1, (1, 0)).copy(),
             (2, 3, 4), layouts=("contiguous",), dtypes=F64, device=device)
    check_op(lambda a, b: nbtorch.dstack([a, b]), lambda a, b: np.dstack([a, b]), (3, 4),
             (3, 4), layouts=("contiguous", "noncontig"), device=device)
    check_op(lambda a, b: nbtorch.column_stack([a, b]), lambda a, b: np.column_stack([a, b]),
             (3,), (3, 2), layouts=("contiguous",), dtypes=F64, device=device)
    idx = np.array([[2, 0], [1, 1], [0, 3]])
    check_op(lambda x: x.take_along_dim(nbtorch.tensor(idx, device=x.device), 1),
             lambda x: np.take_along_axis(x, idx, 1), (3, 4),
             layouts=("contiguous", "noncontig"), device=device)


def test_atleast_stacks_and_splits():
    s = nbtorch.tensor(3.0)
    assert nbtorch.atleast_1d(s).shape == (1,)
    assert nbtorch.atleast_2d(nbtorch.ones(3)).shape == (1, 3)
    assert nbtorch.atleast_3d(nbtorch.ones(2, 3)).shape == (2, 3, 1)
    assert [t.shape for t in nbtorch.atleast_3d(s, nbtorch.ones(4))] == [(1, 1, 1), (1, 4, 1)]
    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0, 12.0).reshape(2, 3)
    ta, tb = nbtorch.tensor(a), nbtorch.tensor(b)
    np.testing.assert_array_equal(nbtorch.hstack([ta, tb]).numpy(), np.hstack([a, b]))
    np.testing.assert_array_equal(nbtorch.row_stack([ta[0], tb]).numpy(), np.vstack([a[0], b]))
    x = np.arange(24.0).reshape(2, 4, 3)
    tx = nbtorch.tensor(x)
    for nb_parts, np_parts in [(tx.hsplit(2), np.hsplit(x, 2)), (tx.vsplit([1]), np.vsplit(x, [1])),
                               (nbtorch.dsplit(tx, 3), np.dsplit(x, 3))]:
        assert len(nb_parts) == len(np_parts)
        for p, q in zip(nb_parts, np_parts):
            np.testing.assert_array_equal(p.numpy(), q)
    with pytest.raises(RuntimeError, match="hsplit.*not divisible"):
        tx.hsplit(3)
    with pytest.raises(RuntimeError, match="vsplit requires a tensor with at least 2"):
        nbtorch.ones(4).vsplit(2)


def test_combinatorics_and_blocks():
    v = nbtorch.tensor([1, 2, 3])
    np.testing.assert_array_equal(nbtorch.combinations(v).numpy(),
                                  [[1, 2], [1, 3], [2, 3]])
    assert nbtorch.combinations(v, 2, with_replacement=True).shape == (6, 2)
    np.testing.assert_array_equal(nbtorch.combinations(v, 1).numpy(), [1, 2, 3])
    cp = nbtorch.cartesian_prod(nbtorch.tensor([1, 2]), nbtorch.tensor([3, 4, 5]))
    np.testing.assert_array_equal(cp.numpy(), [[a, b] for a in (1, 2) for b in (3, 4, 5)])
    bd = nbtorch.block_diag(nbtorch.ones(2, 2), nbtorch.tensor([[5, 6, 7]]), nbtorch.tensor(9))
    want = np.zeros((4, 6))
    want[:2, :2], want[2, 2:5], want[3, 5] = 1, [5, 6, 7], 9
    np.testing.assert_array_equal(bd.numpy(), want)
    assert bd.dtype is nbtorch.float32
    tri = nbtorch.tril_indices(3, 4, 1)
    np.testing.assert_array_equal(tri.numpy(), np.stack(np.tril_indices(3, 1, 4)))
    np.testing.assert_array_equal(nbtorch.triu_indices(4, 3, -1).numpy(),
                                  np.stack(np.triu_indices(4, -1, 3)))
    for bad in (lambda: nbtorch.combinations(nbtorch.ones(2, 2)),
                lambda: nbtorch.block_diag(nbtorch.ones(1, 1, 1)),
                lambda: nbtorch.diag(nbtorch.ones(1, 1, 1)),
                lambda: nbtorch.cross(nbtorch.ones(3), nbtorch.ones(2)),
                lambda: nbtorch.tensordot(nbtorch.ones(2, 3), nbtorch.ones(2, 3), 1)):
        with pytest.raises(RuntimeError):
            bad()


def test_gradients_of_compositions():
    check_grad(lambda a, b: nbtorch.block_diag(a, b), (2, 3), (1, 2), layouts=("contiguous",))
    check_grad(lambda a, b: nbtorch.cartesian_prod(a, b), (3,), (2,), layouts=("contiguous",))
    check_grad(lambda a: nbtorch.combinations(a, 2), (4,), layouts=("contiguous",))
    check_grad(lambda a: a.take_along_dim(nbtorch.tensor([[0, 0], [1, 2]]), 1), (2, 3),
               layouts=("contiguous",))
    check_grad(lambda a, s: nbtorch.diagonal_scatter(a, s), (3, 3), (3,),
               layouts=("contiguous",), gradgrad=True)


def test_views_extra():
    x = nbtorch.arange(6.0).reshape(2, 3)
    y = x.clone()
    y.t_()
    assert y.shape == (3, 2) and y.tolist() == x.t().tolist()
    leaf = nbtorch.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.t_()
    z = leaf * 2
    z.unsqueeze_(0)
    z.sum().backward()
    assert leaf.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    c = nbtorch.transpose_copy(x, 0, 1)
    c[0, 0] = 100.0
    assert x[0, 0].item() == 0.0
    assert [t.shape for t in nbtorch.split_with_sizes(x, [1, 2], 1)] == [(2, 1), (2, 2)]
    np.testing.assert_array_equal(
        nbtorch.as_strided_scatter(nbtorch.zeros(4), nbtorch.ones(2), (2,), (2,)).numpy(),
        [1, 0, 1, 0])
    f = nbtorch.ones(7, 3).fill_diagonal_(5.0, wrap=True)
    want = np.ones((7, 3))
    want[[0, 1, 2, 4, 5, 6], [0, 1, 2, 0, 1, 2]] = 5
    np.testing.assert_array_equal(f.numpy(), want)
    assert nbtorch.nonzero_static(nbtorch.tensor([0, 1, 1, 0, 1]), size=2).tolist() == [[1], [2]]
    assert nbtorch.nonzero_static(nbtorch.tensor([0, 1]), size=2, fill_value=-7).tolist() == \
        [[1], [-7]]
    r, c = nbtorch.unravel_index(nbtorch.tensor([4, 5, 7]), (2, 3))
    assert r.tolist() == [1, 1, 0] and c.tolist() == [1, 2, 1]
    assert nbtorch.isin(nbtorch.tensor([1.0, 2.0, np.nan]), nbtorch.tensor([2.0, np.nan])) \
        .tolist() == [False, True, False]
    assert nbtorch.isin(nbtorch.tensor([1, 2]), nbtorch.tensor([2]), invert=True).tolist() == \
        [True, False]
    assert nbtorch.trace(x).item() == 4.0
    np.testing.assert_allclose(nbtorch.ones(2, 3).renorm(2, 0, 1.0).numpy(),
                               np.full((2, 3), 3 ** -0.5), rtol=1e-6)
    check_grad(lambda a: a.renorm(2, 1, 1.0), (3, 2), layouts=("contiguous",))
    assert nbtorch.range(0, 3).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert nbtorch.ones(2, 3).sum_to_size(1, 3).tolist() == [[2.0, 2.0, 2.0]]
    with pytest.raises(RuntimeError, match="more than one value"):
        nbtorch.ones(2).is_nonzero()


@settings(max_examples=60, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
       count=st.integers(1, 5), data=st.data(),
       dtype=st.sampled_from([np.float32, np.float64, np.int64, np.bool_]),
       transposed=st.booleans())
def test_stack_without_autograd_matches_numpy_on_every_dim(shape, count, data, dtype,
                                                         transposed):
    # the unrecorded path joins the pieces with one np.concatenate into the result viewed
    # with dim d joined (np.stack on the last dim): same values, any piece layout
    rng = np.random.default_rng(0)
    arrays = [(rng.standard_normal(shape) * 3).astype(dtype) for _ in range(count)]
    tensors = [nbtorch.tensor(a.T.copy()).t() if transposed and a.ndim == 2 else
               nbtorch.tensor(a) for a in arrays]
    d = data.draw(st.integers(-len(shape) - 1, len(shape)))
    got = nbtorch.stack(tensors, d)
    want = np.stack(arrays, d)
    assert got.shape == want.shape and got.is_contiguous()
    np.testing.assert_array_equal(got.numpy(), want)
