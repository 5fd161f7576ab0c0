"""GraphModule.to_folder: the module as importable source plus its weights, no pickle.

Writes ``module.py`` (a class whose ``__init__`` rebuilds each submodule from
its constructor call, e.g. ``torch.nn.Linear(in_features=4, ...)``, and whose
``forward`` is the generated code), ``state.pt`` (the state dict, in
nbtorch's safe checkpoint format) and ``__init__.py``. Submodules must be
nbtorch.nn layers (their repr is their constructor call) or plain containers.
"""
import os

__all__ = ["write_folder"]


def _constructor(module, path):
    import nbtorch
    from ..nn import Module
    if type(module) is Module:
        return "torch.nn.Module()"
    src = f"torch.nn.{module!r}"
    try:
        rebuilt = eval(src, {"torch": nbtorch})   # noqa: S307 - our own repr, checked here
    except Exception:   # noqa: BLE001 - any failure means "cannot be written as code"
        rebuilt = None
    if type(rebuilt) is not type(module):
        raise NotImplementedError(f"to_folder: submodule '{path}' ({type(module).__name__}) "
                                  "cannot be rebuilt from its repr; only nbtorch.nn layers "
                                  "and plain containers can be written out")
    return src


def _init_lines(gm):
    """Statements for ``__init__`` that rebuild gm's submodules, parameters and buffers."""
    from ..nn import Module, Parameter
    lines = []
    for path, mod in gm.named_modules():          # parents come before their children
        if path:
            parent, _, name = path.rpartition(".")
            owner = f"self.{parent}" if parent else "self"
            lines.append(f"setattr({owner}, {name!r}, {_constructor(mod, path)})")
    for path, t in list(gm.named_parameters()) + list(gm.named_buffers()):
        parent, _, name = path.rpartition(".")
        holder = gm.get_submodule(parent) if parent else gm
        if holder is not gm and type(holder) is not Module:
            continue                              # the layer's constructor makes it
        owner = f"self.{parent}" if parent else "self"
        empty = f"torch.empty({list(t.shape)}, dtype={t.dtype!r})"
        if isinstance(t, Parameter):
            lines.append(f"setattr({owner}, {name!r}, torch.nn.Parameter({empty}))")
        else:
            lines.append(f"{owner}.register_buffer({name!r}, {empty})")
    return lines


def _import_lines(gm):
    """Imports for the globals the generated code reads besides torch (math.sqrt, wrap()...)."""
    lines = []
    for name, value in gm.graph.python_code("self").globals.items():
        if name in ("torch", "inf", "nan", "NoneType"):
            continue
        module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
        if module is None or "<" in qualname or "." in qualname:
            raise NotImplementedError(f"to_folder: the code reads {name} ({value!r}), which "
                                      "cannot be imported by name")
        module = "operator" if module == "_operator" else module
        lines.append(f"from {module} import {qualname} as {name}")
    if lines:
        lines.insert(0, "")
    return "\n".join(lines)


def write_folder(gm, folder, module_name):
    """Write `gm` to `folder` (see the module docstring)."""
    import nbtorch
    from .._tensor import Tensor
    os.makedirs(folder, exist_ok=True)
    init = "\n".join("        " + line for line in _init_lines(gm))
    head, _, body = gm.code.partition("def forward(")     # wrap("...") lines stay at the top
    code = "\n".join("    " + line if line.strip() else line
                     for line in ("def forward(" + body).strip("\n").splitlines())
    head = head.strip("\n") + "\n" if head.strip() else ""
    consts = {k: v for k, v in vars(gm).items() if isinstance(v, Tensor)}
    src = f'''"""{module_name}: written by nbtorch.fx GraphModule.to_folder."""
import os

import nbtorch as torch{_import_lines(gm)}
{head}

class {module_name}(torch.nn.Module):
    def __init__(self):
        super().__init__()
{init if init else "        pass"}
        here = os.path.dirname(os.path.abspath(__file__))
        self.load_state_dict(torch.load(os.path.join(here, "state.pt")))
        consts = torch.load(os.path.join(here, "constants.pt"))
        for name, value in consts.items():
            setattr(self, name, value)

{code.rstrip()}
'''
    with open(os.path.join(folder, "module.py"), "w") as f:
        f.write(src)
    with open(os.path.join(folder, "__init__.py"), "w") as f:
        f.write(f"from .module import {module_name}  # noqa: F401\n")
    nbtorch.save(gm.state_dict(), os.path.join(folder, "state.pt"))
    nbtorch.save(consts, os.path.join(folder, "constants.pt"))
