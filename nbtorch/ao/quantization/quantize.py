"""Eager-mode quantization workflows, as ``torch.ao.quantization``:

* `quantize_dynamic(model, {nn.Linear, nn.LSTM})`: swap layers for dynamic int8 ones.
* `prepare` -> run calibration batches -> `convert`: post-training static quantization.
  `prepare` gives every quantizable module (those `convert` knows) an observer of its
  output (``activation_post_process``, run by a forward hook); `convert` swaps each for
  its quantized twin built from the observers' qparams.
* `prepare_qat` -> train -> `convert`: the same with FakeQuantize in the observers' place
  and QAT layers whose weights are fake-quantized.
"""
import copy
import enum
import warnings
from collections import OrderedDict

from nbtorch import nn
from nbtorch.ao.nn import intrinsic as nni, qat as nnqat, quantized as nnq
from nbtorch.ao.nn.quantized import dynamic as nnqd
from nbtorch._dtype import float16
from nbtorch._qtensor import qint8, quint8

from .qconfig import (default_dynamic_qconfig, per_channel_dynamic_qconfig,  # noqa: F401
                      float16_dynamic_qconfig, float_qparams_weight_only_qconfig)
from .qconfig_mapping import QConfigMapping
from .stubs import DeQuantStub, QuantStub

__all__ = ["quantize_dynamic", "prepare", "convert", "prepare_qat", "quantize",
           "quantize_qat", "propagate_qconfig_", "get_default_static_quant_module_mappings",
           "get_default_qat_module_mappings", "get_default_dynamic_quant_module_mappings",
           "swap_module", "QuantType", "add_quant_dequant", "default_eval_fn",
           "get_observer_state_dict", "load_observer_state_dict", "get_default_qconfig_dict",
           "get_default_qat_qconfig_dict"]

_STATIC = {
    QuantStub: nnq.Quantize, DeQuantStub: nnq.DeQuantize,
    nn.Linear: nnq.Linear, nn.Conv2d: nnq.Conv2d, nn.ReLU6: nnq.ReLU6,
    nn.Conv1d: nnq.Conv1d, nni.ConvReLU1d: nnq.ConvReLU1d,
    nni.LinearReLU: nnq.LinearReLU, nni.ConvReLU2d: nnq.ConvReLU2d,
    nn.BatchNorm2d: nnq.BatchNorm2d, nn.BatchNorm3d: nnq.BatchNorm3d,
    nni.BNReLU2d: nnq.BNReLU2d,
    nn.Hardswish: nnq.Hardswish, nn.ELU: nnq.ELU, nn.LeakyReLU: nnq.LeakyReLU,
    nn.Dropout: nnq.Dropout, nn.LayerNorm: nnq.LayerNorm, nn.GroupNorm: nnq.GroupNorm,
    nn.InstanceNorm1d: nnq.InstanceNorm1d, nn.InstanceNorm2d: nnq.InstanceNorm2d,
    nn.InstanceNorm3d: nnq.InstanceNorm3d, nn.Embedding: nnq.Embedding,
    nn.EmbeddingBag: nnq.EmbeddingBag, nn.ConvTranspose2d: nnq.ConvTranspose2d,
    nnq.FloatFunctional: nnq.QFunctional,
    nnqat.Linear: nnq.Linear, nnqat.Conv2d: nnq.Conv2d,
    nnqat.LinearReLU: nnq.LinearReLU, nnqat.ConvReLU2d: nnq.ConvReLU2d,
    nnqat.ConvBn2d: nnq.Conv2d, nnqat.ConvBnReLU2d: nnq.ConvReLU2d,
}
_QAT = {nn.Linear: nnqat.Linear, nn.Conv2d: nnqat.Conv2d,
        nni.LinearReLU: nnqat.LinearReLU, nni.ConvReLU2d: nnqat.ConvReLU2d,
        nni.ConvBn2d: nnqat.ConvBn2d, nni.ConvBnReLU2d: nnqat.ConvBnReLU2d}
_DYNAMIC = {nn.Linear: nnqd.Linear, nn.LSTM: nnqd.LSTM, nn.GRU: nnqd.GRU,
            nn.LSTMCell: nnqd.LSTMCell, nn.GRUCell: nnqd.GRUCell, nn.RNNCell: nnqd.RNNCell,
            nni.LinearReLU: nnqd.LinearReLU, nn.Embedding: nnq.Embedding,
            nn.EmbeddingBag: nnq.EmbeddingBag}
_UNSUPPORTED_STATIC = (nni.ConvBn2d, nni.ConvBnReLU2d)


def get_default_static_quant_module_mappings():
    return dict(_STATIC)


def get_default_qat_module_mappings():
    return dict(_QAT)


def get_default_dynamic_quant_module_mappings():
    return dict(_DYNAMIC)


