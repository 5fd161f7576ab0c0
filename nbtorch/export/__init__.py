"""``torch.export``: a model as one flat graph with its inputs' constraints, saved and run
without its Python class.

    ep = nbtorch.export.export(model, (x,), dynamic_shapes={"x": {0: Dim("batch")}})
    print(ep)                          # the lifted graph, its signature, the ranges
    ep.module()(x2)                    # checked against what the export fixed
    nbtorch.export.save(ep, "model.pt2"); nbtorch.export.load("model.pt2")

Built on jit.trace's graph (see `_export.py` for how dynamic dims are checked without
symbolic shapes). The file is nbtorch's safe archive (the jit.save format plus the
export's input constraints), not PyTorch's .pt2 layout: neither reads the other's.
"""
import os

from ._export import export
from .dynamic_shapes import Dim, DimHint, UserError, dims
from .exported_program import ExportedModule, ExportedProgram, InputMeta
from .graph_signature import (ConstantArgument, ExportGraphSignature, InputKind, InputSpec,
                              OutputKind, OutputSpec, TensorArgument)

__all__ = ["export", "save", "load", "Dim", "DimHint", "dims", "UserError", "ExportedProgram",
           "ExportGraphSignature", "InputKind", "InputSpec", "OutputKind", "OutputSpec",
           "TensorArgument", "ConstantArgument", "ExportedModule"]

_ENTRY = "export"           # the archive entry an exported program adds to jit.save's


def save(ep, f, *, extra_files=None, opset_version=None, pickle_protocol=None):
    """Write ExportedProgram `ep` to path or file `f` (nbtorch's safe archive)."""
    from .. import serialization
    from ..jit._save import archive_of
    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"nbtorch.export.save expects an ExportedProgram, got "
                        f"{type(ep).__name__}")
    archive = archive_of(ep.module(), extra_files)
    archive[_ENTRY] = {"inputs": ep._meta.to_dict(), "parameters": list(ep._parameters),
                       "buffers": list(ep._buffers), "persistent": sorted(ep._persistent)}
    serialization.save(archive, os.fspath(f) if isinstance(f, os.PathLike) else f)


def load(f, *, extra_files=None, expected_opset_version=None, map_location=None):
    """Read what `save` wrote: an ExportedProgram (no model class needed)."""
    from .. import serialization
    from ..jit._save import _FORMAT, _bad, module_from_archive
    path = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<file>")
    archive = serialization.load(f, map_location=map_location)
    if not isinstance(archive, dict) or archive.get("format") != _FORMAT:
        raise _bad(path, "no nbtorch graph in it (an nbtorch.save checkpoint? use "
                         "nbtorch.load)")
    entry = archive.get(_ENTRY)
    if not isinstance(entry, dict):
        raise _bad(path, "no exported program in it (saved by nbtorch.jit.save? use "
                         "nbtorch.jit.load)")
    flat = module_from_archive(archive, path)
    try:
        meta = InputMeta.from_dict(entry["inputs"])
        params = {n: flat.get_parameter(n) for n in entry["parameters"]}
        persistent = set(entry["persistent"])
        buffers = {}
        for n in entry["buffers"]:          # a non-persistent buffer the graph does not
            try:                            # read is not saved
                buffers[n] = flat.get_buffer(n)
            except AttributeError:
                if n in persistent:
                    raise
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise _bad(path, f"bad export entry ({type(e).__name__}: {e})") from None
    if extra_files is not None:
        extra_files.update(archive.get("extra_files", {}))
    return ExportedProgram(flat, meta, params, buffers, persistent, None)
