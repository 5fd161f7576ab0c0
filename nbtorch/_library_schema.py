"""Operator schemas for PyTorch's `torch.library` API: parsed, printed, bound.

A schema is PyTorch's signature language, ``mylib::f(Tensor x, float alpha=1.) -> Tensor``:
`parse` reads one from a string (`torch.library.define`; `_library_infer.infer` builds
one from type annotations for `custom_op`), and `Schema.bind` turns a call's arguments
into one value per schema argument, checking each against its type with PyTorch's
messages. Errors copy PyTorch 2.13's wording.
"""
import inspect
import re

from ._device import device as _device
from ._dtype import dtype as _dtype
from ._tensor import Tensor

__all__ = ["Arg", "Schema", "parse", "check_qualname"]

_NO_DEFAULT = inspect.Parameter.empty


def check_qualname(qualname):
    """(namespace, name) of 'namespace::name'; PyTorch's ValueError otherwise."""
    parts = qualname.split("::") if isinstance(qualname, str) else []
    if len(parts) != 2 or not all(parts):
        raise ValueError(
            f'Expected `qualname` to be of the form "namespace::name", but got {qualname}. '
            "The qualname passed to the torch.library APIs must consist of a namespace and "
            "a name, e.g. aten::sin")
    return parts[0], parts[1]


class Arg:
    """One schema argument: `type` is the schema spelling without alias ('Tensor?', 'SymInt[]')."""

    __slots__ = ("name", "type", "default", "kwarg_only", "mutable", "alias")

    def __init__(self, name, type_, default=_NO_DEFAULT, kwarg_only=False, mutable=False,
                 alias=None):
        self.name, self.type, self.default = name, type_, default
        self.kwarg_only, self.mutable, self.alias = kwarg_only, mutable, alias

    @property
    def has_default(self):
        return self.default is not _NO_DEFAULT

    @property
    def is_tensor_like(self):
        return self.type.startswith("Tensor")

    @property
    def default_value(self):
        """PyTorch's FunctionSchema spelling: the default, or None."""
        return self.default if self.has_default else None

    @property
    def alias_info(self):
        """(alias set, is_write) of a ``Tensor(a!)`` argument, else None."""
        return None if self.alias is None else (self.alias, self.mutable)

    def text(self, raw=False):
        """``Tensor(a!) y=...``; `raw`: defaults as `infer_schema` writes them (``2.0``)."""
        t = self.type
        if self.alias:
            t = f"Tensor({self.alias}{'!' if self.mutable else ''}){t[len('Tensor'):]}"
        s = f"{t} {self.name}"
        if not self.has_default:
            return s
        if not raw and self.type.startswith("Device") and isinstance(self.default, str):
            return f"{s}={self.default}"             # a registered schema's bare device
        return f"{s}={_render(self.default, raw)}"

    __str__ = text


# c10::ScalarType numbers: how a registered schema prints a dtype default
_SCALAR_TYPES = {"uint8": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "float16": 5,
                 "float32": 6, "float64": 7, "complex64": 9, "complex128": 10, "bool": 11,
                 "bfloat16": 15}


def _render(v, raw=False):
    """A default as PyTorch prints it: a registered schema (``2.``, ``1.0000000000000001e-05``,
    dtypes as ScalarType numbers, devices bare) or, `raw`, as `infer_schema` writes it."""
    if v is None or isinstance(v, (bool, int)) or raw and isinstance(v, float):
        return str(v)
    if isinstance(v, float):
        return f"{int(v)}." if v.is_integer() and abs(v) < 1e16 else "%.17g" % v
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_render(e, raw) for e in v) + "]"
    if isinstance(v, _dtype):
        return v.name if raw else str(_SCALAR_TYPES.get(v.name, v.name))
    if isinstance(v, _device) and not raw:
        return str(v)
    return f'"{v}"'


