"""`torch.autograd.functional`: Jacobians, Hessians and vector products of functions.

Everything runs on the tape: a vector-Jacobian product is one backward pass; a
Jacobian-vector product is the double-backward trick (the vjp ``g(u) = J^T u`` is
linear in `u`, so ``J v = d<g(u), v>/du``), which needs every op's backward to be
differentiable (nbtorch's formulas are written with ops, so it is). A Jacobian takes
one backward pass per output element; ``vectorize`` is accepted and changes nothing.

Example:
    >>> jacobian(lambda x: x ** 2, nbtorch.tensor([1.0, 2.0]))
    tensor([[2., 0.],
            [0., 4.]])
"""
from .._tensor import Tensor
from . import grad_mode
from .engine import grad as _grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(inp, arg_name, fn_name):
    """(was it a tuple, the tensors as a tuple), checking every element is a Tensor."""
    is_tuple = isinstance(inp, (tuple, list))
    items = tuple(inp) if is_tuple else (inp,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor "
                                f"or a tuple of Tensors but the value at index {i} has type "
                                f"{type(el)}.")
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or "
                            f"a tuple of Tensors but the given {arg_name} has type "
                            f"{type(el)}.")
    return is_tuple, items


def _outputs(out, fn_name):
    try:
        return _as_tuple(out, "outputs of the user-provided function", fn_name)
    except TypeError:
        raise TypeError(f"The outputs of the user-provided function given to {fn_name} must "
                        f"be either a Tensor or a tuple of Tensors but the given outputs of "
                        f"the user-provided function has type {type(out)}.") from None


def _prepare(inputs, create_graph, need_graph=True):
    """Inputs the function sees: attached to the caller's graph when `create_graph` and
    the input needs grad, otherwise fresh leaves."""
    res = []
    for x in inputs:
        if create_graph and x.requires_grad:
            res.append(x.view_as(x))
        else:
            d = x.detach()
            if need_graph and d.dtype.is_floating_point:
                d.requires_grad_(True)
            res.append(d)
    return tuple(res)


def _post(x, create_graph):
    if isinstance(x, tuple):
        return tuple(_post(e, create_graph) for e in x)
    if x is None or create_graph:
        return x
    return x.detach()


def _tuple_back(x, is_tuple):
    return x if is_tuple else x[0]


