"""The one op-test harness (STYLE item 10): forward vs NumPy over dtypes and layouts,
gradients by finite differences in float64, on any device.

    def test_exp(device):
        check_op(nb_fn, np_fn, (3, 4), (3, 4), dtypes=FLOATS, grad=True, device=device)

A test written once runs on every device: its `device` argument is the
fixture of tests/conftest.py ("cpu" in the main pytest process, "cuda" in the
CUDA-simulator process, which collects only such tests outside tests/cuda).

Each positional input after the two functions is a *shape* (a tuple: random
values are generated), a NumPy array (fixed values; its shape is the base
shape) or a Python number (passed unchanged to both functions). For every
dtype and every layout the tensor inputs are rebuilt and both functions run:

- "contiguous": the given shapes;
- "noncontig":  the same values in non-contiguous tensors (every other
  element of a wider buffer), so kernels see real strides;
- "broadcast":  inputs get trailing-aligned broadcastable shapes derived from
  the first input's shape (dims set to 1 in a rotating pattern, plus a new
  leading dim on the first input);
- "0d":         every tensor input 0-d;
- "empty":      a zero-sized first dim.

Values are compared after casting both results to float64 (NaNs must match).
`grad=True` runs `nbtorch.autograd.gradcheck` in float64 on the contiguous
and broadcast layouts; `gradgrad=True` also runs `gradgradcheck`. Use
`low`/`high` to keep inputs in an op's domain (e.g. low=0.1 for log) and
`out_dtype` to assert the result dtype (a dtype, or a function of the
inputs' dtype).
"""
import numpy as np

import nbtorch
from nbtorch.autograd import gradcheck, gradgradcheck

FLOATS = (nbtorch.float32, nbtorch.float64)
ALL_FLOATS = (nbtorch.float16, nbtorch.float32, nbtorch.float64)
INTS = (nbtorch.int64,)           # int32 etc. only where a test is about them: each dtype
                                  # is one more compiled loop per op (CI starts cold)
NUMERIC = FLOATS + INTS
LAYOUTS = ("contiguous", "noncontig", "broadcast", "0d", "empty")


def random_array(rng, shape, dtype):
    """A NumPy array of `dtype` (a name) with random values: normal floats (complex parts
    both random), integers of ten times that, bools where it is positive."""
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    if dtype == "bool":
        return a > 0
    return (a * 10 if dtype.startswith("int") else a).astype(dtype)


def awkward_floats(n, dtype, seed=0, specials=64):
    """n floats of NumPy `dtype`: normal values times 10 with `specials` of them (at random
    places) infinities, NaNs, signed zeros, a subnormal and the largest finite value."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(n) * 10).astype(dtype)
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, np.finfo(dtype).tiny / 4,
                        np.finfo(dtype).max], dtype)
    a[rng.integers(0, n, specials)] = special[rng.integers(0, special.size, specials)]
    return a


def tensor_bits(t):
    """(bytes in C order, shape, dtype, strides) of tensor `t`: equal for bit-identical
    results of the same layout."""
    return (t.contiguous().numpy().tobytes(), tuple(t.shape), t.dtype, t.stride())


def dtype_sweep(dtypes, keep):
    """`dtypes` for a parametrize: the first `keep` run in `make test`, the rest are marked
    slow (each dtype, or each width for kernels that move bits, compiles its own
    specialisations; `make test-all` runs the whole sweep)."""
    import pytest
    return [d if i < keep else pytest.param(d, marks=pytest.mark.slow)
            for i, d in enumerate(dtypes)]
_TOL = {"float16": (2e-3, 2e-3), "float32": (2e-5, 2e-6), "float64": (1e-10, 1e-12)}


def _values(shape, dtype, low, high, rng):
    if dtype is nbtorch.bool:
        return rng.random(shape) > 0.5
    if dtype.is_floating_point:
        return rng.uniform(low, high, shape).astype(dtype.np)
    return rng.integers(int(np.floor(low)), int(np.ceil(high)) + 1, shape).astype(dtype.np)


def _broadcast_shape(base, k):
    """Input k's shape in the broadcast layout: some dims of `base` set to 1."""
    if k == 0:
        return (2,) + tuple(base)
    shape = list(base)
    if shape:
        shape[(k - 1) % len(shape)] = 1
    return tuple(shape[k % 2:]) if len(shape) > 1 else tuple(shape)


def _layout_shape(base, layout, k):
    if layout == "broadcast":
        return _broadcast_shape(base, k)
    if layout == "0d":
        return ()
    if layout == "empty":
        return (0,) + tuple(base[1:])
    return tuple(base)


def _to_tensor(arr, dtype, noncontig, device="cpu"):
    """An nbtorch tensor holding `arr`; with `noncontig`, a strided view of a wider buffer."""
    if not noncontig or arr.ndim == 0:
        return nbtorch.tensor(arr, dtype=dtype, device=device)
    wide = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), arr.dtype)
    wide[..., ::2] = arr
    t = nbtorch.tensor(wide, dtype=dtype, device=device)[..., ::2]
    assert not t.is_contiguous() or t.numel() <= 1
    return t


