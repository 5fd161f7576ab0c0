"""``torch.ops.<namespace>.<op>[.<overload>]``: PyTorch's op namespaces over nbtorch's ops.

`nbtorch.ops` is nbtorch's package of op definitions; its module ``__getattr__``
(PEP 562) hands every name that is not one of its submodules to `namespace` here, so
``torch.ops.mylib.foo`` finds the custom op ``mylib::foo`` (either API of
`nbtorch.library`) and ``torch.ops.aten.add.Tensor`` finds ``nbtorch.add``. Lookups are
live: an op defined, redefined or deleted later is seen at once.
"""
from ._library_op import _OPS

__all__ = ["namespace", "OpNamespace", "OpOverloadPacket", "OpOverload"]


class OpOverload:
    """One overload of an op (``torch.ops.mylib.foo.default``): call it like the op."""

    def __init__(self, packet, overload, op):
        self.overloadpacket, self._overloadname, self.op = packet, overload, op
        self.namespace = packet.namespace
        self.__name__ = f"{packet.__name__}.{overload}"
        self.__qualname__ = self.__name__
        self.__module__ = f"torch.ops.{packet.namespace}"
        self.__doc__ = getattr(op, "__doc__", None)

    @property
    def _schema(self):
        return getattr(self.op, "_schema", None)

    def name(self):
        base = f"{self.namespace}::{self.overloadpacket.__name__}"
        return base if self._overloadname == "default" else f"{base}.{self._overloadname}"

    def __call__(self, *args, **kwargs):
        return self.op(*args, **kwargs)

    def __repr__(self):
        return f"{self.namespace}.{self.__name__}"

    __str__ = __repr__

    def __reduce__(self):                # pickled by name, found again on loading
        return (_overload, (self.namespace, self.overloadpacket.__name__,
                            self._overloadname))

    def __eq__(self, other):
        return (isinstance(other, OpOverload) and other.op is self.op
                and other._overloadname == self._overloadname)

    def __hash__(self):
        return hash((id(self.op), self._overloadname))


class OpOverloadPacket:
    """All overloads of an op name (``torch.ops.mylib.foo``); calling it picks one."""

    def __init__(self, namespace, name, overloads):
        self.namespace, self.__name__ = namespace, name
        self._qualified_op_name = f"{namespace}::{name}"
        self._overloads = overloads          # overload name -> callable; None: any name
        self.__module__ = f"torch.ops.{namespace}"

    def overloads(self):
        return list(self._overloads) if isinstance(self._overloads, dict) else ["default"]

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        ops = self.__dict__["_overloads"]
        op = ops.get(overload) if isinstance(ops, dict) else ops
        if op is None:
            raise AttributeError(f"The underlying op of '{self}' has no overload name "
                                 f"'{overload}'")
        ov = OpOverload(self, overload, op)
        self.__dict__[overload] = ov
        return ov

    @property
    def _schema(self):
        return getattr(self.default, "_schema", None)

    def __call__(self, *args, **kwargs):
        ops = self._overloads
        if not isinstance(ops, dict):
            return ops(*args, **kwargs)
        if len(ops) == 1:
            return next(iter(ops.values()))(*args, **kwargs)
        errors = []
        for op in sorted(ops.values(), key=lambda o: getattr(o, "_overload", "") != ""):
            bind = getattr(op, "_schema", None)
            if bind is not None:
                try:
                    bind.bind(args, kwargs)
                except RuntimeError as e:
                    errors.append(str(e))
                    continue
            return op(*args, **kwargs)
        raise RuntimeError("Overloaded torch operator invoked from Python failed to match "
                           "any schema:\n" + "\n\n".join(errors))

    def __repr__(self):
        return f"{self.namespace}.{self.__name__}"

    __str__ = __repr__

    def __reduce__(self):
        return (_overload, (self.namespace, self.__name__, None))


def _overload(namespace_name, op_name, overload):
    """``torch.ops.<namespace_name>.<op_name>[.<overload>]`` (unpickling)."""
    packet = getattr(namespace(namespace_name), op_name)
    return packet if overload is None else getattr(packet, overload)


