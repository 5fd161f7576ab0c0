"""Lazy modules: layers whose input size is read from their first input, as PyTorch's.

A Lazy* module starts with `UninitializedParameter`/`UninitializedBuffer` placeholders
and a forward pre-hook; the first call infers the missing size (in_features,
in_channels, num_features), materialises the placeholders, runs the layer's own
`reset_parameters`, removes the hook and turns the module into the plain layer
(``cls_to_become``: a LazyLinear becomes a Linear). Loading a state dict into a lazy
module materialises it with the checkpoint's shapes.
"""
import itertools

from ..parameter_lazy import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import (BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d,
                        InstanceNorm3d, _NormBase)
from .conv import (Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
from .linear import Linear

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
           "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Shape inference on the first call (mix in before the layer class).

    Subclasses implement ``initialize_parameters(*inputs)``: set the inferred size,
    `materialize` each placeholder, then `reset_parameters()`.
    """

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def has_uninitialized_params(self):
        """True while any parameter or buffer is still a placeholder."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{self.__class__.__name__}")

    def _plain_buffers(self):
        """Materialised buffers are `Buffer`s (the in-place class change): plain Tensors."""
        for name, buf in self._buffers.items():
            if buf is not None and not is_lazy(buf) and type(buf).__name__ == "Buffer":
                self._buffers[name] = buf.detach()

    def _infer_parameters(self, module, args, kwargs=None):
        from ...autograd import no_grad
        with no_grad():
            module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._plain_buffers()
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook, module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
        """Materialise placeholders whose checkpoint entry has a shape."""
        for name, t in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if t is not None and key in state_dict and is_lazy(t) \
                    and not is_lazy(state_dict[key]):
                t.materialize(tuple(state_dict[key].shape))
        self._plain_buffers()
        self._sizes_from_parameters()

    def _sizes_from_parameters(self):
        """Set the inferred size attribute from materialised weights (after a load)."""

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if is_lazy(p) or keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if is_lazy(b) or keep_vars else b.detach()

    def _apply(self, fn, recurse=True):
        lazy = {k for k, b in self._buffers.items() if is_lazy(b)}
        out = super()._apply(fn, recurse)
        for k in lazy:            # fn gave a plain empty tensor: keep the placeholder
            b = self._buffers[k]
            self._buffers[k] = UninitializedBuffer(device=b.device, dtype=b.dtype)
        return out

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose in_features is the last dim of its first input.

    Example:
        >>> fc = nn.LazyLinear(30)
        >>> fc(torch.randn(8, 20)).shape, fc
        (torch.Size([8, 30]), Linear(in_features=20, out_features=30, bias=True))
    """

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False, device, dtype)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()

    def _sizes_from_parameters(self):
        if not is_lazy(self.weight):
            self.in_features = self.weight.shape[1]


class _LazyConvXdMixin(LazyModuleMixin):
    """in_channels from dim 1 of a batched input (dim 0 of an unbatched one)."""

    def __init__(self, out_channels, bias, device, dtype, **conv_args):
        super().__init__(0, 0, bias=False, device=device, dtype=dtype, **conv_args)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input):
        batched = self._n + 2
        if input.dim() not in (batched - 1, batched):
            raise RuntimeError(f"Expected {batched - 1}D (unbatched) or {batched}D (batched) "
                               f"input to {self.__class__.__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.dim() == batched else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _sizes_from_parameters(self):
        if not is_lazy(self.weight):
            c = self.weight.shape[0] if self.transposed else self.weight.shape[1] * self.groups
            self.in_channels = c


def _lazy_conv(name, base, transposed):
    """A LazyConv*/LazyConvTranspose* class over `base` with PyTorch's signature."""
    if transposed:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                     groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                     dtype=None):
            _LazyConvXdMixin.__init__(
                self, out_channels, bias, device, dtype, kernel_size=kernel_size,
                stride=stride, padding=padding, output_padding=output_padding, groups=groups,
                dilation=dilation, padding_mode=padding_mode)
    else:
        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                     groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
            _LazyConvXdMixin.__init__(
                self, out_channels, bias, device, dtype, kernel_size=kernel_size,
                stride=stride, padding=padding, dilation=dilation, groups=groups,
                padding_mode=padding_mode)
    doc = (f"A {base.__name__} whose in_channels is read from its first input (becomes a "
           f"{base.__name__} then).")
    return type(name, (_LazyConvXdMixin, base),
                {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                 "__module__": __name__})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d, False)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d, False)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d, False)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d, True)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d, True)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d, True)


class _LazyNormBase(LazyModuleMixin, _NormBase):
    """num_features from the channel dim of the first input."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            from ... import _dtype, tensor
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=_dtype.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def _channel_dim(self, input):
        return 1

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[self._channel_dim(input)]
            for t in (self.weight, self.bias, self.running_mean, self.running_var):
                if t is not None:
                    t.materialize((self.num_features,))
            self.reset_parameters()

    def _sizes_from_parameters(self):
        for t in (self.weight, self.running_mean):
            if t is not None and not is_lazy(t):
                self.num_features = t.shape[0]


def _lazy_norm(name, base, instance):
    body = {"cls_to_become": base, "__module__": __name__,
            "__doc__": f"A {base.__name__} whose num_features is read from its first input."}
    if instance:      # unbatched input: channels are dim 0 (PyTorch reads dim 1 regardless)
        body["_channel_dim"] = lambda self, x: 0 if x.dim() == self._spatial + 1 else 1
    return type(name, (_LazyNormBase, base), body)


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, False)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, False)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, False)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, True)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, True)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, True)