def make_inputs(specs, dtype, layout, low=-2.0, high=2.0, seed=0, device="cpu"):
    """(nbtorch inputs, NumPy inputs) for one dtype and layout (see the module doc)."""
    rng = np.random.default_rng(seed)
    nb_in, np_in, k = [], [], 0
    for spec in specs:
        if isinstance(spec, (int, float, bool)):
            nb_in.append(spec)
            np_in.append(spec)
            continue
        if isinstance(spec, np.ndarray):
            arr = spec.astype(dtype.np)
            if layout == "broadcast":
                arr = np.broadcast_to(arr, (2,) + arr.shape).copy() if k == 0 else arr
            elif layout == "0d":
                arr = arr.reshape(-1)[:1].reshape(())
            elif layout == "empty" and k == 0:
                arr = arr[:0]
        else:
            arr = _values(_layout_shape(spec, layout, k), dtype, low, high, rng)
        nb_in.append(_to_tensor(arr, dtype, layout == "noncontig", device))
        np_in.append(arr)
        k += 1
    return nb_in, np_in


def assert_close(actual, expected, dtype, rtol=None, atol=None):
    """Values of tensor `actual` equal NumPy `expected` within the dtype's tolerance."""
    r, a = _TOL.get(dtype.name, (0, 0))
    got = np.asarray(actual.detach()._host(), dtype=np.float64)
    want = np.asarray(expected, dtype=np.float64)
    assert got.shape == want.shape, f"shape {got.shape} != expected {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol if rtol is not None else r,
                               atol=atol if atol is not None else a, equal_nan=True)


def check_op(nb_fn, np_fn, *specs, dtypes=FLOATS, layouts=LAYOUTS, grad=True,
             gradgrad=False, low=-2.0, high=2.0, out_dtype=None, rtol=None, atol=None,
             device="cpu"):
    """Check `nb_fn` against `np_fn` over `dtypes` x `layouts` on `device`, then its
    gradients (results must stay on the inputs' device).

    Example:
        >>> check_op(nbtorch.exp, np.exp, (3, 4), dtypes=FLOATS, grad=True, device="cpu")
    """
    for dtype in dtypes:
        for layout in layouts:
            nb_in, np_in = make_inputs(specs, dtype, layout, low, high, device=device)
            out = nb_fn(*nb_in)
            with np.errstate(all="ignore"):
                want = np_fn(*np_in)
            try:
                assert_close(out, want, dtype, rtol, atol)
                assert out.device.type == device, f"result on {out.device}, not {device}"
                if out_dtype is not None:
                    expect = out_dtype(dtype) if callable(out_dtype) else out_dtype
                    assert out.dtype is expect, f"dtype {out.dtype} != {expect}"
            except AssertionError as e:
                raise AssertionError(f"{getattr(nb_fn, '__name__', nb_fn)} [{dtype}, "
                                     f"{layout}]: {e}") from None
    if grad:
        check_grad(nb_fn, *specs, low=low, high=high, gradgrad=gradgrad, device=device)


def check_grad(nb_fn, *specs, low=-2.0, high=2.0, gradgrad=False,
               layouts=("contiguous", "broadcast"), device="cpu"):
    """gradcheck (and gradgradcheck) of `nb_fn` in float64 w.r.t. every tensor input.

    Finite differences run on the CPU, where the backward formulas (device-agnostic
    ops) are checked to every order. On another device the gradients of a weighted
    sum of the outputs must equal the CPU's (float64, same inputs): one backward
    pass that runs the device's kernels, instead of a launch per finite difference.
    """
    if device != "cpu":
        return _check_grad_against_cpu(nb_fn, specs, low, high, layouts, device)
    for layout in layouts:
        nb_in, _ = make_inputs(specs, nbtorch.float64, layout, low, high, seed=1)
        for t in nb_in:
            if isinstance(t, nbtorch.Tensor):
                t.requires_grad_()
        assert gradcheck(nb_fn, nb_in), f"gradcheck failed [{layout}]"
        if gradgrad:
            assert gradgradcheck(nb_fn, nb_in), f"gradgradcheck failed [{layout}]"


def _gradients(nb_fn, inputs, seed):
    """d/d inputs of sum_k (out_k * w_k).sum(), w_k fixed random weights (host arrays)."""
    for t in inputs:
        if isinstance(t, nbtorch.Tensor) and t.dtype.is_floating_point:
            t.requires_grad_()
    outs = nb_fn(*inputs)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    rng = np.random.default_rng(seed)
    loss = None
    for o in outs:
        if isinstance(o, nbtorch.Tensor) and o.dtype.is_floating_point:
            w = nbtorch.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype,
                               device=o.device)
            term = (o * w).sum()
            loss = term if loss is None else loss + term
    loss.backward()
    return [t.grad for t in inputs if isinstance(t, nbtorch.Tensor)]


