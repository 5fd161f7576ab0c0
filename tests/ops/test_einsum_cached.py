"""einsum with its parse cached per (equation, shapes) and the identity views and batch of
one skipped where nothing records: the same bits as the recorded path, errors every time."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch.ops import einsum as es

CASES = [
    ("ij,jk->ik", [(8, 16), (16, 5)]), ("ij,jk", [(3, 4), (4, 2)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij,kj->ik", [(3, 4), (5, 4)]),
    ("ii->i", [(4, 4)]), ("ij->ji", [(2, 3)]), ("i,i->", [(6,), (6,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("ij,j->i", [(3, 7), (7,)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,ij->ij", [(3, 4), (1, 4)]), ("ijk->", [(2, 3, 4)]),
]


@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0] for c in CASES])
def test_same_bits_as_the_recorded_path(eq, shapes):
    ops = [torch.randn(*s, dtype=torch.float64) for s in shapes]
    for _ in range(2):                           # the second call runs from the cache
        with torch.no_grad():
            fast = torch.einsum(eq, *ops)
        slow = torch.einsum(eq, ops[0].clone().requires_grad_(True), *ops[1:]).detach()
        np.testing.assert_array_equal(fast.numpy(), slow.numpy())
        np.testing.assert_allclose(fast.numpy(), np.einsum(eq, *[o.numpy() for o in ops]),
                                   rtol=1e-12, atol=1e-12)


def test_cache_is_keyed_by_shapes_and_errors_repeat():
    a, b = torch.randn(2, 3), torch.randn(3, 4)
    assert torch.einsum("ij,jk->ik", a, b).shape == (2, 4)
    assert torch.einsum("ij,jk->ik", torch.randn(5, 3), b).shape == (5, 4)
    for _ in range(2):
        with pytest.raises(RuntimeError, match="does not broadcast"):
            torch.einsum("ij,jk->ik", a, torch.randn(2, 4))
    assert ("ij,jk->ik", (2, 3), (2, 4)) not in es._PARSED
    torch.einsum("ij,jk->ik", a, b)
    for _ in range(2):                           # a dtype mismatch is checked on a hit too
        with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
            torch.einsum("ij,jk->ik", a, b.double())


def test_gradients_flow():
    a = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, y: torch.einsum("ij,jk->ik", x, y), (a, b))
    out = torch.einsum("ij->ij", a)
    assert out.grad_fn is not None
