"""Named result tuples (`torch.return_types.max` etc.): `.values` / `.indices` and friends."""
from collections import namedtuple

__all__ = ["max", "min", "aminmax", "sort", "topk", "kthvalue", "median", "nanmedian",
           "mode", "cummax", "cummin", "histogram", "histogramdd"]


def _struct(name, fields=("values", "indices")):
    """A namedtuple printing like PyTorch's `torch.return_types.<name>(values=..., ...)`."""
    cls = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"torch.return_types.{name}(\n{body})"
    cls.__repr__ = __repr__
    cls.__module__ = __name__
    return cls


max = _struct("max")
min = _struct("min")
aminmax = _struct("aminmax", ("min", "max"))
sort = _struct("sort")
topk = _struct("topk")
kthvalue = _struct("kthvalue")
median = _struct("median")
nanmedian = _struct("nanmedian")
mode = _struct("mode")
cummax = _struct("cummax")
cummin = _struct("cummin")
histogram = _struct("histogram", ("hist", "bin_edges"))
histogramdd = _struct("histogramdd", ("hist", "bin_edges"))
