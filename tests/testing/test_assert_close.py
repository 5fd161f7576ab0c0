"""assert_close: pass/raise, exception types and full messages, pinned to PyTorch's.

Each case builds its inputs from a module `m` (nbtorch, or torch when importable), so
the same table checks nbtorch and, where PyTorch is installed, that the expected
outcomes really are PyTorch's.
"""
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch.testing import assert_close, assert_allclose

NAN, INF = float("nan"), float("inf")

# (id, inputs(m) -> (actual, expected, kwargs), expected exception or None, message)
CASES = [
    ("equal", lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0 + 1e-6]), {}), None, None),
    ("int_not_equal", lambda m: (m.tensor([1, 2, 3]), m.tensor([1, 5, 4]), {}), AssertionError,
     "Tensor-likes are not equal!\n\nMismatched elements: 2 / 3 (66.7%)\n"
     "Greatest absolute difference: 3 at index (1,)\n"
     "Greatest relative difference: 0.6000000238418579 at index (1,)"),
    ("int_with_tol", lambda m: (m.tensor([1, 2, 3]), m.tensor([1, 5, 4]),
                                dict(rtol=0, atol=1)), AssertionError,
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
     "Greatest absolute difference: 3 at index (1,) (up to 1 allowed)\n"
     "Greatest relative difference: 0.6000000238418579 at index (1,) (up to 0 allowed)"),
    ("int8_wraps_to_int64", lambda m: (m.tensor([1, 2], dtype=m.int8),
                                       m.tensor([100, -100], dtype=m.int8), {}),
     AssertionError, "Tensor-likes are not equal!\n\nMismatched elements: 2 / 2 (100.0%)\n"
     "Greatest absolute difference: 102 at index (1,)\n"
     "Greatest relative difference: 1.0199999809265137 at index (1,)"),
    ("bool", lambda m: (m.tensor([True, False]), m.tensor([True, True]), {}), AssertionError,
     "Tensor-likes are not equal!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 1 at index (1,)\n"
     "Greatest relative difference: 1.0 at index (1,)"),
    ("only_rtol", lambda m: (m.tensor([1.0]), m.tensor([1.0]), dict(rtol=1e-3)), ValueError,
     "Both 'rtol' and 'atol' must be either specified or omitted, but got no atol."),
    ("only_atol", lambda m: (1.0, 1.0, dict(atol=1e-3)), ValueError,
     "Both 'rtol' and 'atol' must be either specified or omitted, but got no rtol."),
    ("sequence_path", lambda m: ([m.tensor(1.0)], [m.tensor(2.0)], {}), AssertionError,
     "Scalars are not close!\n\nExpected 2.0 but got 1.0.\n"
     "Absolute difference: 1.0 (up to 1e-05 allowed)\n"
     "Relative difference: 0.5 (up to 1.3e-06 allowed)\n\nThe failure occurred for item [0]"),
    ("mapping_path", lambda m: ({"a": [1, 2.0]}, {"a": [1, 2.5]}, {}), AssertionError,
     "Scalars are not close!\n\nExpected 2.5 but got 2.0.\n"
     "Absolute difference: 0.5 (up to 1e-07 allowed)\n"
     "Relative difference: 0.2 (up to 1e-07 allowed)\n\nThe failure occurred for item ['a'][1]"),
    ("numpy", lambda m: (np.array([1.0, 2.0]), np.array([1.0, 3.0]), {}), AssertionError,
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 1.0 at index (1,) (up to 1e-07 allowed)\n"
     "Greatest relative difference: 0.3333333333333333 at index (1,) (up to 1e-07 allowed)"),
    ("numpy_complex", lambda m: (np.array([1 + 1j]), np.array([1 + 2j]), {}), AssertionError,
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 1 (100.0%)\n"
     "Greatest absolute difference: 1.0 at index (0,) (up to 1e-07 allowed)\n"
     "Greatest relative difference: 0.4472135954999579 at index (0,) (up to 1e-07 allowed)"),
    ("numpy_vs_tensor", lambda m: (np.array([1.0]), m.tensor([1.0]), {}), TypeError,
     "No comparison pair was able to handle inputs of type <class 'numpy.ndarray'> and "
     "<class 'TENSOR'>."),
    ("number_types", lambda m: (1.0, 1, {}), AssertionError,
     "The (d)types do not match: <class 'float'> != <class 'int'>."),
    ("number_types_unchecked", lambda m: (1.0, 1, dict(check_dtype=False)), None, None),
    ("numpy_scalar", lambda m: (np.float32(1.0), 1.0, {}), None, None),
    ("floats", lambda m: (1.0, 1.1, {}), AssertionError,
     "Scalars are not close!\n\nExpected 1.1 but got 1.0.\n"
     "Absolute difference: 0.10000000000000009 (up to 1e-07 allowed)\n"
     "Relative difference: 0.09090909090909098 (up to 1e-07 allowed)"),
    ("ints", lambda m: (1, 2, {}), AssertionError,
     "Scalars are not equal!\n\nExpected 2 but got 1.\nAbsolute difference: 1\n"
     "Relative difference: 0.5"),
    ("nan_0d", lambda m: (m.tensor(NAN), m.tensor(NAN), {}), AssertionError,
     "Scalars are not close!\n\nExpected nan but got nan.\n"
     "Absolute difference: nan (up to 1e-05 allowed)\n"
     "Relative difference: nan (up to 1.3e-06 allowed)"),
    ("nan_equal", lambda m: (m.tensor([1.0, NAN]), m.tensor([1.0, NAN]),
                             dict(equal_nan=True)), None, None),
    ("inf_equal", lambda m: (m.tensor([1.0, INF, -INF]), m.tensor([1.0, INF, -INF]), {}),
     None, None),
    ("uint8_error_without_wraparound", lambda m: (m.tensor([49], dtype=m.uint8),
                                                   m.tensor([58], dtype=m.uint8),
                                                   dict(rtol=0.5, atol=2.0)), None, None),
    ("int64_error_in_default_dtype", lambda m: (m.tensor([16777216]), m.tensor([16777217]),
                                                dict(rtol=0.0, atol=0.5)), None, None),
    ("inf_vs_large", lambda m: (m.tensor([INF]), m.tensor([1e38]), dict(rtol=1.0, atol=1.0)),
     AssertionError, "Tensor-likes are not close!\n\nMismatched elements: 1 / 1 (100.0%)\n"
     "Greatest absolute difference: inf at index (0,) (up to 1.0 allowed)\n"
     "Greatest relative difference: inf at index (0,) (up to 1.0 allowed)"),
    ("nan_in_1d", lambda m: (m.tensor([1.0, NAN]), m.tensor([1.0, 2.0]), {}), AssertionError,
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: nan at index (1,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: nan at index (1,) (up to 1.3e-06 allowed)"),
    ("dtype", lambda m: (m.tensor([1.0]), m.tensor([1.0], dtype=m.float64), {}),
     AssertionError, "The values for attribute 'dtype' do not match: torch.float32 != "
     "torch.float64."),
    ("dtype_unchecked", lambda m: (m.tensor([1.0]), m.tensor([1.0], dtype=m.float64),
                                   dict(check_dtype=False)), None, None),
    ("dtype_unchecked_promoted", lambda m: (m.tensor([1, 2]), m.tensor([1.0, 2.5]),
                                            dict(check_dtype=False)), AssertionError,
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.20000000298023224 at index (1,) (up to 1.3e-06 allowed)"),
    ("stride", lambda m: (m.ones(2, 3), m.ones(3, 2).t(), dict(check_stride=True)),
     AssertionError, "The values for attribute 'stride()' do not match: (3, 1) != (1, 2)."),
    ("stride_unchecked", lambda m: (m.ones(2, 3), m.ones(3, 2).t(), {}), None, None),
    ("shape", lambda m: (m.ones(2, 3), m.ones(3, 2), {}), AssertionError,
     "The values for attribute 'shape' do not match: torch.Size([2, 3]) != "
     "torch.Size([3, 2])."),
    ("strings", lambda m: ("a", "a", {}), TypeError,
     "No comparison pair was able to handle inputs of type <class 'str'> and <class 'str'>."),
    ("none", lambda m: (None, 1, {}), AssertionError, "None mismatch: None is not 1"),
    ("none_none", lambda m: (None, None, {}), None, None),
    ("lengths", lambda m: ([1, 2], [1, 2, 3], {}), AssertionError,
     "The length of the sequences mismatch: 2 != 3"),
    ("keys", lambda m: ({"a": 1}, {"b": 1}, {}), AssertionError,
     "The keys of the mappings do not match:\nMissing keys in the actual mapping: ['b']\n"
     "Additional keys in the actual mapping: ['a']"),
    ("zero_expected", lambda m: (m.tensor([0.0, 1.0]), m.tensor([1.0, 1.0]), {}),
     AssertionError, "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 1.0 at index (0,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 1.0 at index (0,) (up to 1.3e-06 allowed)"),
    ("int_over_zero", lambda m: (m.tensor([3]), m.tensor([0]), {}), AssertionError,
     "Tensor-likes are not equal!\n\nMismatched elements: 1 / 1 (100.0%)\n"
     "Greatest absolute difference: 3 at index (0,)\n"
     "Greatest relative difference: inf at index (0,)"),
    ("float16", lambda m: (m.tensor([1.0, 2.0], dtype=m.float16),
                           m.tensor([1.1, 2.0], dtype=m.float16), {}), AssertionError,
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 0.099609375 at index (0,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.090576171875 at index (0,) (up to 0.001 allowed)"),
    ("bfloat16", lambda m: (m.tensor([1.0, 2.0], dtype=m.bfloat16),
                            m.tensor([1.1, 2.0], dtype=m.bfloat16), {}), AssertionError,
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 2 (50.0%)\n"
     "Greatest absolute difference: 0.1015625 at index (0,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.09228515625 at index (0,) (up to 0.016 allowed)"),
    ("bfloat16_within_default", lambda m: (m.tensor([100.0], dtype=m.bfloat16),
                                           m.tensor([101.0], dtype=m.bfloat16), {}), None, None),
    ("2d_index", lambda m: (m.tensor([[1.0, 2.0], [3.0, 4.0]]), m.tensor([[1.0, 2.0], [3.0, 5.0]]),
                            {}), AssertionError,
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 4 (25.0%)\n"
     "Greatest absolute difference: 1.0 at index (1, 1) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.20000000298023224 at index (1, 1) (up to 1.3e-06 allowed)"),
    ("msg", lambda m: (m.tensor([1.0]), m.tensor([2.0]), dict(msg="custom")), AssertionError,
     "custom"),
    ("msg_callable", lambda m: (m.tensor([1]), m.tensor([2]), dict(msg=lambda s: "H\n" + s)),
     AssertionError, "H\nTensor-likes are not equal!\n\nMismatched elements: 1 / 1 (100.0%)\n"
     "Greatest absolute difference: 1 at index (0,)\nGreatest relative difference: 0.5 at "
     "index (0,)"),
    ("msg_not_for_structure", lambda m: ([1], [1, 2], dict(msg="custom")), AssertionError,
     "The length of the sequences mismatch: 1 != 2"),
    ("bool_0d", lambda m: (m.tensor(True), m.tensor(False), {}), AssertionError,
     "Scalars are not equal!\n\nExpected False but got True.\nAbsolute difference: 1\n"
     "Relative difference: inf"),
    ("booleans", lambda m: (True, False, {}), AssertionError,
     "Booleans mismatch: True is not False"),
    ("empty", lambda m: (m.tensor([]), m.tensor([]), {}), None, None),
    ("subclass", lambda m: (m.nn.Parameter(m.ones(2)), m.ones(2), {}), None, None),
    ("subclass_refused", lambda m: (m.nn.Parameter(m.ones(2)), m.ones(2),
                                    dict(allow_subclasses=False)), TypeError,
     "No comparison pair was able to handle inputs of type <class 'PARAMETER'> and "
     "<class 'TENSOR'>."),
    ("user_tolerance", lambda m: (m.tensor([1.0, 2.0]), m.tensor([1.05, 2.0]),
                                  dict(rtol=0.0, atol=0.1)), None, None),
    ("requires_grad", lambda m: (m.ones(2, requires_grad=True), m.ones(2), {}), None, None),
    ("tuple_vs_list", lambda m: ((1, 2), [1, 2], {}), None, None),
    ("first_failure_wins", lambda m: ([m.tensor([1.0]), m.tensor([1])],
                                      [m.tensor([2.0]), m.tensor([1.0])], {}), AssertionError,
     "Tensor-likes are not close!\n\nMismatched elements: 1 / 1 (100.0%)\n"
     "Greatest absolute difference: 1.0 at index (0,) (up to 1e-05 allowed)\n"
     "Greatest relative difference: 0.5 at index (0,) (up to 1.3e-06 allowed)\n\n"
     "The failure occurred for item [0]"),
    ("pairing_before_comparing", lambda m: ([m.tensor([1.0]), "a"], [m.tensor([2.0]), "a"], {}),
     TypeError, "No comparison pair was able to handle inputs of type <class 'str'> and "
     "<class 'str'>.\n\nThe failure occurred for item [1]"),
]

_NAMES = {"nbtorch": {"TENSOR": "nbtorch._tensor.Tensor",
                      "PARAMETER": "nbtorch.nn.parameter.Parameter"},
          "torch": {"TENSOR": "torch.Tensor", "PARAMETER": "torch.nn.parameter.Parameter"}}


def _outcome(module, build):
    actual, expected, kwargs = build(module)
    try:
        module.testing.assert_close(actual, expected, **kwargs)
    except Exception as error:
        return type(error), str(error)
    return None, None


def _expected(module_name, error, message):
    if message is not None:
        for key, value in _NAMES[module_name].items():
            message = message.replace(key, value)
    return error, message


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_nbtorch(case):
    _, build, error, message = case
    assert _outcome(nbtorch, build) == _expected("nbtorch", error, message)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_table_is_pytorchs(case):
    torch = pytest.importorskip("torch")
    _, build, error, message = case
    assert _outcome(torch, build) == _expected("torch", error, message)


def test_lazy_attribute():
    import nbtorch as torch
    assert torch.testing.assert_close is assert_close


@pytest.mark.parametrize("dtype,rtol,atol", [
    ("float16", 1e-3, 1e-5), ("bfloat16", 0.016, 1e-5), ("float32", 1.3e-6, 1e-5),
    ("float64", 1e-7, 1e-7)])
def test_default_tolerances_per_dtype(dtype, rtol, atol):
    dtype = getattr(nbtorch, dtype)
    with pytest.raises(AssertionError) as info:
        assert_close(nbtorch.tensor([1.0, 2.0], dtype=dtype), nbtorch.tensor([1.0, 3.0], dtype=dtype))
    assert f"(up to {atol} allowed)" in str(info.value)
    assert f"(up to {rtol} allowed)" in str(info.value)
    # within the defaults: half an allowance off passes
    x = nbtorch.tensor([64.0], dtype=dtype)
    assert_close(x + float(64.0 * rtol * 0.5), x)


def test_integers_compare_exactly_and_loosest_default_wins():
    with pytest.raises(AssertionError, match="not equal"):
        assert_close(nbtorch.tensor([1], dtype=nbtorch.uint8), nbtorch.tensor([2], dtype=nbtorch.uint8))
    with pytest.raises(AssertionError, match=r"up to 1e-05 allowed\)\n.*up to 1.3e-06"):
        assert_close(nbtorch.tensor([1.0]), nbtorch.tensor([2.0], dtype=nbtorch.float64),
                     check_dtype=False)


def test_noncontiguous_and_views():
    base = nbtorch.arange(12.0).reshape(3, 4)
    assert_close(base[:, 1::2], nbtorch.tensor([[1.0, 3.0], [5.0, 7.0], [9.0, 11.0]]))
    with pytest.raises(AssertionError, match=r"index \(2, 1\)"):
        assert_close(base.t()[1::2].t(), nbtorch.tensor([[1.0, 3.0], [5.0, 7.0], [9.0, 12.0]]))


def test_assert_allclose_is_deprecated_and_loose():
    with pytest.warns(FutureWarning, match="assert_close"):
        assert_allclose(nbtorch.tensor([1.0, float("nan")]), [1.00001, float("nan")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        with pytest.raises(AssertionError, match="not close"):
            assert_allclose(nbtorch.tensor([1.0]), [1.1])