def _check_grad_against_cpu(nb_fn, specs, low, high, layouts, device):
    for layout in layouts:
        cpu_in, _ = make_inputs(specs, nbtorch.float64, layout, low, high, seed=1)
        dev_in, _ = make_inputs(specs, nbtorch.float64, layout, low, high, seed=1,
                                device=device)
        want = _gradients(nb_fn, cpu_in, seed=2)
        got = _gradients(nb_fn, dev_in, seed=2)
        for k, (g, w) in enumerate(zip(got, want)):
            if w is None:
                assert g is None, f"input {k}: a {device} gradient where the CPU has none"
                continue
            assert g is not None and g.device.type == device, f"input {k}: no {device} grad"
            assert_close(g, w.detach()._host(), nbtorch.float64)


# ---- layers -----------------------------------------------------------------------------

LAYER_LAYOUTS = ("contiguous", "noncontig", "empty")


def _layer_input(spec, dtype, layout, low, high, seed, device):
    """One input of a layer in `layout`: the shape, its values strided, or batch 0."""
    shape = (0,) + tuple(spec[1:]) if layout == "empty" else tuple(spec)
    arr = _values(shape, dtype, low, high, np.random.default_rng(seed))
    return _to_tensor(arr, dtype, layout == "noncontig", device), arr


def check_layer(make_module, np_fn, *specs, dtypes=FLOATS, layouts=LAYER_LAYOUTS, grad=True,
                low=-2.0, high=2.0, rtol=None, atol=None, device="cpu"):
    """Check the layer `make_module()` on `device` against `np_fn(module, *arrays)` over
    `dtypes` x `layouts` (inputs: shapes, batch first), then the gradients of its inputs
    and parameters: gradcheck in float64 on the CPU, equality with the CPU's gradients
    elsewhere (one backward pass, as `check_grad`).

    Example:
        >>> check_layer(lambda: nn.Linear(4, 3), lambda m, x: x @ m.weight_np.T, (2, 4))
    """
    for dtype in dtypes:
        module = make_module().to(device=device, dtype=dtype)
        for layout in layouts:
            pairs = [_layer_input(s, dtype, layout, low, high, k, device)
                     for k, s in enumerate(specs)]
            out = module(*[t for t, _ in pairs])
            with np.errstate(all="ignore"):
                want = np_fn(module, *[a for _, a in pairs])
            try:
                assert_close(out, want, dtype, rtol, atol)
                assert out.device.type == device, f"result on {out.device}, not {device}"
            except AssertionError as e:
                raise AssertionError(f"{module!r} [{dtype}, {layout}]: {e}") from None
    if grad:
        _check_layer_grad(make_module, specs, low, high, device)


def numpy_params(module):
    """The layer's parameters as float64 NumPy arrays, by name (for references)."""
    return {n: np.asarray(p.detach()._host(), dtype=np.float64)
            for n, p in module.named_parameters()}


def _layer_as_function(module):
    """f(*inputs, *params) running `module` with `params` in place of its parameters."""
    names = [n for n, _ in module.named_parameters()]

    def f(*args):
        inputs, params = args[:len(args) - len(names)], args[len(args) - len(names):]
        saved = {}
        for name, value in zip(names, params):
            owner, attr = _owner(module, name)
            saved[name] = owner._parameters[attr]
            owner._parameters[attr] = value
        try:
            return module(*inputs)
        finally:
            for name, value in saved.items():
                owner, attr = _owner(module, name)
                owner._parameters[attr] = value
    return f, [p for _, p in module.named_parameters()]


def _owner(module, name):
    *path, attr = name.split(".")
    for p in path:
        module = getattr(module, p)
    return module, attr


def _check_layer_grad(make_module, specs, low, high, device):
    """Gradients of inputs and parameters in float64 (see check_layer)."""
    cpu = make_module().to(dtype=nbtorch.float64)
    f, params = _layer_as_function(cpu)
    inputs = [_layer_input(s, nbtorch.float64, "contiguous", low, high, 10 + k, "cpu")[0]
              for k, s in enumerate(specs)]
    args = [t.detach() for t in inputs + params]
    if device == "cpu":
        for t in args:
            if t.dtype.is_floating_point:
                t.requires_grad_()
        assert gradcheck(f, args), f"gradcheck failed for {cpu!r}"
        return
    dev = make_module().to(dtype=nbtorch.float64)
    dev.load_state_dict(cpu.state_dict())
    dev = dev.to(device)
    g, dev_params = _layer_as_function(dev)
    dev_args = [t.detach().to(device) for t in inputs] + [p.detach() for p in dev_params]
    want = _gradients(f, [t for t in args], seed=3)
    got = _gradients(g, dev_args, seed=3)
    for k, (a, b) in enumerate(zip(got, want)):
        if b is None:
            continue
        assert a is not None and a.device.type == device, f"argument {k}: no {device} grad"
        assert_close(a, b.detach()._host(), nbtorch.float64)
