"""A `Schema` from a function's type annotations: PyTorch's `infer_schema` rules.

`torch.library.custom_op` needs no schema string: each parameter's annotation
(``Tensor``, ``Optional[Tensor]``, ``list[Tensor]``, ``int``, ``Sequence[float]``,
``torch.types.Number``, ``torch.dtype``...) gives its schema type, ``mutates_args`` marks
the tensors the op writes, and the return annotation gives the outputs. Unsupported
annotations and defaults raise PyTorch 2.13's ValueErrors.
"""
import collections.abc
import inspect
import types as _pytypes
import typing

from ._device import device as _device
from ._dtype import dtype as _dtype
from ._library_schema import Arg, Schema
from ._tensor import Tensor

__all__ = ["infer"]

_SCALAR = {int: "SymInt", float: "float", bool: "bool", str: "str"}


def _number_type():
    from .types import Number
    return Number


def _annotation_names():
    """Unqualified names PyTorch resolves string annotations against (torch.* and typing.*)."""
    from . import types as _types
    return {"Tensor": Tensor, "device": _device, "dtype": _dtype, "types": _types,
            "Optional": typing.Optional, "List": typing.List, "Sequence": typing.Sequence,
            "Union": typing.Union}


def _optional_of(t):
    """X for Optional[X] / X | None, else None."""
    origin = typing.get_origin(t)
    if origin is typing.Union or origin is _pytypes.UnionType:
        rest = [a for a in typing.get_args(t) if a is not type(None)]
        if len(rest) < len(typing.get_args(t)):
            return rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]
    return None


def _sequence_of(t):
    origin = typing.get_origin(t)
    if origin in (list, collections.abc.Sequence) and len(typing.get_args(t)) == 1:
        return typing.get_args(t)[0]
    return None


def _base_schema_type(t):
    if t is Tensor:
        return "Tensor"
    if t in _SCALAR:
        return _SCALAR[t]
    if t is _dtype:
        return "ScalarType"
    if t is _device:
        return "Device"
    if t == _number_type():
        return "Scalar"
    return None


def _param_type(t):
    """The schema type of a parameter annotation, or None where PyTorch has none."""
    base = _base_schema_type(t)
    if base is not None:
        return base
    inner = _optional_of(t)
    if inner is not None:
        if inner == _number_type() or _optional_of(inner) is not None:
            return None if inner != _number_type() else "Scalar?"
        b = _base_schema_type(inner)
        if b is not None:
            return b + "?"
        seq = _sequence_of(inner)
        b = _base_schema_type(seq) if seq is not None else None
        return b + "[]?" if b in ("SymInt", "float", "bool") else None
    seq = _sequence_of(t)
    if seq is not None:
        b = _base_schema_type(seq)
        if b in ("Tensor", "SymInt", "float", "bool", "Scalar"):
            return b + "[]"
        opt = _optional_of(seq)
        if opt is Tensor:
            return "Tensor?[]"
    return None


_VALID = ("Tensor, Optional[Tensor], Sequence[Tensor], List[Tensor], "
          "Sequence[Optional[Tensor]], int, float, bool (each also Optional[...], Sequence[...]"
          ", Optional[Sequence[...]]), str, Optional[str], Number, Optional[Number], "
          "Sequence[Number], dtype, Optional[dtype], device, Optional[device]")
_RETURN_VALID = ("{Tensor: 'Tensor', List[Tensor]: 'Tensor[]', list[Tensor]: 'Tensor[]', "
                 "int: 'SymInt', float: 'float', bool: 'bool', Number: 'Scalar'}")


def _return_type(t):
    if t is Tensor:
        return "Tensor"
    if _sequence_of(t) is Tensor and typing.get_origin(t) is list:
        return "Tensor[]"
    if t in (int, float, bool):
        return _SCALAR[t]
    if t == _number_type():
        return "Scalar"
    return None


def infer(fn, mutates_args, name=None):
    """The `Schema` of `fn` from its type annotations (PyTorch's `infer_schema` rules)."""
    sig = inspect.signature(fn)

    def error(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    names = dict(_annotation_names(), **getattr(fn, "__globals__", {}))

    def resolve(t):
        if isinstance(t, str):
            try:
                return eval(t, names)           # a string annotation (or __future__ annotations)
            except Exception as e:
                error(f"Unsupported type annotation {t}. It is not a type. "
                      f"({type(e).__name__}: {e})")
        return t

    unknown = isinstance(mutates_args, str)
    if unknown and mutates_args != "unknown":
        raise ValueError("mutates_args must either be a sequence of the names of the "
                         "arguments that are mutated or the string 'unknown'. ")
    mutated = set() if unknown else set(mutates_args)
    args, seen = [], set()
    for idx, (pname, p) in enumerate(sig.parameters.items()):
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            error("We do not support positional-only args, varargs, or varkwargs.")
        if p.annotation is p.empty:
            error(f"Parameter {pname} must have a type annotation.")
        ann = resolve(p.annotation)
        type_ = _param_type(ann)
        if type_ is None:
            if typing.get_origin(ann) is tuple or ann is tuple:
                error(f"Parameter {pname} has unsupported type {p.annotation}. We do not "
                      "support Tuple inputs in schema. As a workaround, please try to use "
                      f"List instead. The valid types are: {_VALID}.")
            error(f"Parameter {pname} has unsupported type {p.annotation}. "
                  f"The valid types are: {_VALID}.")
        is_mut = (unknown and type_.startswith("Tensor")) or pname in mutated
        if pname in mutated and not type_.startswith("Tensor"):
            error(f"Parameter {pname} is in mutable_args but only Tensors or collections "
                  "of Tensors can be mutated")
        default = p.default
        if default is not p.empty and not (default is None or isinstance(
                default, (int, float, bool, str, _device, _dtype))):
            error(f"Parameter {pname} has an unsupported default value type "
                  f"{type(default)}. Please file an issue on GitHub so we can prioritize this.")
        args.append(Arg(pname, type_, default, p.kind is p.KEYWORD_ONLY, is_mut,
                        f"a{idx}" if is_mut else None))
        seen.add(pname)
    if mutated - seen:
        error(f"{mutated - seen} in mutates_args were not found in the custom op's "
              "signature. mutates_args should contain the names of all args that the custom "
              "op mutates, or just the string 'unknown' if you don't know.")
    ret = resolve(sig.return_annotation)
    if ret is None:
        returns = []
    elif ret is sig.empty:
        error("No return type annotation was provided. Please add one.")
    elif typing.get_origin(ret) is tuple:
        returns = [_return_type(resolve(a)) for a in typing.get_args(ret)]
        if None in returns:
            error(f"Return has unsupported type {ret}. The valid types are: {_RETURN_VALID}.")
    else:
        returns = [_return_type(ret)]
        if returns[0] is None:
            error(f"Return has unsupported type {ret}. The valid types are: {_RETURN_VALID}.")
    return Schema(args, returns, name, tuple_return=typing.get_origin(ret) is tuple)
