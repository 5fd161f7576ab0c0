"""`nn.grad`: gradients of convolutions with respect to their input or weight, as
functions (PyTorch's conv{1,2,3}d_input / conv{1,2,3}d_weight).

Each runs the convolution on a zero tensor of the requested size and asks autograd for
the vector-Jacobian product with `grad_output` (a convolution is linear in each
argument, so the zeros change nothing); the gradients are the convolution backward
kernels' own.
"""
from .. import autograd
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]


def _vjp(conv, x, w, wrt, grad_output, stride, padding, dilation, groups):
    from .. import enable_grad
    with enable_grad():
        x = x.detach().requires_grad_(wrt == 0)
        w = w.detach().requires_grad_(wrt == 1)
        out = conv(x, w, None, stride, padding, dilation, groups)
        return autograd.grad(out, (x, w)[wrt], grad_output)[0]


def _input_fn(conv):
    def fn(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
        from .. import zeros
        x = zeros(*input_size, dtype=weight.dtype, device=weight.device)
        return _vjp(conv, x, weight, 0, grad_output, stride, padding, dilation, groups)
    fn.__name__ = f"{conv.__name__}_input"
    fn.__doc__ = (f"Gradient of {conv.__name__} with respect to an input of `input_size`, "
                  f"for `weight` and `grad_output`.")
    return fn


def _weight_fn(conv):
    def fn(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
        from .. import zeros
        w = zeros(*weight_size, dtype=input.dtype, device=input.device)
        return _vjp(conv, input, w, 1, grad_output, stride, padding, dilation, groups)
    fn.__name__ = f"{conv.__name__}_weight"
    fn.__doc__ = (f"Gradient of {conv.__name__} with respect to a weight of `weight_size`, "
                  f"for `input` and `grad_output`.")
    return fn


conv1d_input, conv1d_weight = _input_fn(F.conv1d), _weight_fn(F.conv1d)
conv2d_input, conv2d_weight = _input_fn(F.conv2d), _weight_fn(F.conv2d)
conv3d_input, conv3d_weight = _input_fn(F.conv3d), _weight_fn(F.conv3d)
