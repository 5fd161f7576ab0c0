"""torch.* function forms of in-place Tensor methods (torch.fill_(t, v) is t.fill_(v)), and
the Tensor methods that take a Python callable (apply_, map_, map2_: CPU only, one
Python call per element, as in PyTorch; for tests and small tensors)."""
import numpy as np

from ._common import tensor_method

__all__ = ["as_strided_", "detach_", "fill_", "index_put_"]


def as_strided_(input, size, stride, storage_offset=None):
    return input.as_strided_(size, stride, storage_offset)


def detach_(input):
    return input.detach_()


def fill_(input, value):
    return input.fill_(value)


def index_put_(input, indices, values, accumulate=False):
    return input.index_put_(indices, values, accumulate)


def _cpu_only(op, *tensors):
    for t in tensors:
        if t.device.type != "cpu":
            raise TypeError(f"{op} is only implemented on CPU tensors")


def _write(self, values):
    from .creation import tensor
    self.copy_(tensor(np.asarray(values).reshape(self.shape), dtype=self.dtype))
    return self


@tensor_method()
def apply_(self, callable):
    """self[i] = callable(self[i]) for every element, in place (CPU)."""
    _cpu_only("apply_", self)
    vals = [callable(v) for v in self.detach()._host().reshape(-1).tolist()]
    return _write(self, vals)


@tensor_method()
def map_(self, tensor, callable):
    """self[i] = callable(self[i], tensor[i]) (tensor broadcast to self), in place (CPU)."""
    _cpu_only("map_", self, tensor)
    a = self.detach()._host().reshape(-1).tolist()
    b = tensor.detach().expand(self.shape)._host().reshape(-1).tolist()
    return _write(self, [callable(x, y) for x, y in zip(a, b)])


@tensor_method()
def map2_(self, x, y, callable):
    """self[i] = callable(self[i], x[i], y[i]) (x, y broadcast to self), in place (CPU)."""
    _cpu_only("map2_", self, x, y)
    a = self.detach()._host().reshape(-1).tolist()
    b = x.detach().expand(self.shape)._host().reshape(-1).tolist()
    c = y.detach().expand(self.shape)._host().reshape(-1).tolist()
    return _write(self, [callable(p, q, r) for p, q, r in zip(a, b, c)])


