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


def test_geometric_entropy_of_tiny_probabilities():
    """H = (-(1-p) log(1-p) - p log p) / p: the BCE-with-logits inside it kept softplus's
    threshold and dropped log1p(exp(-|x|)) past |x| = 20 (H(1e-12) came out 27.63)."""
    p = np.array([1e-12, 1e-9, 0.3])
    want = (-(1 - p) * np.log1p(-p) - p * np.log(p)) / p
    got = D.Geometric(nbtorch.tensor(p, dtype=F64)).entropy().numpy()
    # (1 - p) x + softplus(-x) cancels to ~1e-11 at p = 1e-12 (PyTorch's formula: its
    # error too), so ~1e-4, not the 3.6% of the dropped term
    np.testing.assert_allclose(got, want, rtol=2e-4)
    x = nbtorch.tensor([-30.0, 25.0, 40.0], dtype=F64)
    loss = nbtorch.nn.functional.binary_cross_entropy_with_logits(
        x, nbtorch.tensor([1.0, 0.0, 1.0], dtype=F64), reduction="none").numpy()
    np.testing.assert_allclose(loss, [30.0 + np.log1p(np.exp(-30.0)),
                                      25.0 + np.log1p(np.exp(-25.0)), np.log1p(np.exp(-40.0))],
                               rtol=1e-15)


def test_symmetric_constraints_as_pytorch():
    """symmetric: isclose(value, value.mT, atol=1e-6), so an inf on the diagonal is
    symmetric and a 5e-7 asymmetry is tolerated (both refused before)."""
    from nbtorch.distributions import constraints
    m = nbtorch.tensor([[[1.0, 5e-7], [0.0, 1.0]], [[float("inf"), 0.0], [0.0, 1.0]],
                        [[1.0, 2e-6], [0.0, 1.0]]], dtype=F64)
    assert constraints.symmetric.check(m).tolist() == [True, True, False]
    assert constraints.positive_definite.check(m).tolist() == [True, True, False]


def test_shape_messages():
    from nbtorch.distributions import transforms
    with np.testing.assert_raises_regex(ValueError, r"^Input is not square$"):
        transforms.CorrCholeskyTransform().inverse_shape((3, 2))
    with np.testing.assert_raises_regex(ValueError, r"^Too few dimensions on input$"):
        transforms.CorrCholeskyTransform().forward_shape(())
    with np.testing.assert_raises_regex(ValueError, r"got torch\.Size\(\[6\]\)$"):
        transforms.ReshapeTransform((6,), (2, 3)).forward_shape((4, 3))
    with np.testing.assert_raises_regex(RuntimeError, r"^expand\(torch\.DoubleTensor\{\[2, 3\]\}"):
        nbtorch.zeros(2, 3, dtype=F64).expand(3)