class OpNamespace:
    """``torch.ops.<name>``: its ops are the custom ops named ``<name>::<op>``."""

    def __init__(self, name):
        self.name = name
        self.__name__ = f"torch.ops.{name}"

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        overloads = self._find(op_name)
        if not overloads:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute "
                                 f"'{op_name}'")
        return OpOverloadPacket(self.name, op_name, overloads)

    def _find(self, op_name):
        base = f"{self.name}::{op_name}"
        found = {}
        for key, op in list(_OPS.items()):
            if key == base:
                found["default"] = op
            elif key.startswith(base + "."):
                found[key[len(base) + 1:]] = op
        return found

    def __dir__(self):
        prefix = self.name + "::"
        return sorted({k[len(prefix):].split(".")[0] for k in _OPS if k.startswith(prefix)})

    def __repr__(self):
        return f"<module '{self.__name__}' from 'torch.ops'>"


# ATen names whose nbtorch spelling differs (the rest are looked up by name)
_ATEN_ALIASES = {
    "_softmax": lambda x, dim, half_to_float=False: _nb().softmax(x, dim),
    "_log_softmax": lambda x, dim, half_to_float=False: _nb().log_softmax(x, dim),
    "_unsafe_view": lambda x, size: x.reshape(size),
    "_to_copy": lambda x, **kw: x.to(**{k: v for k, v in kw.items()
                                        if k in ("dtype", "device")}).clone(),
    "sym_size": lambda x, dim=None: x.size() if dim is None else x.size(dim),
    "sym_numel": lambda x: x.numel(),
    "slice": lambda x, dim=0, start=None, end=None, step=1:
        x[(slice(None),) * (dim % max(x.dim(), 1)) + (slice(start, end, step),)],
    "alias": lambda x: x.view(x.shape),
    "lift_fresh_copy": lambda x: x.clone(),
    "index": lambda x, indices: x[tuple(slice(None) if i is None else i for i in indices)],
    "upsample_nearest2d": lambda x, output_size, *scales: _nb().nn.functional.interpolate(
        x, size=list(output_size), mode="nearest"),
    "upsample_bilinear2d": lambda x, output_size, align_corners, *scales:
        _nb().nn.functional.interpolate(x, size=list(output_size), mode="bilinear",
                                        align_corners=align_corners),
}


def _nb():
    import nbtorch
    return nbtorch


def _aten(name):
    """nbtorch's function for ATen op `name`: an alias, ``nbtorch.<name>``, a Tensor method
    (``view``, ``add_``), or ``nn.functional.<name>``; None if there is none."""
    if name in _ATEN_ALIASES:
        return _ATEN_ALIASES[name]
    nb = _nb()
    for src in (nb, nb.Tensor, nb.nn.functional, nb.linalg, nb.special):
        f = getattr(src, name, None)
        if callable(f) and not isinstance(f, type):
            return f
    return None


class AtenNamespace(OpNamespace):
    """``torch.ops.aten``: the common ATen ops resolve to nbtorch's functions; every
    overload (``.default``, ``.Tensor``, ``.Scalar``, ``.out``...) calls the same function,
    which takes all of PyTorch's forms."""

    def __getattr__(self, op_name):
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        fn = _aten(op_name)
        if fn is None:
            return OpNamespace.__getattr__(self, op_name)
        packet = OpOverloadPacket("aten", op_name, fn)
        self.__dict__[op_name] = packet
        return packet


_NAMESPACES = {}


def _load_library(path):
    raise NotImplementedError(
        f"torch.ops.load_library({path!r}): nbtorch cannot load C++ operator libraries; "
        "define ops in Python with torch.library.custom_op")


def namespace(name):
    """``torch.ops.<name>`` (made on first use, then the same object)."""
    if name == "load_library":
        return _load_library
    if name == "loaded_libraries":
        return set()
    ns = _NAMESPACES.get(name)
    if ns is None:
        ns = _NAMESPACES[name] = AtenNamespace(name) if name == "aten" else OpNamespace(name)
    return ns
