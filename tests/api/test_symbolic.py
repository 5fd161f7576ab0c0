"""torch._check* / _assert and the sym_* helpers: results and errors as PyTorch 2.13's."""
import numpy as np
import pytest

import nbtorch as torch

DEFAULT = "Expected cond to be True, but got False."


@pytest.mark.parametrize("check, error", [
    (torch._check, RuntimeError), (torch._check_index, IndexError),
    (torch._check_value, ValueError), (torch._check_type, TypeError),
    (torch._check_not_implemented, NotImplementedError)])
def test_checks_raise_their_error_with_lazy_message(check, error):
    check(True)
    check(True, "a non-callable message is only checked on failure")
    with pytest.raises(error, match=DEFAULT):
        check(False)
    with pytest.raises(error, match="^bad x$"):
        check(False, lambda: "bad x")


def test_check_argument_errors():
    with pytest.raises(TypeError, match="message must be a callable"):
        torch._check(False, "plain text")
    with pytest.raises(TypeError, match="cond must be a bool, but got <class 'int'>"):
        torch._check(1)
    with pytest.raises(TypeError, match="cond must be a bool"):
        torch._check(np.bool_(True))
    with pytest.raises(AssertionError, match="error_type must be a subclass of Exception"):
        torch._check_with(int, False, lambda: "k")
    with pytest.raises(KeyError):
        torch._check_with(KeyError, False, lambda: "k")


def test_check_is_size_and_tensor_all():
    torch._check_is_size(0)
    with pytest.raises(RuntimeError, match="^neg$"):
        torch._check_is_size(-1, lambda: "neg")
    with pytest.raises(RuntimeError):
        torch._check_is_size(3, max=2)
    torch._check_tensor_all(torch.tensor([True, True]))
    with pytest.raises(RuntimeError, match=DEFAULT):
        torch._check_tensor_all(torch.tensor([True, False]))
    with pytest.raises(ValueError, match="^v$"):
        torch._check_tensor_all_with(ValueError, torch.tensor([False]), lambda: "v")
    with pytest.raises(TypeError, match="must have dtype torch.bool, but got torch.int64"):
        torch._check_tensor_all(torch.tensor([1, 0]))
    with pytest.raises(TypeError, match="cond must be a tensor"):
        torch._check_tensor_all(5)


def test_assert():
    torch._assert(True, "never")
    with pytest.raises(AssertionError, match="^m$"):
        torch._assert(False, "m")


def test_sym_helpers_promote_as_pytorch():
    assert torch.sym_max(1, 2.0) == 2.0 and isinstance(torch.sym_max(1, 2.0), float)
    assert torch.sym_max(3, 2) == 3 and isinstance(torch.sym_max(3, 2), int)
    assert torch.sym_min(3, 2.5) == 2.5 and torch.sym_min(1, 2) == 1
    assert torch.sym_int(2.7) == 2 and torch.sym_int(-2.7) == -2
    assert torch.sym_float(3) == 3.0 and isinstance(torch.sym_float(3), float)
    assert torch.sym_not(True) is False and torch.sym_not(0) is True
    assert torch.sym_ite(True, 1, 2) == 1 and torch.sym_ite(False, 1, 2) == 2
    assert torch.sym_sqrt(4) == 2.0 and torch.sym_sum([1, 2, 3.0]) == 6.0
    assert torch.sym_sum(1, 2) == 3 and torch.sym_sum(()) == 0
    assert torch.sym_fresh_size(5) == 5
    assert not isinstance(3, torch.SymInt) and not isinstance(3.0, torch.SymFloat)
    with pytest.raises(AssertionError, match="expected"):
        torch.sym_max(torch.tensor(3), 4)
    with pytest.raises(AssertionError, match="type mismatch"):
        torch.sym_ite(True, 1, 2.0)
    with pytest.raises(AssertionError, match="expected SymBool or bool"):
        torch.sym_ite(1, 1, 2)


def test_sym_constrain_range_messages():
    torch.sym_constrain_range(3, min=0, max=5)
    with pytest.raises(RuntimeError, match=r"Invalid value range for 7 between \[0, 5\]\."):
        torch.sym_constrain_range(7, min=0, max=5)
    with pytest.raises(RuntimeError,
                       match=r"for 7 between \[-9223372036854775808, 5\]"):
        torch.sym_constrain_range(7, max=5)
    with pytest.raises(RuntimeError, match=r"for -1 between \[0, 9223372036854775807\]"):
        torch.sym_constrain_range_for_size(-1)
    with pytest.raises(RuntimeError, match=r"for 3 between \[4, "):
        torch.sym_constrain_range(3.5, min=4)


def test_check_inside_traced_code():
    def f(x):
        torch._check(x.shape[0] > 0, lambda: "empty batch")
        torch._assert(x.dim() == 2, "2-D input expected")
        return x * 2
    traced = torch.jit.trace(f, (torch.ones(3, 2),))
    np.testing.assert_array_equal(traced(torch.ones(3, 2)).numpy(), np.full((3, 2), 2.0))
    compiled = torch.compile(f, fullgraph=True)
    np.testing.assert_array_equal(compiled(torch.ones(4, 2)).numpy(), np.full((4, 2), 2.0))
