"""`nn.DataParallel`: one process, the batch split across CUDA devices.

With no CUDA device (or one), the module runs as it is, on its own device: the wrapper
only adds the ``module.`` prefix to state-dict keys, as PyTorch's. With several CUDA
devices, each call chunks the inputs along `dim`, runs the original module on the first
device and, on each other device, the same module through `functional_call` with its
parameters and buffers copied there by the differentiable ``.to`` (so every replica's
gradient flows back into the original parameters, as PyTorch's broadcast does), then
gathers the outputs on `output_device`. Replicas run one after another (the kernels of
each device are asynchronous); buffer updates made on the other devices are dropped, as
in PyTorch.
"""
import itertools

from ..._device import device as _device_cls
from ..modules.module import Module
from ..utils.stateless import functional_call
from .scatter_gather import gather, scatter_kwargs

__all__ = ["DataParallel", "data_parallel"]


def _cuda_devices():
    from ... import cuda
    return list(range(cuda.device_count())) if cuda.is_available() else []


def _index(d):
    if isinstance(d, int):
        return d
    d = _device_cls(d)
    return d.index if d.index is not None else 0


class DataParallel(Module):
    """Wraps `module`; ``forward`` splits the batch over `device_ids` (see module doc).

    Example:
        >>> model = nn.DataParallel(model)      # one device: runs the model as is
        >>> model.module                        # the wrapped model
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.dim = dim
        available = _cuda_devices()
        if not available:
            self.device_ids = []
            self.output_device = None
            self.src_device_obj = None
            return
        ids = available if device_ids is None else [_index(d) for d in device_ids]
        self.device_ids = ids
        self.output_device = _index(output_device) if output_device is not None else ids[0]
        self.src_device_obj = _device_cls("cuda", ids[0])

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in itertools.chain(self.module.parameters(), self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of "
                                   f"them on device: {t.device}")
        devices = [_device_cls("cuda", i) for i in self.device_ids]
        return _parallel_forward(self.module, inputs, kwargs, devices,
                                 _device_cls("cuda", self.output_device), self.dim)


def _parallel_forward(module, inputs, kwargs, devices, output_device, dim):
    """Chunk, run a replica per device (the original on devices[0]), gather."""
    ins, kws = scatter_kwargs(inputs, kwargs, devices, dim)
    if not ins:
        ins, kws = ((),), ({},)
    if len(ins) == 1:
        return module(*ins[0], **kws[0])
    state = dict(module.named_parameters(remove_duplicate=False))
    state.update(module.named_buffers(remove_duplicate=False))
    outputs = []
    for i, (args, kw) in enumerate(zip(ins, kws)):
        with _on(devices[i]):
            if i == 0:
                outputs.append(module(*args, **kw))
            else:
                moved = {k: v.to(devices[i]) for k, v in state.items()}
                outputs.append(functional_call(module, moved, tuple(args), kw))
    return gather(outputs, output_device, dim)


class _on:
    """The current CUDA device set to `device` for the block (nothing on the CPU)."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        if self.device.type == "cuda":
            from ... import cuda
            self._ctx = cuda.device(self.device.index or 0)
            self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        if self.device.type == "cuda":
            self._ctx.__exit__(*exc)
        return False


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """The functional form: `module` on `inputs` split over `device_ids`."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    available = _cuda_devices()
    if not available:
        return module(*inputs, **(module_kwargs or {}))
    ids = available if device_ids is None else [_index(d) for d in device_ids]
    out = ids[0] if output_device is None else _index(output_device)
    return _parallel_forward(module, inputs, module_kwargs or {},
                             [_device_cls("cuda", i) for i in ids],
                             _device_cls("cuda", out), dim)
