"""Edge cases of the distributions that need no PyTorch: 0-d parameters, repeated calls
(the small-tensor fast path), boundaries of the support."""
import numpy as np

import nbtorch
import nbtorch.distributions as D

F64 = nbtorch.float64


def test_zero_dim_results_stay_writable_views():
    """A 0-d result of the small-call fast path is a view of its storage (a NumPy scalar
    before: in-place ops raised TypeError and `y[...] = v` left `y` reading the old value)."""
    a, b = nbtorch.tensor(0.5, dtype=F64), nbtorch.tensor(2.0, dtype=F64)
    for _ in range(3):            # the first calls resolve the loop; later ones take the path
        y = a / b
    y.add_(1)
    assert float(y) == 1.25
    y[...] = 7.0
    assert float(y) == 7.0 and float(y.view(1)[0]) == 7.0


def test_gamma_family_samples_with_0d_parameters():
    g = D.Gamma(nbtorch.tensor(0.5, dtype=F64), nbtorch.tensor(1.0, dtype=F64))
    g.mean, g.mode, g.variance           # the same 0-d divisions, as a user's code makes them
    for dist in (g, D.Chi2(nbtorch.tensor(3.0, dtype=F64)), D.StudentT(2.0),
                 D.InverseGamma(2.0, 1.0), D.FisherSnedecor(2.0, 3.0)):
        assert dist.sample().shape == () and dist.rsample((2,)).shape == (2,)
        assert np.isfinite(dist.sample().numpy())
