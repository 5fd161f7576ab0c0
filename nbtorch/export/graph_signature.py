"""``ExportGraphSignature``: what each input and output of an exported graph stands for.

The exported graph takes the model's parameters, buffers and tensor constants as
inputs ahead of the user's (PyTorch's lifted form: ``p_l_weight``, ``b_bn_running_mean``,
``c_...``); the signature maps each placeholder to its kind and its ``state_dict`` name.
"""
import enum
from dataclasses import dataclass

__all__ = ["InputKind", "OutputKind", "TensorArgument", "ConstantArgument", "InputSpec",
           "OutputSpec", "ExportGraphSignature"]


class InputKind(enum.Enum):
    USER_INPUT = enum.auto()
    PARAMETER = enum.auto()
    BUFFER = enum.auto()
    CONSTANT_TENSOR = enum.auto()
    CUSTOM_OBJ = enum.auto()
    TOKEN = enum.auto()


class OutputKind(enum.Enum):
    USER_OUTPUT = enum.auto()
    LOSS_OUTPUT = enum.auto()
    BUFFER_MUTATION = enum.auto()
    GRADIENT_TO_PARAMETER = enum.auto()
    GRADIENT_TO_USER_INPUT = enum.auto()
    USER_INPUT_MUTATION = enum.auto()
    TOKEN = enum.auto()


@dataclass
class TensorArgument:
    name: str


@dataclass
class ConstantArgument:
    name: str
    value: object


@dataclass
class InputSpec:
    kind: InputKind
    arg: object
    target: object
    persistent: object = None

    def __str__(self):
        target = "" if self.target is None else f" target={self.target!r}"
        persistent = "" if self.persistent is None else f" persistent={self.persistent}"
        return f"{self.arg.name}: {self.kind.name}{target}{persistent}"


@dataclass
class OutputSpec:
    kind: OutputKind
    arg: object
    target: object

    def __str__(self):
        target = "" if self.target is None else f" target={self.target!r}"
        name = getattr(self.arg, "name", "")
        return f"{name}: {self.kind.name}{target}"


@dataclass
class ExportGraphSignature:
    input_specs: list
    output_specs: list

    def _inputs(self, kind):
        return tuple(s.target for s in self.input_specs if s.kind is kind)

    @property
    def parameters(self):
        return self._inputs(InputKind.PARAMETER)

    @property
    def buffers(self):
        return self._inputs(InputKind.BUFFER)

    @property
    def non_persistent_buffers(self):
        return tuple(s.target for s in self.input_specs
                     if s.kind is InputKind.BUFFER and s.persistent is False)

    @property
    def lifted_tensor_constants(self):
        return self._inputs(InputKind.CONSTANT_TENSOR)

    @property
    def user_inputs(self):
        return tuple(s.arg.value if isinstance(s.arg, ConstantArgument) else s.arg.name
                     for s in self.input_specs if s.kind is InputKind.USER_INPUT)

    @property
    def user_outputs(self):
        return tuple(s.arg.value if isinstance(s.arg, ConstantArgument) else s.arg.name
                     for s in self.output_specs if s.kind is OutputKind.USER_OUTPUT)

    def _map(self, kind):
        return {s.arg.name: s.target for s in self.input_specs if s.kind is kind}

    @property
    def inputs_to_parameters(self):
        return self._map(InputKind.PARAMETER)

    @property
    def inputs_to_buffers(self):
        return self._map(InputKind.BUFFER)

    @property
    def inputs_to_lifted_tensor_constants(self):
        return self._map(InputKind.CONSTANT_TENSOR)

    @property
    def buffers_to_mutate(self):
        return {s.arg.name: s.target for s in self.output_specs
                if s.kind is OutputKind.BUFFER_MUTATION}

    def __str__(self):
        lines = ["", "# inputs"] + [str(s) for s in self.input_specs]
        lines += ["", "# outputs"] + [str(s) for s in self.output_specs]
        return "\n".join(lines) + "\n"
