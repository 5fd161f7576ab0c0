"""The ``__torch_function__`` protocol: Tensor subclasses and TorchFunctionModes that
see (and may replace) every op called on them, at no cost to plain tensors.

PyTorch checks each call's arguments for overriding types in C++. nbtorch's ops are
Python, where that check would cost every call (a wrapper frame and an argument scan:
about a third of a one-element add), so the protocol switches on when something takes
part: the first Tensor subclass defined outside nbtorch whose ``__torch_function__`` is
not `_disabled_torch_function_impl` (nn.Parameter's is), the first `TorchFunctionMode`
entered, or `activate()`. Then the public op functions (``torch.*``, ``F.*``,
``torch.linalg/fft/special``) are swapped for dispatching wrappers, for good. Tensor
methods are dispatched per subclass: each participating subclass gets dispatching
versions of the Tensor methods and operators it inherits, so plain tensors' methods stay
as they are. Differences from PyTorch: a method called on a plain tensor with a subclass
argument (``plain.add(sub)``) is not dispatched (operators are, through the subclass's
reflected ones: ``plain + sub`` reaches ``__radd__``), nor are properties other than
T/mT/H/mH/real/imag, nor a method called while a mode is active on plain tensors; and
ops that nbtorch's own code calls internally are not seen (PyTorch's are, below the
public call, only with ``__torch_dispatch__``, which nbtorch does not have).
"""
import functools
import threading
import types

__all__ = ["STATE", "activate", "deactivate", "is_active", "DisableTorchFunction",
           "DisableTorchFunctionSubclass", "_disabled_torch_function_impl", "dispatch",
           "overloaded_args", "participates", "handle", "mode_stack", "default_torch_function"]


class _State(threading.local):
    subclass_off = 0        # DisableTorchFunctionSubclass depth in this thread
    all_off = 0             # DisableTorchFunction depth

    def __init__(self):
        self.modes = []     # this thread's TorchFunctionMode stack, innermost last


STATE = _State()
_ACTIVE = [False]
_LOCK = threading.Lock()


class _DisabledImpl:
    """A ``__torch_function__`` that runs the op as a plain tensor op (nn.Parameter's):
    a callable object, so a class attribute holding it does not bind."""

    def __call__(self, func, types, args=(), kwargs=None):
        with DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))

    def __repr__(self):
        return "<built-in function _disabled_torch_function_impl>"


_disabled_torch_function_impl = _DisabledImpl()


class DisableTorchFunctionSubclass:
    """Within this block subclasses' ``__torch_function__`` is not called (modes still are)."""

    def __enter__(self):
        STATE.subclass_off += 1
        return self

    def __exit__(self, *exc):
        STATE.subclass_off -= 1


class DisableTorchFunction:
    """Within this block neither subclasses nor modes see ops."""

    def __enter__(self):
        STATE.all_off += 1
        return self

    def __exit__(self, *exc):
        STATE.all_off -= 1


def mode_stack():
    return STATE.modes


# -- who takes part ----------------------------------------------------------------------------

_PARTICIPATES = {}      # class -> bool


def participates(cls):
    """Whether instances of `cls` are overloaded arguments: a Tensor subclass with a
    ``__torch_function__`` of its own or the default one (nbtorch's internal subclasses,
    e.g. quantized and sparse tensors, keep plain behaviour), or any other class that has
    one; never a class using `_disabled_torch_function_impl`."""
    known = _PARTICIPATES.get(cls)
    if known is not None:
        return known
    from ._tensor import Tensor
    answer = _participates(cls, Tensor)
    _PARTICIPATES[cls] = answer
    if not answer and cls is not list and cls is not tuple:   # containers are looked into
        _SKIP_TYPES.add(cls)
    return answer


def _participates(cls, Tensor):
    tf = getattr(cls, "__torch_function__", None)
    if tf is None or tf is _disabled_torch_function_impl or cls is Tensor:
        answer = False
    elif issubclass(cls, Tensor):
        own = any("__torch_function__" in vars(k) for k in cls.__mro__ if k is not Tensor)
        answer = own or not cls.__module__.startswith("nbtorch.")
    else:
        answer = True
    return answer


