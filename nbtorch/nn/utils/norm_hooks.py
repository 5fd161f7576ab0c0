"""The legacy, hook-based `nn.utils.weight_norm` and `nn.utils.spectral_norm` (and their
`remove_*`), as PyTorch keeps them for old programs and checkpoints.

A forward pre-hook recomputes ``module.<name>`` from the stored parameters before each
call: weight_norm from ``<name>_g`` and ``<name>_v`` (w = g v / ||v||), spectral_norm
from ``<name>_orig`` divided by sigma, estimated by power iteration on the buffers
``<name>_u``/``<name>_v`` (one step per training-mode call). The parametrization
versions (`nn.utils.parametrizations`) are the current API.
"""
import warnings

from .. import functional as F
from ..parameter import Parameter
from .parametrizations import norm_except_dim

__all__ = ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm"]


class WeightNorm:
    """The forward pre-hook of the legacy weight_norm."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, 2, self.dim))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))

    def remove(self, module):
        from ... import no_grad
        with no_grad():
            weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))


def weight_norm(module, name="weight", dim=0):
    """Deprecated: reparametrize ``module.<name>`` as g * v / ||v|| with a forward pre-hook
    (use `nn.utils.parametrizations.weight_norm`)."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, WeightNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter "
                               f"{name}")
    fn = WeightNorm(name, dim)
    weight = getattr(module, name)
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def _find_hook(module, cls, name, label):
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, cls) and hook.name == name:
            return key, hook
    raise ValueError(f"{label} of '{name}' not found in {module}")


def remove_weight_norm(module, name="weight"):
    """Undo the legacy weight_norm: ``<name>`` becomes a parameter holding g v / ||v||."""
    key, hook = _find_hook(module, WeightNorm, name, "weight_norm")
    hook.remove(module)
    del module._forward_pre_hooks[key]
    return module


class SpectralNorm:
    """The forward pre-hook of the legacy spectral_norm."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.eps = name, dim, eps
        self.n_power_iterations = n_power_iterations

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        from ... import no_grad
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                m = mat.detach()
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(m.t().mv(u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(m.mv(v), dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        sigma = u.dot(mat.mv(v))
        return weight / sigma

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, module.training))

    def remove(self, module):
        from ... import no_grad
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Legacy spectral normalisation with a forward pre-hook (the current API is
    `nn.utils.parametrizations.spectral_norm`)."""
    from ... import no_grad
    from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) \
            else 0
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                               f"parameter {name}")
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = module._parameters[name]
    with no_grad():
        mat = fn.reshape_weight_to_matrix(weight)
        h, w = mat.shape
        u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=eps)
        v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    object.__setattr__(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo the legacy spectral_norm: ``<name>`` becomes a parameter holding w / sigma."""
    key, hook = _find_hook(module, SpectralNorm, name, "spectral_norm")
    hook.remove(module)
    del module._forward_pre_hooks[key]
    return module
