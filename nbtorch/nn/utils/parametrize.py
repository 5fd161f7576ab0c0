"""`nn.utils.parametrize`: a module's tensor computed from an unconstrained original on
every access (``module.weight = f(original)``), as PyTorch's.

`register_parametrization(module, "weight", f)` moves the parameter to
``module.parametrizations.weight.original`` (``original0``, ``original1``... when
f's ``right_inverse`` returns several tensors), swaps the module's class for a
subclass ``Parametrized<Class>`` with a ``weight`` property that applies the chain of
parametrizations, and routes ``module.weight = value`` through their right inverses.
Inside `cached()` each parametrized tensor is computed once.
"""
import contextlib

from ..._tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache = {}


@contextlib.contextmanager
def cached():
    """Compute each parametrized tensor once inside the block (e.g. an RNN's weights
    reused at every step)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _set_original(module, name, original, value):
    """original <- value in place (keeping the Parameter object when shapes agree)."""
    from ... import no_grad
    with no_grad():
        if original.shape == value.shape and original.dtype == value.dtype:
            original.copy_(value)
        else:
            original.data = value.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and its original(s)."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        from ... import no_grad
        original_shape, original_dtype = tuple(original.shape), original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, tuple, list)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        is_param = isinstance(original, Parameter)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change "
                                 f"the dtype.\noriginal.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            _set_original(self, "original", original, new)
            self._register("original", original, is_param)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(t).__name__}.")
                t = t.detach().clone()
                if is_param:
                    t = Parameter(t, original.requires_grad)
                self._register(f"original{i}", t, is_param)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of "
                                 "the tensor, unless `unsafe` flag is enabled.\nunparametrized "
                                 f"dtype: {original_dtype}\nparametrized dtype: {z.dtype}")
            if tuple(z.shape) != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of "
                                 "the tensor, unless `unsafe` flag is enabled.\nunparametrized "
                                 f"shape: {original_shape}\nparametrized shape: "
                                 f"{tuple(z.shape)}")

    def _register(self, name, t, is_param):
        if is_param:
            self.register_parameter(name, t if isinstance(t, Parameter) else Parameter(t))
        else:
            self.register_buffer(name, t)

    def right_inverse(self, value):
        """Set the original(s) so that the chain gives `value`."""
        from ... import no_grad
        with no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _set_original(self, "original", self.original, value)
            else:
                if not isinstance(value, (list, tuple)) or len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of "
                                     f"length {self.ntensors}.")
                for i, t in enumerate(value):
                    _set_original(self, f"original{i}", getattr(self, f"original{i}"), t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module):
    """Give `module` a class of its own, Parametrized<Class>, to hold the properties."""
    cls = module.__class__

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through "
                           "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                           "saving_loading_models.html#saving-loading-a-general-checkpoint-"
                           "for-inference-and-or-resuming-training")

    def deepcopy(self, memo):
        import copy
        if id(self) in memo:
            return memo[id(self)]
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__ = copy.deepcopy(self.__dict__, memo)
        return replica

    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,),
                            {"__getstate__": getstate, "__deepcopy__": deepcopy,
                             "_type_before_parametrizations": cls})


def _inject_property(module, name):
    def get(self):
        key = (id(self), name)
        if _cache_enabled:
            if key not in _cache:
                _cache[key] = self.parametrizations[name]()
            return _cache[key]
        return self.parametrizations[name]()

    def set_(self, value):
        self.parametrizations[name].right_inverse(value)

    setattr(module.__class__, name, property(get, set_))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make ``module.<tensor_name>`` be ``parametrization(original)``; a second call on the
    same name appends to the chain. Returns the module.

    Example:
        >>> class Symmetric(nn.Module):
        ...     def forward(self, X):
        ...         return X.triu() + X.triu(1).transpose(-1, -2)
        >>> m = parametrize.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
        >>> torch.equal(m.weight, m.weight.T)
        True
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(x).__name__}.")
            if x.dtype != y.dtype:
                raise ValueError("Registering a parametrization may not change the dtype of "
                                 "the tensor, unless the `unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}.dtype: {y.dtype}\n"
                                 f"parametrization(module.{tensor_name}).dtype: {x.dtype}")
            if x.shape != y.shape:
                raise ValueError("Registering a parametrization may not change the shape of "
                                 "the tensor, unless the `unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}.shape: {y.shape}\n"
                                 f"parametrization(module.{tensor_name}).shape: {x.shape}")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether `module` has any parametrization (on `tensor_name`, when given)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo `register_parametrization` on `tensor_name`: the tensor becomes a plain
    parameter or buffer again, holding its parametrized value (or the original with
    ``leave_parametrized=False``). Returns the module."""
    from ... import no_grad
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
            _set_original(plist, "original", original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        with no_grad():
            t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) \
            if isinstance(plist.original0, Parameter) else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__._type_before_parametrizations
    return module


def type_before_parametrizations(module):
    """The module's class before any parametrization swapped it."""
    if is_parametrized(module):
        return module.__class__._type_before_parametrizations
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Copy the parametrizations (and their originals) of `from_module` onto `to_module`,
    all of them or those of `tensor_name`. Returns `to_module`."""
    from ... import no_grad
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        src = from_module.parametrizations[name]
        for p in src:
            register_parametrization(to_module, name, p)
        dst = to_module.parametrizations[name]
        with no_grad():
            if src.is_tensor:
                _set_original(dst, "original", dst.original, src.original)
            else:
                for i in range(src.ntensors):
                    _set_original(dst, f"original{i}", getattr(dst, f"original{i}"),
                                  getattr(src, f"original{i}"))
    return to_module
