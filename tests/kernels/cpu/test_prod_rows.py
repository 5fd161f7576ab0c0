"""kernels/cpu/prod_rows.py: row products in one vectorised pass (reassociated)."""
import numpy as np
import pytest

import nbtorch


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_products_match_numpy_within_rounding(dtype):
    rng = np.random.default_rng(0)
    a = (1 + 0.05 * rng.standard_normal((37, 515))).astype(dtype)
    got = nbtorch.from_numpy(a).prod(1).numpy()
    want = np.prod(a.astype(np.float64), 1)
    np.testing.assert_allclose(got, want, rtol=2e-6 if dtype is np.float32 else 1e-13)
    whole = nbtorch.from_numpy(a[:3]).prod().item()         # a full product: one row
    assert whole == pytest.approx(float(np.prod(a[:3].astype(np.float64))), rel=1e-5)


def test_row_products_keep_ieee_specials_and_integers_exact():
    a = np.ones((6, 40), np.float32)
    a[0, 7] = np.nan
    a[1, 3], a[1, 30] = 0.0, np.inf                         # 0 * inf: NaN in any order
    a[2, 5] = -np.inf
    a[3, 9] = 0.0
    a[4, :] = 2.0                                            # 2^40 overflows float32's
    got = nbtorch.from_numpy(a).prod(1).numpy()              # range only past 2^128
    assert np.isnan(got[0]) and np.isnan(got[1]) and got[2] == -np.inf
    assert got[3] == 0.0 and got[4] == 2.0 ** 40 and got[5] == 1.0
    i = np.random.default_rng(1).integers(-3, 4, (9, 70))
    for dtype in (np.int64, np.int32, np.int8, np.uint8, np.bool_):
        x = nbtorch.from_numpy(i.astype(dtype))
        np.testing.assert_array_equal(x.prod(1).numpy(), np.prod(i.astype(dtype), 1,
                                                                 dtype=x.prod(1).numpy().dtype))


def test_prod_over_a_leading_dim_and_its_gradient():
    a = np.random.default_rng(2).uniform(0.5, 1.5, (5, 4, 3))
    x = nbtorch.tensor(a, requires_grad=True)
    np.testing.assert_allclose(x.prod(0).detach().numpy(), np.prod(a, 0), rtol=1e-14)
    np.testing.assert_allclose(x.prod(1).detach().numpy(), np.prod(a, 1), rtol=1e-14)
    assert nbtorch.autograd.gradcheck(lambda t: t.prod(2), (x,))