def _qconfig_source(qconfig_dict):
    if isinstance(qconfig_dict, QConfigMapping):
        return qconfig_dict.qconfig_for
    d = qconfig_dict or {}
    return lambda name, mod: d.get(name, d.get(type(mod), _MISSING))


_MISSING = object()


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None):
    """Give each submodule a ``qconfig``: its own, else from `qconfig_dict` by name or
    type, else its parent's."""
    lookup = _qconfig_source(qconfig_dict)

    def visit(mod, name, parent_qconfig):
        found = lookup(name, mod)
        qconfig = getattr(mod, "qconfig", parent_qconfig) if found is _MISSING else found
        mod.qconfig = qconfig
        for child_name, child in mod.named_children():
            visit(child, f"{name}.{child_name}" if name else child_name, qconfig)
    visit(module, "", getattr(module, "qconfig", None) if qconfig_dict is None else
          (None if lookup("", module) is _MISSING else lookup("", module)))
    return module


def _observer_hook(module, input, output):
    return module.activation_post_process(output)


def _add_observers(module, mapping):
    for child in module.children():
        if type(child) in _UNSUPPORTED_STATIC:
            raise NotImplementedError(f"{type(child).__name__} (from fuse_modules_qat) is "
                                      "for prepare_qat; for post-training quantization "
                                      "fuse with fuse_modules in eval mode (it folds the "
                                      "BatchNorm)")
        qconfig = getattr(child, "qconfig", None)
        if type(child) is nn.Dropout:           # PyTorch leaves Dropout unobserved
            continue
        special = _SPECIAL_QAT_OUTPUT.get(type(child)) if child.training else None
        if special is not None and qconfig is not None:
            # QAT: sigmoid-like outputs fake-quantized with their fixed qparams
            child.activation_post_process = _fixed_fake_quant(special)
            child.register_forward_hook(_observer_hook)
        elif type(child) in mapping and qconfig is not None:
            if type(child) is not DeQuantStub:
                child.activation_post_process = qconfig.activation()
                if type(child) is not nnq.FloatFunctional:
                    child.register_forward_hook(_observer_hook)
        elif not isinstance(child, nni._FusedModule):
            _add_observers(child, mapping)


_SPECIAL_QAT_OUTPUT = {nn.Hardsigmoid: "0to1", nn.Sigmoid: "0to1", nn.Softmax: "0to1",
                       nn.Tanh: "neg1to1"}


def _fixed_fake_quant(kind):
    from . import fake_quantize as fq
    return (fq.default_fixed_qparams_range_0to1_fake_quant if kind == "0to1" else
            fq.default_fixed_qparams_range_neg1to1_fake_quant)()


def _swap(module, mapping, skip_unprepared=False):
    for name, child in list(module.named_children()):
        if type(child) in mapping and (getattr(child, "qconfig", None) is not None):
            setattr(module, name, swap_module(child, mapping))
        else:
            _swap(child, mapping, skip_unprepared)


def swap_module(mod, mapping, custom_module_class_mapping=None):
    """The twin of `mod` in `mapping` (built by its ``from_float``), or `mod` itself."""
    cls = mapping.get(type(mod))
    if cls is None or getattr(mod, "qconfig", None) is None:
        return mod
    new = cls.from_float(mod)
    new.training = False if cls not in _QAT.values() else mod.training
    return new


def prepare(model, inplace=False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None):
    """Attach observers for post-training static quantization (model.qconfig, or a
    qconfig per submodule, says which)."""
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    if not any(getattr(m, "qconfig", None) is not None for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed "
                      "correct configuration through `qconfig_dict` or by assigning the "
                      "`.qconfig` attribute directly on submodules", stacklevel=2)
    _add_observers(model, _STATIC)
    return model


def prepare_qat(model, mapping=None, inplace=False):
    """Swap layers for QAT ones (fake-quantized weights) and attach fake-quantize
    observers; the model must be in training mode."""
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model)
    _swap(model, mapping or _QAT)
    _add_observers(model, _STATIC)
    return model


def convert(module, mapping=None, inplace=False, remove_qconfig=True,
            is_reference=False, convert_custom_config_dict=None):
    """Swap observed float (or QAT) modules for quantized ones."""
    if not inplace:
        module = copy.deepcopy(module)
    _swap(module, mapping or _STATIC)
    if remove_qconfig:
        for m in module.modules():
            if "qconfig" in m.__dict__:
                del m.qconfig
            _remove_observer(m)
    module.eval()
    return module


def _remove_observer(m):
    """Drop a module's output observer and its hook (what convert left on modules it did
    not swap, such as a QAT Sigmoid's fixed-qparams fake-quantize), as PyTorch does."""
    from .fake_quantize import FakeQuantizeBase
    from .observer import ObserverBase
    if isinstance(m._modules.get("activation_post_process"), (ObserverBase, FakeQuantizeBase)):
        del m.activation_post_process
    for key in [k for k, hook in m._forward_hooks.items() if hook is _observer_hook]:
        del m._forward_hooks[key]


