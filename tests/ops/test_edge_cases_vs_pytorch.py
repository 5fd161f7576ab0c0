"""Edge cases where nbtorch answered differently from PyTorch 2.13 (found by a
differential sweep): 0-d complex scans, integer division of empty results, filling an
expanded tensor, all/any over no dim, contiguity of empty tensors."""
import pytest

import nbtorch


def test_scans_of_a_zero_dim_complex_tensor_are_the_value():
    x = nbtorch.tensor(1 + 2j)
    assert x.cumsum(0).item() == 1 + 2j          # 1+3j: real and imag were summed
    assert x.cumprod(0).item() == 1 + 2j         # IndexError before


def test_integer_division_of_an_empty_result_by_zero_is_empty():
    a = nbtorch.zeros(0, 3, dtype=nbtorch.int64)
    b = nbtorch.tensor([1, 0, 1])
    assert (a // b).shape == (0, 3) and (a % b).shape == (0, 3)
    assert nbtorch.fmod(a, b).shape == (0, 3)


def test_fill_and_zero_of_an_expanded_tensor():
    x = nbtorch.arange(6.0).reshape(2, 3)
    x[:, :1].expand(2, 3).fill_(7)
    assert x.tolist() == [[7, 1, 2], [7, 4, 5]]
    y = nbtorch.ones(1)
    y.expand(3).zero_()
    assert y.tolist() == [0.0]


def test_all_and_any_over_no_dim_keep_every_element():
    x = nbtorch.tensor([[0.0, 1.0], [2.0, 0.0]])
    assert x.any(dim=()).tolist() == [[False, True], [True, False]]
    assert x.all(dim=()).tolist() == [[False, True], [True, False]]


def test_a_tensor_without_elements_is_contiguous():
    assert nbtorch.zeros(2, 0, 3).transpose(0, 2).is_contiguous()


def test_spectral_gradients_with_repeated_eigenvalues_are_finite():
    """Unused eigen/singular vectors give no gradient: repeated values gave nan before."""
    for fn in (lambda a: nbtorch.linalg.eigvalsh(a).sum(),
               lambda a: nbtorch.linalg.svdvals(a).sum(),
               lambda a: nbtorch.linalg.matrix_norm(a, "nuc")):
        a = nbtorch.eye(3, dtype=nbtorch.float64, requires_grad=True)
        fn(a).backward()
        assert a.grad.tolist() == nbtorch.eye(3, dtype=nbtorch.float64).tolist()


def test_linalg_out_is_resized_and_norm_takes_nuc():
    a = nbtorch.tensor([[[2.0, 1.0], [1.0, 3.0]], [[1.0, 0.0], [0.0, 4.0]]])
    out = nbtorch.empty(0)
    nbtorch.linalg.det(a, out=out)                  # shape mismatch error before
    assert out.shape == (2,) and out.tolist() == pytest.approx([5.0, 4.0])
    vout = nbtorch.empty(0)
    nbtorch.linalg.vector_norm(nbtorch.tensor([3.0, 4.0]), out=vout)   # TypeError before
    assert vout.item() == pytest.approx(5.0)
    x = nbtorch.tensor([[3.0, 4.0], [1.0, 2.0]])
    want = nbtorch.linalg.matrix_norm(x, "nuc").item()
    assert nbtorch.norm(x, p="nuc").item() == pytest.approx(want)      # 'unsupported p'
    assert x.norm("nuc", (0, 1)).item() == pytest.approx(want)


def test_linalg_on_empty_matrices_and_lstsq_residuals():
    z = nbtorch.zeros(2, 0, 0)
    assert nbtorch.linalg.cholesky(z).shape == (2, 0, 0)           # reshape errors before
    assert nbtorch.linalg.solve_triangular(z, nbtorch.zeros(2, 0, 2), upper=False).shape \
        == (2, 0, 2)
    assert [t.shape for t in nbtorch.linalg.lu(nbtorch.zeros(0, 3))] == [(0, 0), (0, 0),
                                                                       (0, 3)]
    assert nbtorch.linalg.matrix_norm(nbtorch.zeros(2, 0, 3), 2).tolist() == [0.0, 0.0]
    assert nbtorch.linalg.cond(nbtorch.zeros(0, 3)).item() == 0.0
    assert nbtorch.cdist(nbtorch.zeros(0, 3), nbtorch.zeros(4, 3)).shape == (0, 4)
    assert nbtorch.cdist(nbtorch.zeros(2, 0), nbtorch.zeros(4, 0)).tolist() == [[0.0] * 4] * 2
    a = nbtorch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=nbtorch.float64)
    b = nbtorch.tensor([[1.0], [2.0], [0.0]], dtype=nbtorch.float64)
    r = nbtorch.linalg.lstsq(a, b, driver="gels").residuals        # empty before
    assert r.shape == (1,) and r.item() == pytest.approx(3.0)
    rc = nbtorch.linalg.lstsq(a.to(nbtorch.complex128), b.to(nbtorch.complex128)).residuals
    assert rc.dtype is nbtorch.float64


def test_einsum_sublist_format_norm_dims_and_sample_n():
    a, b = nbtorch.randn(2, 3), nbtorch.randn(3, 4)
    assert nbtorch.allclose(nbtorch.einsum(a, [0, 1], b, [1, 2], [0, 2]), a @ b)
    assert nbtorch.einsum(a, [Ellipsis, 1], [Ellipsis]).shape == (2,)
    with pytest.raises(IndexError, match="Dimension out of range"):
        nbtorch.linalg.norm(nbtorch.ones(4, 5), dim=(1, 2))    # wrapped round to (1, 0)
    with pytest.raises(RuntimeError, match="does not have an identity"):
        nbtorch.linalg.vector_norm(nbtorch.zeros(0), float("inf"))
    with pytest.warns(FutureWarning, match="sample_n"):
        assert nbtorch.distributions.Normal(0.0, 1.0).sample_n(3).shape == (3,)
