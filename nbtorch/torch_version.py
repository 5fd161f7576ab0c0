"""``torch.torch_version``: `TorchVersion`, a version string that compares with strings
and tuples (``nbtorch.__version__ >= (0, 1)``)."""
import re

__all__ = ["TorchVersion"]


def _parts(v):
    """The numeric release parts of a version string or tuple ('2.1.0+cpu' -> (2, 1, 0))."""
    if isinstance(v, (tuple, list)):
        return tuple(int(p) for p in v)
    out = []
    for p in str(v).split("+")[0].split("."):
        m = re.match(r"\d+", p)
        if not m:
            break
        out.append(int(m.group()))
        if m.end() != len(p):
            break
    return tuple(out)


def _cmp(a, b):
    x, y = _parts(a), _parts(b)
    n = max(len(x), len(y))
    x, y = x + (0,) * (n - len(x)), y + (0,) * (n - len(y))
    return (x > y) - (x < y)


class TorchVersion(str):
    """A str whose comparisons are by release numbers."""

    def __gt__(self, other):
        return _cmp(self, other) > 0

    def __ge__(self, other):
        return _cmp(self, other) >= 0

    def __lt__(self, other):
        return _cmp(self, other) < 0

    def __le__(self, other):
        return _cmp(self, other) <= 0

    def __eq__(self, other):
        return _cmp(self, other) == 0 if isinstance(other, (tuple, list)) else \
            str.__eq__(self, other) or _cmp(self, other) == 0

    def __hash__(self):
        return str.__hash__(self)