class Schema:
    """A function schema: qualified `name` (or None), `overload`, `args`, `returns`."""

    def __init__(self, args, returns, name=None, overload="", tuple_return=False):
        self.args, self.returns = list(args), list(returns)
        self.tuple_return = tuple_return or len(self.returns) != 1   # "(Tensor)" vs "Tensor"
        self.name, self.overload = name, overload
        self.kwarg_names = {a.name for a in self.args if a.kwarg_only}
        self.n_positional = sum(not a.kwarg_only for a in self.args)
        self.mutable_args = tuple(i for i, a in enumerate(self.args) if a.mutable)
        self._checks = [_checker(a.type) for a in self.args]     # built once, not per call

    @property
    def arguments(self):
        """PyTorch's FunctionSchema spelling of `args`."""
        return self.args

    @property
    def overload_name(self):
        return self.overload

    def text(self, raw=False):
        """The schema string (`raw`: float defaults as Python prints them, as PyTorch's
        `infer_schema` returns them; the registered schema prints ``2.``)."""
        parts, star = [], False
        for a in self.args:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(a.text(raw))
        ret = self.returns
        out = "(" + ", ".join(ret) + ")" if self.tuple_return else ret[0]
        name = self.name or ""
        if name and self.overload:
            name += "." + self.overload
        return f"{name}({', '.join(parts)}) -> {out}"

    __str__ = __repr__ = text

    # ---- calling ------------------------------------------------------------------------
    def bind(self, args, kwargs):
        """One value per schema argument (defaults filled in), checked against its type."""
        n_args = len(self.args)
        if not kwargs and len(args) == self.n_positional == n_args:   # the common call
            values = list(args)
            for check, v in zip(self._checks, values):
                if not check(v):
                    self._type_error(values)
            return values
        decl = f"Declaration: {self}"
        if len(args) + len(kwargs) > n_args:
            raise RuntimeError(f"{self.name}() expected at most {n_args} argument(s) but "
                               f"received {len(args) + len(kwargs)} argument(s). {decl}")
        if len(args) > self.n_positional:
            raise RuntimeError(f"{self.name}() takes {self.n_positional} positional "
                               f"argument(s) but {len(args)} was/were given.  {decl}")
        values = list(args)
        for a in self.args[len(args):]:
            if a.name in kwargs:
                values.append(kwargs[a.name])
            elif a.has_default:
                values.append(a.default)
            else:
                raise RuntimeError(f"{self.name}() is missing value for argument "
                                   f"'{a.name}'. {decl}")
        if kwargs:
            known = {a.name for a in self.args[len(args):]}
            for k in kwargs:
                if k not in known:
                    raise RuntimeError(f"Unknown keyword argument '{k}' for operator "
                                       f"'{self.name}'. Schema: {self}")
        for check, v in zip(self._checks, values):
            if not check(v):
                self._type_error(values)
        return values

    def _type_error(self, values):
        for i, (a, v) in enumerate(zip(self.args, values)):
            if not _accepts(a.type, v):
                raise RuntimeError(
                    f"{self.name}() Expected a value of type '{_py_type(a.type)}' for "
                    f"argument '{a.name}' but instead found type '{type(v).__name__}'.\n"
                    f"Position: {i}\nValue: {v!r}\nDeclaration: {self}")

    def split(self, values):
        """(positional values, keyword-only values as a dict) for calling a kernel."""
        n = self.n_positional
        if n == len(values):
            return values, {}
        return values[:n], {a.name: v for a, v in zip(self.args[n:], values[n:])}


# ---- type checks of argument values ---------------------------------------------------------

_INTS = (int,)
_NUMBERS = (int, float, complex)


def _is_number_tensor(v):
    return isinstance(v, Tensor) and v.numel() == 1


def _accepts_base(base, v):
    if base == "Tensor":
        return isinstance(v, Tensor)
    if base in ("int", "SymInt"):
        return isinstance(v, _INTS) or _is_number_tensor(v) and not v.dtype.is_floating_point
    if base == "float":
        return isinstance(v, (int, float)) or _is_number_tensor(v)
    if base == "bool":
        return isinstance(v, int) or _is_number_tensor(v)
    if base == "str":
        return isinstance(v, str)
    if base == "Scalar":
        return isinstance(v, _NUMBERS) or _is_number_tensor(v)
    if base == "ScalarType":
        return isinstance(v, (_dtype, int))
    if base == "Device":
        return isinstance(v, (_device, str, int))
    return True                     # Layout, MemoryFormat, Generator...: not checked


def _accepts(type_, v):
    if type_.endswith("?"):
        return v is None or _accepts(type_[:-1], v)
    m = re.fullmatch(r"(.+)\[(\d*)\]", type_)
    if m is None:
        return _accepts_base(type_, v)
    inner, size = m.groups()
    if size and _accepts(inner, v) and not isinstance(v, Tensor):
        return True                 # int[2] k=1: one value broadcast to the list
    return isinstance(v, (list, tuple)) and all(_accepts(inner, e) for e in v)


def _checker(type_):
    """A fast predicate for values of schema type `type_` (plain Tensor: one isinstance)."""
    if type_ == "Tensor":
        return lambda v: isinstance(v, Tensor)
    if type_ == "Tensor?":
        return lambda v: v is None or isinstance(v, Tensor)
    return lambda v: _accepts(type_, v)


_PY_NAMES = {"Tensor": "Tensor", "int": "int", "SymInt": "int", "float": "float",
             "bool": "bool", "str": "str", "Scalar": "number", "ScalarType": "int",
             "Device": "Device"}


