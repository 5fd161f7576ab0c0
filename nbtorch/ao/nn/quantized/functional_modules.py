"""FloatFunctional and QFunctional (``torch.ao.nn.quantized``): the float add / mul / cat
/ matmul a model calls through a module so that `prepare` can observe them, and the
quantized twins `convert` puts in their place."""
import nbtorch
from nbtorch import nn

from nbtorch.fx import wrap as _wrap
from . import ops
from .modules import _output_qparams, _pop_qparams, _save_qparams

_q_add, _q_add_relu, _q_mul, _q_cat = (ops.quantized_add, ops.quantized_add_relu,
                                       ops.quantized_mul, ops.quantized_cat)
_q_add_scalar, _q_mul_scalar, _q_matmul = (ops.quantized_add_scalar,
                                           ops.quantized_mul_scalar, ops.quantized_matmul)
# jit.trace / fx record each as one call_function (see ops.py)
for _name in ("_q_add", "_q_add_relu", "_q_mul", "_q_cat", "_q_add_scalar", "_q_mul_scalar",
              "_q_matmul"):
    _wrap(_name)

__all__ = ["FloatFunctional", "QFunctional"]


class FloatFunctional(nn.Module):
    """Float add/cat/mul that `prepare` observes and `convert` turns into `QFunctional`
    (``self.skip = FloatFunctional(); y = self.skip.add(a, b)``)."""

    def __init__(self):
        super().__init__()
        self.activation_post_process = nn.Identity()

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please "
                           "use the underlying operation")

    def add(self, x, y):
        return self.activation_post_process(x + y)

    def add_relu(self, x, y):
        return self.activation_post_process(nbtorch.relu(x + y))

    def cat(self, x, dim=0):
        return self.activation_post_process(nbtorch.cat(x, dim=dim))

    def mul(self, x, y):
        return self.activation_post_process(x * y)

    def add_scalar(self, x, y):
        return x + y                # not observed: the quantized op picks its qparams

    def mul_scalar(self, x, y):
        return x * y                # not observed either

    def matmul(self, x, y):
        return self.activation_post_process(nbtorch.matmul(x, y))


class QFunctional(nn.Module):
    """The quantized counterpart of `FloatFunctional`, with its output (scale, zp)."""

    def __init__(self):
        super().__init__()
        self.scale, self.zero_point = 1.0, 0
        self.activation_post_process = nn.Identity()

    def add(self, x, y):
        return _q_add(x, y, self.scale, self.zero_point)

    def add_relu(self, x, y):
        return _q_add_relu(x, y, self.scale, self.zero_point)

    def cat(self, x, dim=0):
        return _q_cat(x, dim, self.scale, self.zero_point)

    def mul(self, x, y):
        return _q_mul(x, y, self.scale, self.zero_point)

    def add_scalar(self, x, y):
        return _q_add_scalar(x, y)

    def mul_scalar(self, x, y):
        return _q_mul_scalar(x, y)

    def matmul(self, x, y):
        return _q_matmul(x, y, self.scale, self.zero_point)

    @classmethod
    def from_float(cls, mod):
        q = cls()
        q.scale, q.zero_point = _output_qparams(mod)
        return q

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        _save_qparams(destination, prefix, self.scale, self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        _pop_qparams(self, state_dict, prefix, missing_keys)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def extra_repr(self):
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def _get_name(self):
        return "QFunctional"