# Classes known not to take part (grown by `participates`): the per-call check of a
# dispatching function is a set lookup per argument.
_SKIP_TYPES = {int, float, bool, complex, str, type(None), slice, type(Ellipsis)}


def plain_args(values):
    """True when no value (nor element of a tuple/list value) takes part."""
    skip = _SKIP_TYPES
    for a in values:
        c = a.__class__
        if c in skip:
            continue
        if c is tuple or c is list:
            for b in a:
                if b.__class__ not in skip and participates(b.__class__):
                    return False
        elif participates(c):
            return False
    return True


def _plain(t):
    return t in _SKIP_TYPES or not participates(t)


def overloaded_args(args, kwargs=None):
    """The arguments whose types take part, one per type, subclasses before their bases,
    else left to right (PyTorch's order); tuples and lists are looked into one level."""
    found = []

    def consider(a):
        t = type(a)
        if _plain(t) or not participates(t):
            return
        if any(type(f) is t for f in found):
            return
        for i, f in enumerate(found):
            if issubclass(t, type(f)):
                found.insert(i, a)
                return
        found.append(a)

    for group in (args, () if not kwargs else kwargs.values()):
        for a in group:
            if isinstance(a, (tuple, list)):
                for b in a:
                    consider(b)
            else:
                consider(a)
    return found


# operators PyTorch reports under the method they are bound to
_OPERATOR_NAMES = {"__add__": "add", "__radd__": "add", "__mul__": "mul", "__rmul__": "mul",
                   "__sub__": "sub", "__truediv__": "div", "__matmul__": "matmul",
                   "__neg__": "neg", "__abs__": "abs", "__mod__": "remainder", "__lt__": "lt",
                   "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__ne__": "ne"}


def resolve_name(f):
    """'torch.add', 'torch.Tensor.add', 'torch.nn.functional.relu'... for a function
    `__torch_function__` was given: a public function arrives as its dispatching wrapper,
    a Tensor method as the method itself."""
    from ._tensor import Tensor
    from .fx._names import qualified_name
    original = getattr(f, "__torch_function_original__", None)
    if original is None:
        names = [n for n, v in vars(Tensor).items()
                 if v is f or (isinstance(v, property) and v.__get__ == f)]
        if names:
            plain = [n for n in names if not n.startswith("_")]
            name = (plain or names)[0]
            return f"torch.Tensor.{_OPERATOR_NAMES.get(name, name)}"
    name = qualified_name(original or f)
    return name.replace("nbtorch.", "torch.", 1) if name.startswith("nbtorch.") else name


def handle(public_api, overloaded, args, kwargs):
    """Call the overloaded arguments' ``__torch_function__`` in order until one answers
    (through the instance, as PyTorch: a classmethod gets the class, an old-style plain
    method the instance, with PyTorch's deprecation warning)."""
    import warnings
    kinds = tuple(dict.fromkeys(type(a) for a in overloaded))
    for a in overloaded:
        method = a.__torch_function__
        if getattr(method, "__self__", None) is a:
            warnings.warn("Defining your `__torch_function__ as a plain method is deprecated "
                          "and will be an error in future, please define it as a classmethod.",
                          DeprecationWarning, stacklevel=3)
        result = method(public_api, kinds, tuple(args), dict(kwargs))
        if result is not NotImplemented:
            return result
    listed = "".join(f"\n  - tensor subclass {type(a)}" for a in overloaded)
    raise NoImplementation(f"Multiple dispatch failed for '{resolve_name(public_api)}'; all "
                           f"__torch_function__ handlers returned NotImplemented:\n{listed}\n\n"
                           "For more information, try re-running with "
                           "TORCH_LOGS=not_implemented")


class NoImplementation(TypeError):
    """Every ``__torch_function__`` returned NotImplemented (a binary operator then returns
    NotImplemented itself, so Python raises its usual operand error)."""