def _py_type(type_):
    """PyTorch's Python spelling of a schema type in call errors ('List[int]')."""
    if type_.endswith("?"):
        return f"Optional[{_py_type(type_[:-1])}]"
    m = re.fullmatch(r"(.+)\[\d*\]", type_)
    if m:
        return f"List[{_py_type(m.group(1))}]"
    return _PY_NAMES.get(type_, type_)


# ---- parsing schema strings -----------------------------------------------------------------

_BASE_TYPES = ("Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType",
               "Device", "Layout", "MemoryFormat", "Generator", "Dimname", "Storage",
               "Stream", "complex", "SymFloat", "SymBool", "GraphModule", "Any")
_TYPE_RE = re.compile(r"(?P<base>[A-Za-z_]\w*)(?:\((?P<alias>[^)]*)\))?"
                      r"(?P<suffix>(?:\?|\[\d*\])*)")


def _split_top(s):
    """`s` split at commas outside brackets and quotes."""
    parts, depth, cur, quote = [], 0, [], None
    for ch in s:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return [p.strip() for p in parts]


def _here(text, token, message):
    col = max(text.find(token), 0)
    return RuntimeError(f"{message}\n{text}\n{' ' * col}{'~' * max(len(token), 1)} <--- HERE\n")


def _parse_type(text, full):
    m = _TYPE_RE.fullmatch(text)
    if m is None or m.group("base") not in _BASE_TYPES:
        token = m.group("base") if m else text
        raise _here(full, token, "\nunknown type specifier. Common valid schema types include "
                    "Tensor, SymInt, int, float, bool, Scalar; for a full list, please see "
                    "https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/"
                    "README.md#func :")
    alias, mutable = m.group("alias"), False
    if alias is not None:
        alias = alias.strip()
        mutable = alias.endswith("!")
        alias = alias.rstrip("!").strip()
    return m.group("base") + m.group("suffix"), alias, mutable


def _parse_default(text, type_):
    t = text.strip()
    if t == "None":
        return None
    if t in ("True", "False"):
        return t == "True"
    if t[:1] in "\"'":
        return t[1:-1]
    if t.startswith("["):
        return [_parse_default(e, type_.split("[")[0]) for e in _split_top(t[1:-1])]
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        pass
    if type_.startswith("ScalarType"):
        from ._dtype import to_dtype
        return to_dtype(t)
    return t                        # contiguous_format, Mean...: kept as a name


def parse(schema, name=None, what="define(qualname, schema, ...)"):
    """The `Schema` of a string like ``"(Tensor x, float alpha=1.0) -> Tensor"``.

    `name` (qualified, with an optional ``.overload``) names it; a string that starts with
    a name (``"foo(Tensor x) -> Tensor"``, `Library.define`'s form) names itself.
    """
    text = schema.strip()
    head, paren, _ = text.partition("(")
    if not paren or "->" not in text:
        raise ValueError(f'{what}: expected schema to look like e.g. "(Tensor x) -> Tensor" '
                         f'but got "{schema}"')
    if head.strip():
        name = head.strip() if name is None else name
    overload = ""
    if name and "." in name.split("::")[-1]:
        name, overload = name.rsplit(".", 1)
    depth, close = 0, -1
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == ")" and depth == 0:
            close = i
            break
    args_text = text[len(head) + 1:close]
    rest = text[close + 1:].strip()
    if not rest.startswith("->"):
        raise ValueError(f'{what}: expected schema to look like e.g. "(Tensor x) -> Tensor" '
                         f'but got "{schema}"')
    full = f"{(name or '').split('::')[-1]}{text[len(head):]}"
    args, kwarg_only, seen_default, names = [], False, False, set()
    for part in _split_top(args_text):
        if part == "*":
            kwarg_only = True
            continue
        decl, eq, default = part.partition("=")
        pieces = decl.rsplit(None, 1)
        if len(pieces) != 2:
            raise _here(full, ")", "expected ident but found ')' here:")
        type_, alias, mutable = _parse_type(pieces[0].strip(), full)
        arg = Arg(pieces[1], type_, _parse_default(default, type_) if eq else _NO_DEFAULT,
                  kwarg_only, mutable, alias)
        if seen_default and not arg.has_default and not kwarg_only:
            raise RuntimeError("Non-default positional argument follows default argument. "
                               f"Parameter {arg.name} in {full}")
        seen_default |= arg.has_default
        names.add(arg.name)
        args.append(arg)
    returns = _parse_returns(rest[2:].strip(), full)
    return Schema(args, returns, name, overload, rest[2:].strip().startswith("("))


def _parse_returns(text, full):
    if text == "()":
        return []
    inner = text[1:-1] if text.startswith("(") and text.endswith(")") else text
    out = []
    for part in _split_top(inner):
        type_, alias, mutable = _parse_type(part.split()[0], full)
        out.append(type_ if not alias else
                   f"Tensor({alias}{'!' if mutable else ''}){type_[len('Tensor'):]}")
    return out