def quantize(model, run_fn, run_args, mapping=None, inplace=False):
    """prepare, run_fn(model, *run_args) to calibrate, convert."""
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    return convert(model, mapping, inplace=True)


def quantize_qat(model, run_fn, run_args, inplace=False):
    """prepare_qat, run_fn(model, *run_args) to train, convert."""
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    return convert(model, inplace=True)


def quantize_dynamic(model, qconfig_spec=None, dtype=qint8, mapping=None, inplace=False):
    """Swap the listed layer types (default Linear, LSTM, GRU and their cells) for
    dynamically quantized ones: int8 weights, activations quantized at run time
    (``dtype=torch.float16``: float16 weights, float32 arithmetic; ``torch.quint8``:
    Embedding/EmbeddingBag tables with float per-row qparams).

    Example:
        >>> qmodel = quantize_dynamic(model, {nn.Linear}, dtype=nbtorch.qint8)
    """
    defaults = {qint8: default_dynamic_qconfig, float16: float16_dynamic_qconfig,
                quint8: float_qparams_weight_only_qconfig}     # PyTorch's, by dtype
    if qconfig_spec is None:
        if dtype not in defaults:
            raise ValueError(f"Don't know how to quantize with default settings for "
                             f"{dtype}. Provide full qconfig please")
        types = ((nn.Embedding, nn.EmbeddingBag) if dtype is quint8 else
                 (nn.Linear, nn.LSTM, nn.GRU, nn.LSTMCell, nn.RNNCell, nn.GRUCell))
        qconfig_spec = dict.fromkeys(types, defaults[dtype])
    elif isinstance(qconfig_spec, (set, list, tuple)):
        if dtype not in defaults:
            raise RuntimeError("Unknown dtype specified for quantize_dynamic: ", str(dtype))
        qconfig_spec = dict.fromkeys(qconfig_spec, defaults[dtype])
    mapping = mapping or _DYNAMIC
    for key in qconfig_spec:
        if isinstance(key, type) and key not in mapping:
            raise RuntimeError(f"quantize_dynamic: {key.__name__} has no dynamically "
                               "quantized version (have: "
                               f"{', '.join(k.__name__ for k in mapping)})")
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    _swap(model, mapping)
    return model


class QuantType(enum.IntEnum):
    """The kinds of quantization (``torch.ao.quantization.QuantType``)."""
    DYNAMIC = 0
    STATIC = 1
    QAT = 2
    WEIGHT_ONLY = 3


def add_quant_dequant(module):
    """Wrap each leaf submodule that has a qconfig in a `QuantWrapper` (in place; a leaf
    `module` itself comes back wrapped)."""
    from .stubs import QuantWrapper
    if not list(module.children()) and getattr(module, "qconfig", None):
        return QuantWrapper(module)
    for name, child in module.named_children():
        module._modules[name] = add_quant_dequant(child)
    return module


def default_eval_fn(model, calib_data):
    """Calibration loop: ``model(data)`` for each ``(data, target)`` of `calib_data`."""
    for data, _target in calib_data:
        model(data)


def get_observer_state_dict(mod):
    """The observers' entries of `mod`'s state dict (keys with activation_post_process)."""
    full = mod.state_dict()
    od = OrderedDict((k, v) for k, v in full.items() if "activation_post_process" in k)
    od._metadata = full._metadata
    return od


def load_observer_state_dict(mod, obs_dict):
    """Load observer statistics saved by `get_observer_state_dict` into `mod`'s observers."""
    from .observer import ObserverBase
    from .fake_quantize import FakeQuantizeBase
    missing, unexpected = [], []
    for name, module in mod.named_modules():
        if isinstance(module, (ObserverBase, FakeQuantizeBase)):
            module._load_from_state_dict(obs_dict, name + ".", {}, False, missing,
                                         unexpected, [])
    for k in missing:
        if "observer" in k or "activation_post_process" in k:
            raise Exception(f"Missing keys for observer {k} in state_dict")
    for k in unexpected:
        if "observer" in k or "activation_post_process" in k:
            raise Exception(f"Unexpected keys for observer {k} in state_dict")


def get_default_qconfig_dict(backend="x86", version=0):
    """``{"": get_default_qconfig(backend, version)}``."""
    from .qconfig import get_default_qconfig
    return {"": get_default_qconfig(backend, version)}


def get_default_qat_qconfig_dict(backend="x86", version=1):
    """``{"": get_default_qat_qconfig(backend, version)}``."""
    from .qconfig import get_default_qat_qconfig
    return {"": get_default_qat_qconfig(backend, version)}