def dispatch(public_api, impl, args, kwargs):
    """Run `impl` (the op behind `public_api`), letting the innermost mode, then the
    overloaded arguments, answer first."""
    st = STATE
    if st.all_off:
        return impl(*args, **kwargs)
    if st.modes:
        mode = st.modes.pop()           # calls inside the mode's handler skip it
        try:
            kinds = tuple(dict.fromkeys(type(a) for a in overloaded_args(args, kwargs)))
            result = mode.__torch_function__(public_api, kinds, tuple(args), dict(kwargs))
        finally:
            st.modes.append(mode)
        if result is not NotImplemented:
            return result
    if not st.subclass_off:
        overloaded = overloaded_args(args, kwargs)
        if overloaded:
            return handle(public_api, overloaded, args, kwargs)
    return impl(*args, **kwargs)


# -- Tensor's default --------------------------------------------------------------------------

def _convert(ret, cls):
    from ._tensor import Tensor
    if isinstance(ret, Tensor):
        return ret if isinstance(ret, cls) else ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        if hasattr(ret, "_fields"):                 # torch.return_types
            return type(ret)(*items)
        return type(ret)(items)
    return ret


def _pytorch_function(func):
    """True for a function of PyTorch itself (``torch.add``, ``F.conv2d``, a
    ``torch.Tensor`` method), which calls this protocol when handed nbtorch tensors."""
    owner = getattr(func, "__objclass__", None)
    module = getattr(owner if owner is not None else func, "__module__", None) or ""
    return module == "torch" or module.startswith("torch.")


def default_torch_function(cls, func, types, args=(), kwargs=None):
    """Tensor.__torch_function__: run the op as on plain tensors, then give tensor results
    the subclass (as aliases that stay in the autograd graph). PyTorch's own functions get
    NotImplemented: PyTorch then raises its TypeError ("no implementation found for
    'torch.nn.functional.conv2d' on types that implement __torch_function__"), where
    calling them again here looped until Python's recursion limit."""
    if not all(issubclass(cls, t) for t in types) or _pytorch_function(func):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        ret = func(*args, **(kwargs or {}))
        from ._tensor import Tensor
        if cls is Tensor:
            return ret
        return _convert(ret, cls)


# -- switching on -----------------------------------------------------------------------------

def is_active():
    return _ACTIVE[0]


class _Dispatcher:
    """A public op function while the protocol is on: dispatches, then calls the op.
    Compares equal to (and hashes like) the op, so fx targets, autocast's and the jit's
    tables, which hold the op itself, still match ``torch.relu``."""

    def __init__(self, fn):
        self.__torch_function_original__ = fn
        self.__autocast_original__ = fn         # fx's and autocast's tables unwrap it
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        if not _MODE_USERS[0] and plain_args(args) and (not kwargs or
                                                         plain_args(kwargs.values())):
            return self.__torch_function_original__(*args, **kwargs)
        st = STATE
        if st.all_off or (not st.modes and st.subclass_off):
            return self.__torch_function_original__(*args, **kwargs)
        return dispatch(self, self.__torch_function_original__, args, kwargs)

    def __get__(self, obj, owner=None):          # binds as the function would
        return self if obj is None else types.MethodType(self, obj)

    def __eq__(self, other):
        return other is self or other is self.__torch_function_original__

    def __hash__(self):
        return hash(self.__torch_function_original__)

    def __repr__(self):
        return repr(self.__torch_function_original__)


_REPLACED = []          # (module dict, name, original) swapped by `activate`


def _public_modules():
    import nbtorch
    from .fx._names import public_namespaces
    return [m for _, m in public_namespaces()] + [nbtorch.functional]


