"""QConfigMapping: qconfigs by global default, module type, module name (PyTorch's
precedence: name > type > global)."""
from .qconfig import get_default_qconfig, get_default_qat_qconfig

__all__ = ["QConfigMapping", "get_default_qconfig_mapping", "get_default_qat_qconfig_mapping"]


class QConfigMapping:
    """Which qconfig each module gets; ``None`` leaves a module in float."""

    def __init__(self):
        self.global_qconfig = None
        self.object_type_qconfigs = {}
        self.module_name_qconfigs = {}

    def set_global(self, global_qconfig):
        self.global_qconfig = global_qconfig
        return self

    def set_object_type(self, object_type, qconfig):
        self.object_type_qconfigs[object_type] = qconfig
        return self

    def set_module_name(self, module_name, qconfig):
        self.module_name_qconfigs[module_name] = qconfig
        return self

    def qconfig_for(self, name, module):
        """The qconfig of the module called `name` (its own, its type's, or the global)."""
        if name in self.module_name_qconfigs:
            return self.module_name_qconfigs[name]
        if type(module) in self.object_type_qconfigs:
            return self.object_type_qconfigs[type(module)]
        return self.global_qconfig

    def to_dict(self):
        return {"": self.global_qconfig,
                "object_type": list(self.object_type_qconfigs.items()),
                "module_name": list(self.module_name_qconfigs.items())}

    def __repr__(self):
        return (f"QConfigMapping (\n global_qconfig\n  {self.global_qconfig}\n object_type_"
                f"qconfigs\n  {self.object_type_qconfigs}\n module_name_qconfigs\n  "
                f"{self.module_name_qconfigs}\n)")


def get_default_qconfig_mapping(backend="x86", version=0):
    return QConfigMapping().set_global(get_default_qconfig(backend, version))


def get_default_qat_qconfig_mapping(backend="x86", version=1):
    return QConfigMapping().set_global(get_default_qat_qconfig(backend, version))