def _validate_v(v, other, is_other_tuple):
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but "
                               f"got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = f"Entry {i} in " if is_other_tuple else ""
            raise RuntimeError(f"{prepend}v has invalid size: should be {el_other.shape} "
                               f"but got {el_v.shape}.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False):
    """autograd.grad over the outputs that require grad; None where an input is unused."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    diff_inputs = [i for i, x in enumerate(inputs) if x.requires_grad]
    if not pairs or not diff_inputs:
        return (None,) * len(inputs)
    got = _grad([o for o, _ in pairs], [inputs[i] for i in diff_inputs],
                [g for _, g in pairs], create_graph=create_graph, retain_graph=True,
                allow_unused=True)
    res = [None] * len(inputs)
    for i, g in zip(diff_inputs, got):
        res[i] = g
    return tuple(res)


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    res = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                if stage == "back":
                    raise RuntimeError("The output of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in "
                                       "strict mode.")
                if stage == "back_trick":
                    raise RuntimeError(f"The gradient with respect to the input is "
                                       f"independent of entry {i} in the grad_outputs when "
                                       "using the double backward trick to compute forward "
                                       "mode gradients. This is not allowed in strict mode.")
                if stage == "double_back":
                    raise RuntimeError(f"The jacobian of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in "
                                       "strict mode.")
                raise RuntimeError(f"The hessian of the user-provided function is independent "
                                   f"of entry {i} in the grad_jacobian. This is not allowed "
                                   "in strict mode as it prevents from using the double "
                                   "backward trick to replace forward mode AD.")
            from ..ops.creation import zeros_like
            g = zeros_like(ref)
        res.append(g)
    return tuple(res)


def _check_requires_grad(outputs, what, strict):
    if not strict:
        return
    for i, out in enumerate(outputs):
        if out is None or not out.requires_grad:
            if what == "outputs":
                raise RuntimeError(f"Output {i} of the user-provided function does not "
                                   "require gradients. The outputs must be computed in a "
                                   "differentiable manner from the input when running in "
                                   "strict mode.")
            raise RuntimeError(f"The jacobian of the user-provided function with respect to "
                               f"input {i} is independent of the input. This is not allowed "
                               "in strict mode.")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at `inputs`."""
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _outputs(outputs, "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _prepare(v, create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
        grads = _autograd_grad(outputs, inputs, v, create_graph)
        vjp_ = _fill_in_zeros(grads, inputs, strict, create_graph, "back")
    return (_tuple_back(_post(outputs, create_graph), is_outputs_tuple),
            _tuple_back(_post(vjp_, create_graph), is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-backward trick."""
    from ..ops.creation import ones_like
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _prepare(v, create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               "element.")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _outputs(outputs, "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # the dummy cotangents of the double-backward trick: ones, not PyTorch's zeros (the
        # backward is linear in them, but formulas that take their logarithm, as
        # logcumsumexp's does, give NaN at 0: PyTorch's jvp of logcumsumexp is NaN)
        u = tuple(ones_like(o).requires_grad_(True) for o in outputs)
        grad_res = _autograd_grad(outputs, inputs, u, create_graph=True)
        _check_requires_grad(grad_res, "grad_inputs", strict)
        grad_outputs = _autograd_grad(grad_res, u, v, create_graph=create_graph)
        jvp_ = _fill_in_zeros(grad_outputs, outputs, strict, create_graph, "back_trick")
    return (_tuple_back(_post(outputs, create_graph), is_outputs_tuple),
            _tuple_back(_post(jvp_, create_graph), is_outputs_tuple))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """d func(inputs) / d inputs: for output i and input j a tensor of shape
    ``outputs[i].shape + inputs[j].shape`` (nested tuples as the arguments were)."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                         'Hint: If your function has more outputs than inputs, "forward-mode" '
                         'tends to be more performant. Otherwise, prefer to use '
                         '"reverse-mode".')
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("torch.autograd.functional.jacobian: `strategy=\"forward-"
                                  "mode\"` requires `vectorize=True`.")
    if strategy == "forward-mode" and create_graph:
        raise NotImplementedError("torch.autograd.functional.jacobian: `create_graph=True` "
                                  "and `strategy=\"forward-mode\"` are not supported together "
                                  "(yet). Please either set `create_graph=False` or "
                                  "`strategy=\"reverse-mode\"`.")
    from ..ops.creation import zeros
    from ..ops.joining import stack
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _outputs(outputs, "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        jac = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = out.reshape(-1)
            for j in range(flat.numel()):
                gs = _autograd_grad((flat[j],), inputs, create_graph=create_graph)
                for k, (g, x) in enumerate(zip(gs, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is "
                                               f"independent of input {k}. This is not "
                                               "allowed in strict mode.")
                        g = zeros(x.shape, dtype=x.dtype, device=x.device)
                    rows[k].append(g)
            per_input = []
            for k, x in enumerate(inputs):
                if rows[k]:
                    block = stack(rows[k]).reshape(tuple(out.shape) + tuple(x.shape))
                else:                           # an empty output
                    block = zeros(tuple(out.shape) + tuple(x.shape), dtype=x.dtype,
                                  device=x.device)
                per_input.append(_post(block, create_graph))
            jac.append(_tuple_back(tuple(per_input), is_inputs_tuple))
    return _tuple_back(tuple(jac), is_outputs_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of scalar-valued `func` at `inputs` (``inputs[i].shape +
    inputs[j].shape`` blocks, nested tuples for several inputs)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def ensure_single_output(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _outputs(out, "hessian")
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)
        return jacobian(ensure_single_output, inp, create_graph=True)

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return res if is_inputs_tuple else res[0][0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for scalar-valued `func`."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for scalar-valued `func` (H is symmetric: the same as vhp)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph, strict, name):
    with grad_mode.enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
        inputs = _prepare(inputs, create_graph)
        if v is not None:
            _, v = _as_tuple(v, "v", name)
            v = _prepare(v, create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the "
                               "user-provided function is a single Tensor with a single "
                               "element.")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _outputs(outputs, name)
        if is_outputs_tuple or not isinstance(outputs[0], Tensor):
            raise RuntimeError(f"The function given to {name} should return a single Tensor")
        if outputs[0].numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {name} should "
                               "contain a single element")
        _check_requires_grad(outputs, "outputs", strict)
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        res = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    return (_post(outputs[0], create_graph),
            _tuple_back(_post(res, create_graph), is_inputs_tuple))