def activate():
    """Swap the public op functions for dispatching wrappers (until `deactivate`)."""
    if _ACTIVE[0]:
        return
    with _LOCK:
        if _ACTIVE[0]:
            return
        from .fx._patch import _is_op_function
        wrappers = {}
        for module in _public_modules():
            d = vars(module)
            for name, obj in list(d.items()):
                original = getattr(obj, "__autocast_original__", obj)
                if not _is_op_function(name, original) or isinstance(original, type):
                    continue
                if id(original) not in wrappers:
                    wrappers[id(original)] = _Dispatcher(original)
                _REPLACED.append((d, name, obj))
                d[name] = wrappers[id(original)]
        _ACTIVE[0] = True
        _rescan_autocast()


def deactivate():
    """Put the public op functions back (participating subclasses keep dispatching through
    their own methods); for test isolation."""
    with _LOCK:
        while _REPLACED:
            d, name, obj = _REPLACED.pop()
            d[name] = obj
        _ACTIVE[0] = False
        _rescan_autocast()


def _rescan_autocast():
    import sys
    hooks = sys.modules.get("nbtorch.amp._hooks")
    if hooks is not None:
        hooks._SCANNED[0] = -1          # autocast finds the current bindings on its next scan


# Tensor methods a subclass gets dispatching versions of: the public methods and these
# dunders (not construction, attribute access, pickling or hashing).
_DUNDERS = frozenset(
    f"__{p}{op}__" for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod",
                              "pow", "and", "or", "xor", "lshift", "rshift", "div")
    for p in ("", "r", "i")) | frozenset(
    ["__neg__", "__pos__", "__abs__", "__invert__", "__eq__", "__ne__", "__lt__", "__le__",
     "__gt__", "__ge__", "__getitem__", "__setitem__", "__len__", "__iter__", "__bool__",
     "__float__", "__int__", "__index__", "__complex__", "__repr__", "__format__",
     "__contains__", "__reversed__", "__array__"])
_SKIP_NAMES = frozenset(["as_subclass", "__torch_function__"])
_PROPERTIES = ("T", "mT", "H", "mH", "real", "imag")


_BINARY_OPS = ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "and", "or",
               "xor", "lshift", "rshift", "div")
