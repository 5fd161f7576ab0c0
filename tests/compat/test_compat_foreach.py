"""torch._foreach_*: list-wise ops as an EMA or a hand-written optimizer calls them; values
against the per-tensor ops, PyTorch's return types and errors."""
import numpy as np
import pytest

import nbtorch


def _lists():
    g = nbtorch.Generator().manual_seed(0)
    return ([nbtorch.randn(3, generator=g), nbtorch.randn(2, 2, generator=g)],
            [nbtorch.randn(3, generator=g), nbtorch.randn(2, 2, generator=g)])


def close(xs, ys):
    for x, y in zip(xs, ys):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-6)


def test_ema_update_in_place_returns_the_list():
    ema, p = _lists()
    want = [e * 0.9 + q * 0.1 for e, q in zip(ema, p)]
    out = nbtorch._foreach_mul_(ema, 0.9)
    assert out is ema
    nbtorch._foreach_add_(ema, p, alpha=0.1)
    close(ema, want)
    ema2, _ = _lists()
    nbtorch._foreach_lerp_(ema2, p, 0.1)
    close(ema2, [e + 0.1 * (q - e) for e, q in zip(_lists()[0], p)])


def test_out_of_place_scalar_lists_tensor_operands_and_reductions():
    a, b = _lists()
    r = nbtorch._foreach_add(a, [1.0, 2.0])
    assert isinstance(r, tuple)
    close(r, [a[0] + 1, a[1] + 2])
    close(nbtorch._foreach_sub(a, b, alpha=2), [x - 2 * y for x, y in zip(a, b)])
    close(nbtorch._foreach_mul(a, nbtorch.tensor(3.0)), [x * 3 for x in a])
    close(nbtorch._foreach_pow(2.0, a), [2.0 ** x for x in a])
    close(nbtorch._foreach_addcmul(a, a, b, nbtorch.tensor([1.0, 2.0])),
          [a[0] + a[0] * b[0], a[1] + 2 * a[1] * b[1]])
    close(nbtorch._foreach_addcdiv(a, a, [y.abs() + 1 for y in b], value=0.5),
          [x + 0.5 * x / (y.abs() + 1) for x, y in zip(a, b)])
    close(nbtorch._foreach_norm(a), [x.norm() for x in a])
    close(nbtorch._foreach_norm(a, 1), [x.abs().sum() for x in a])
    close(nbtorch._foreach_max(a), [x.max() for x in a])
    close(nbtorch._foreach_clamp_min(a, 0.0), [x.clamp(min=0.0) for x in a])
    sq = nbtorch._foreach_abs(a)
    nbtorch._foreach_sqrt_(sq)
    close(sq, [x.abs().sqrt() for x in a])
    c = nbtorch._foreach_clone(a)
    nbtorch._foreach_zero_(c)
    close(c, [x * 0 for x in a])
    nbtorch._foreach_copy_(c, a)
    close(c, a)


def test_autograd_and_errors_match_pytorch():
    w = nbtorch.ones(2, requires_grad=True)
    (y,) = nbtorch._foreach_mul([w], 3.0)
    y.sum().backward()
    close([w.grad], [[3.0, 3.0]])
    a, b = _lists()
    with pytest.raises(RuntimeError,
                       match="Tensor lists must have the same number of tensors, got 2 and 1"):
        nbtorch._foreach_add(a, b[:1])
    with pytest.raises(RuntimeError, match="at least one tensor"):
        nbtorch._foreach_add([], 1)
    with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
        nbtorch._foreach_add(a, [1.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        nbtorch._foreach_mul_([w], 2.0)


def test_same_names_as_pytorch():
    torch = pytest.importorskip("torch")
    want = {n for n in dir(torch) if n.startswith("_foreach_")}
    assert want <= set(dir(nbtorch)), sorted(want - set(dir(nbtorch)))
