"""fuse_modules: merge conv-bn(-relu), conv-relu, linear(-bn)-relu into one module before
quantization, as PyTorch's eager-mode fuser.

BatchNorm is folded into the preceding convolution or linear layer (eval mode only:
the running statistics become part of the weight and bias)::

    w' = w * gamma / sqrt(var + eps)        b' = (b - mean) * gamma / sqrt(var + eps) + beta

A ReLU is kept beside its layer in a fused module (`nn.intrinsic`), which quantizes into
one kernel whose requantization clamps at the zero point. The fused group's first
module is replaced by the fused one and the others by ``nn.Identity``.
"""
import copy

import nbtorch
from nbtorch import nn
from nbtorch.ao.nn import intrinsic as nni

__all__ = ["fuse_modules", "fuse_modules_qat", "fuse_known_modules", "fuse_conv_bn_eval",
           "fuse_linear_bn_eval", "get_fuser_method", "fuse_conv_bn", "fuse_conv_bn_relu",
           "fuse_linear_bn"]


def _fold_bn(weight, bias, bn):
    """(w', b') with `bn`'s running statistics folded into (weight, bias)."""
    with nbtorch.no_grad():
        rsqrt = nbtorch.rsqrt(bn.running_var + bn.eps)
        gamma = bn.weight if bn.weight is not None else nbtorch.ones_like(rsqrt)
        beta = bn.bias if bn.bias is not None else nbtorch.zeros_like(rsqrt)
        b = bias if bias is not None else nbtorch.zeros_like(bn.running_mean)
        shape = (-1,) + (1,) * (weight.dim() - 1)
        w_new = weight * (gamma * rsqrt).reshape(shape)
        b_new = (b - bn.running_mean) * rsqrt * gamma + beta
    return nn.Parameter(w_new.detach()), nn.Parameter(b_new.detach())


def fuse_conv_bn_eval(conv, bn):
    """A copy of `conv` with `bn` folded in (both in eval mode)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = _fold_bn(fused.weight, fused.bias, bn)
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` with a BatchNorm1d folded in (eval mode)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features:
        raise AssertionError("To fuse, linear.out_features must equal "
                             "bn.num_features")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = _fold_bn(fused.weight, fused.bias, bn)
    return fused


def _conv_bn(is_qat, conv, bn):
    return nni.ConvBn2d(conv, bn) if is_qat else fuse_conv_bn_eval(conv, bn)


def _conv_bn_relu(is_qat, conv, bn, relu):
    if is_qat:
        return nni.ConvBnReLU2d(conv, bn, relu)
    return nni.ConvReLU2d(fuse_conv_bn_eval(conv, bn), relu)


def _linear_bn(is_qat, linear, bn):
    if is_qat:
        raise NotImplementedError("fuse_modules_qat: Linear + BatchNorm1d is not "
                                  "implemented in nbtorch")
    return fuse_linear_bn_eval(linear, bn)


def _conv1d_bn(is_qat, conv, bn, relu=None):
    if is_qat:
        raise NotImplementedError("fuse_modules_qat: Conv1d + BatchNorm1d is not "
                                  "implemented in nbtorch")
    fused = fuse_conv_bn_eval(conv, bn)
    return fused if relu is None else nni.ConvReLU1d(fused, relu)


_FUSERS = {
    (nn.Conv1d, nn.BatchNorm1d): _conv1d_bn,
    (nn.Conv1d, nn.BatchNorm1d, nn.ReLU): _conv1d_bn,
    (nn.Conv1d, nn.ReLU): lambda is_qat, c, r: nni.ConvReLU1d(c, r),
    (nn.Conv2d, nn.BatchNorm2d): _conv_bn,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): _conv_bn_relu,
    (nn.Conv2d, nn.ReLU): lambda is_qat, c, r: nni.ConvReLU2d(c, r),
    (nn.Linear, nn.ReLU): lambda is_qat, lin, r: nni.LinearReLU(lin, r),
    (nn.Linear, nn.BatchNorm1d): _linear_bn,
    (nn.BatchNorm2d, nn.ReLU): lambda is_qat, bn, r: nni.BNReLU2d(bn, r),
}


fuse_conv_bn, fuse_conv_bn_relu, fuse_linear_bn = _conv_bn, _conv_bn_relu, _linear_bn


def get_fuser_method(op_list):
    """The fuser for a tuple of module types, or None."""
    return _FUSERS.get(tuple(op_list))


def fuse_known_modules(mod_list, is_qat=False, additional_fuser_method_mapping=None):
    """[fused, Identity, ...] for a list of modules of a known pattern."""
    types = tuple(type(m) for m in mod_list)
    fuser = (additional_fuser_method_mapping or {}).get(types) or get_fuser_method(types)
    if fuser is None:
        raise NotImplementedError(f"Cannot fuse modules: {types}")
    fused = fuser(is_qat, *mod_list)
    for hook in mod_list[0]._forward_pre_hooks.values() if hasattr(
            mod_list[0], "_forward_pre_hooks") else ():
        fused.register_forward_pre_hook(hook)
    rest = []
    for m in mod_list[1:]:
        ident = nn.Identity()
        ident.training = mod_list[0].training
        rest.append(ident)
    return [fused] + rest


def _get(model, name):
    for part in name.split("."):
        model = model[int(part)] if part.isdigit() and isinstance(model, nn.Sequential) \
            else getattr(model, part)
    return model


def _set(model, name, value):
    *parents, last = name.split(".")
    for part in parents:
        model = getattr(model, part)
    setattr(model, last, value)


def _fuse(model, modules_to_fuse, is_qat, inplace, fuser_func):
    if not inplace:
        model = copy.deepcopy(model)
    groups = modules_to_fuse
    if all(isinstance(n, str) for n in groups):
        groups = [groups]
    for names in groups:
        mods = [_get(model, n) for n in names]
        for name, new in zip(names, fuser_func(mods, is_qat)):
            _set(model, name, new)
    return model


def fuse_modules(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                 fuse_custom_config_dict=None):
    """Fuse each named group (``[["conv1", "bn1", "relu1"], ["fc", "relu"]]``) of an
    eval-mode model; returns the fused model (a copy unless `inplace`)."""
    return _fuse(model, modules_to_fuse, False, inplace, fuser_func)


def fuse_modules_qat(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                     fuse_custom_config_dict=None):
    """`fuse_modules` for quantization-aware training (BatchNorm is not folded)."""
    return _fuse(model, modules_to_fuse, True, inplace, fuser_func)