_BINARY = frozenset(f"__{p}{op}__" for op in _BINARY_OPS for p in ("", "r", "i")) | frozenset(
    ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"])


# The method PyTorch hands `__torch_function__` for an operator (``a + b`` arrives as
# ``Tensor.add``, so handlers keyed on it, or on its name, see the operator too).
_OPERATOR_METHODS = {"__add__": "add", "__radd__": "add", "__iadd__": "add_", "__sub__": "sub",
                     "__isub__": "sub_", "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_",
                     "__truediv__": "div", "__itruediv__": "div_", "__mod__": "remainder",
                     "__pow__": "pow", "__neg__": "neg", "__abs__": "abs", "__lt__": "lt",
                     "__le__": "le", "__gt__": "gt", "__ge__": "ge", "__ne__": "ne",
                     "__matmul__": "matmul"}


def _method_wrapper(name):
    from ._tensor import Tensor
    binary = name in _BINARY
    public_name = _OPERATOR_METHODS.get(name, name)

    def method(*args, **kwargs):
        func = getattr(Tensor, name)
        st = STATE
        if st.all_off or (st.subclass_off and not st.modes):
            return func(*args, **kwargs)
        public = getattr(Tensor, public_name)
        if binary:
            try:
                return dispatch(public, func, args, kwargs)
            except NoImplementation:
                return NotImplemented
        return dispatch(public, func, args, kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = getattr(getattr(Tensor, name), "__doc__", None)
    return method


_TENSOR_METHODS = []    # (name, original) while a mode is active in some thread
_MODE_USERS = [0]       # threads with a non-empty mode stack


def _plain_method_wrapper(name, original):
    """Tensor's own method while a mode is active: modes see plain tensors' methods too."""
    from ._tensor import Tensor
    public_name = _OPERATOR_METHODS.get(name)

    def method(*args, **kwargs):
        st = STATE
        if st.all_off or not st.modes:
            if st.subclass_off or not overloaded_args(args, kwargs):
                return original(*args, **kwargs)
        public = getattr(Tensor, public_name) if public_name else method
        return dispatch(public, original, args, kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = getattr(original, "__doc__", None)
    method.__wrapped__ = original
    return method


def mode_pushed():
    """A thread's first mode: Tensor's methods dispatch until the last mode anywhere ends."""
    from ._tensor import Tensor
    activate()
    with _LOCK:
        _MODE_USERS[0] += 1
        if _MODE_USERS[0] == 1:
            for name in _tensor_attribute_names():
                original = vars(Tensor).get(name)
                if original is None or isinstance(original, (classmethod, staticmethod)):
                    continue
                _TENSOR_METHODS.append((name, original))
                setattr(Tensor, name, _plain_method_wrapper(name, original))
            _rescan_autocast()


def mode_popped():
    from ._tensor import Tensor
    with _LOCK:
        _MODE_USERS[0] -= 1
        if _MODE_USERS[0] == 0:
            while _TENSOR_METHODS:
                name, original = _TENSOR_METHODS.pop()
                setattr(Tensor, name, original)
            _rescan_autocast()


def _property_wrapper(name):
    from ._tensor import Tensor
    getter = vars(Tensor)[name].__get__

    def get(self):
        if STATE.all_off or STATE.subclass_off:
            return getter(self)
        return dispatch(getter, lambda s: getter(s), (self,), {})
    return property(get, vars(Tensor)[name].__set__ if name in ("real", "imag") else None)


def _tensor_attribute_names():
    from ._tensor import Tensor
    names = []
    for name in dir(Tensor):
        if name in _SKIP_NAMES or (name.startswith("_") and name not in _DUNDERS):
            continue
        value = getattr(Tensor, name, None)
        if isinstance(value, (types.FunctionType, types.BuiltinFunctionType,
                              types.MethodDescriptorType, types.WrapperDescriptorType,
                              functools.partial)) or (callable(value) and not isinstance(
                                  value, type) and not isinstance(vars(Tensor).get(name),
                                                                 (classmethod, staticmethod))):
            names.append(name)
    return names


def on_subclass(cls):
    """Tensor.__init_subclass__: a subclass that takes part gets dispatching methods and
    switches the protocol on."""
    from ._tensor import Tensor
    _PARTICIPATES.pop(cls, None)
    if not participates(cls):
        return
    for name in _tensor_attribute_names():
        if _defined_below_tensor(cls, name, Tensor):
            continue
        if isinstance(vars(Tensor).get(name), (classmethod, staticmethod)):
            continue
        setattr(cls, name, _method_wrapper(name))
    for name in _PROPERTIES:
        if name in vars(Tensor) and not _defined_below_tensor(cls, name, Tensor):
            setattr(cls, name, _property_wrapper(name))
    activate()


def _defined_below_tensor(cls, name, tensor):
    for k in cls.__mro__:
        if k is tensor:
            return False
        if name in vars(k):
            return True
    return False


# -- Tensor's side -----------------------------------------------------------------------------

def _make_subclass(cls, data, require_grad=False, **_ignored):
    """A `cls` instance sharing `data`'s memory, detached, requiring grad as asked (what
    nn.Parameter and user subclasses' ``__new__`` build on)."""
    from ._tensor import Tensor
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"cls must be a subclass of Tensor, got {cls!r}")
    out = Tensor.__new__(cls)._init(data._storage, data._offset, data._shape, data._strides,
                                    data.dtype)
    out.requires_grad_(bool(require_grad))
    return out


def install():
    """Give Tensor PyTorch's default ``__torch_function__``, the subclass hook and
    ``_make_subclass``."""
    from ._tensor import Tensor

    def __init_subclass__(cls, **kwargs):
        super(Tensor, cls).__init_subclass__(**kwargs)
        on_subclass(cls)
    Tensor.__torch_function__ = classmethod(default_torch_function)
    Tensor.__init_subclass__ = classmethod(__init_subclass__)
    Tensor._make_subclass = staticmethod(_make_subclass)
