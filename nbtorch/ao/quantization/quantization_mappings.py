"""Which quantized class a float module becomes (``torch.ao.quantization.
quantization_mappings``): lookups over the default static, QAT and dynamic mappings."""
import copy

__all__ = ["get_default_qconfig_propagation_list", "get_static_quant_module_class",
           "get_dynamic_quant_module_class", "get_combined_dict", "no_observer_set"]


def get_combined_dict(default_dict, additional_dict):
    """A copy of `default_dict` updated with `additional_dict`."""
    d = dict(default_dict)
    d.update(additional_dict or {})
    return d


def get_default_qconfig_propagation_list():
    """The module types `prepare` gives a qconfig to (every mapped float type)."""
    from .quantize import _STATIC, _QAT, _DYNAMIC
    from .stubs import QuantStub, DeQuantStub
    return set(_STATIC) | set(_QAT) | set(_DYNAMIC) | {QuantStub, DeQuantStub}


def get_static_quant_module_class(float_module_class, additional_static_quant_mapping=None,
                                  is_reference=False):
    """The statically quantized class of a float module class."""
    from .quantize import _STATIC
    if is_reference:
        raise NotImplementedError("reference quantized modules are not implemented in "
                                  "nbtorch")
    cls = get_combined_dict(_STATIC, additional_static_quant_mapping).get(float_module_class)
    if cls is None:
        raise AssertionError(f"Floating point module class {float_module_class} does not "
                             "have a corresponding quantized module class")
    return copy.deepcopy(cls)


def get_dynamic_quant_module_class(float_module_class, additional_dynamic_quant_mapping=None):
    """The dynamically quantized class of a float module class."""
    from .quantize import _DYNAMIC
    cls = get_combined_dict(_DYNAMIC, additional_dynamic_quant_mapping).get(float_module_class)
    if cls is None:
        raise AssertionError(f"Floating point module class {float_module_class} does not "
                             "have a corresponding quantized module class")
    return copy.deepcopy(cls)


def no_observer_set():
    """Module types that get no output observer (none among nbtorch's)."""
    return set()
