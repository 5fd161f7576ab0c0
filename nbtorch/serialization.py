"""`nbtorch.save` / `nbtorch.load`: PyTorch's checkpoint format, loaded without running code.

`save` writes PyTorch's zip format (see `_torch_pickle_write.py`), so
``torch.load(path, weights_only=True)`` reads an nbtorch checkpoint of tensors and state
dicts, and PyTorch's own checkpoints load here. Saving writes a temporary file beside
the target and renames it into place, so a crash mid-save never destroys the previous
checkpoint. `load` unpickles through an allow-list (`_torch_pickle.py`): tensors,
parameters, NumPy arrays, containers and primitives come back as what they were; any
other global in the pickle is refused, whatever ``weights_only`` says, except the classes
and functions the user allows with `add_safe_globals` / `safe_globals` (PyTorch's API for
its weights_only loader). Files in nbtorch's first format (``nbtorch.json`` + ``.npy``
records) still load.
"""
import os
import tempfile
import zipfile

from ._tensor import Tensor

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals"]

_SAFE_GLOBALS = {}      # "module.qualname" -> the object a checkpoint may name


def add_safe_globals(safe_globals):
    """Allow checkpoints to name these classes/functions (objects, or (object, "module.name")
    pairs): their instances load (built by the class, as pickle does) instead of being
    refused. Only allow what you trust: loading may call them."""
    for entry in safe_globals:
        obj, name = entry if isinstance(entry, tuple) else (entry, None)
        if name is None:
            name = f"{obj.__module__}.{getattr(obj, '__qualname__', obj.__name__)}"
        _SAFE_GLOBALS[name] = obj


def get_safe_globals():
    """The objects `add_safe_globals` allowed."""
    return list(_SAFE_GLOBALS.values())


def clear_safe_globals():
    _SAFE_GLOBALS.clear()


class safe_globals:
    """``with safe_globals([Cls]):`` allow them for the duration of the block."""

    def __init__(self, safe_globals):
        self.entries = list(safe_globals)

    def __enter__(self):
        self.saved = dict(_SAFE_GLOBALS)
        add_safe_globals(self.entries)

    def __exit__(self, *exc):
        _SAFE_GLOBALS.clear()
        _SAFE_GLOBALS.update(self.saved)


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save tensors, NumPy arrays and nested containers of them (and primitives) to a path
    or binary file object, in PyTorch's format.

    Example:
        >>> nbtorch.save({"model": model.state_dict(), "epoch": 3}, "ckpt.pt")
    """
    from ._torch_pickle_write import archive_prefix, write_torch_zip
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".nbtorch-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                write_torch_zip(obj, out, archive_prefix(path))
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    else:
        write_torch_zip(obj, f, archive_prefix(None))


def _placer(map_location):
    """``place(tensor, saved_location)``: where `map_location` sends a loaded storage.

    map_location: None (as saved), a device string/object, a dict {saved: new} or a
    callable(tensor, saved_location) -> tensor (None keeps it where it is).
    """
    def place(t, saved):
        if map_location is None:
            dev = saved
        elif callable(map_location):
            r = map_location(t, saved)
            return r if isinstance(r, Tensor) else t
        elif isinstance(map_location, dict):
            dev = map_location.get(saved, saved)
        else:
            dev = str(map_location)
        dev = str(dev)
        if dev == "cpu" or dev.startswith("cpu:"):
            return t
        if dev.startswith("cuda"):
            from . import cuda
            if not cuda.is_available():
                raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                                   "torch.cuda.is_available() is False. If you are running on "
                                   "a CPU-only machine, please use torch.load with "
                                   "map_location=torch.device('cpu') to map your storages to "
                                   "the CPU.")
        return t.to(dev)
    return place


_LEGACY_MAGIC = b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19"   # pickled 0x1950a86a20f9469cfc6c


def _head(f):
    """The first bytes of a path or (seekable) file object; b'' when unreadable."""
    try:
        if isinstance(f, (str, os.PathLike)):
            with open(f, "rb") as fh:
                return fh.read(16)
        f.seek(0)
        return f.read(16)
    except (OSError, AttributeError, ValueError):
        return b""


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Load what `save` wrote, or a PyTorch zip checkpoint, executing no code.

    map_location: None (as saved), a device string/object, a dict {saved: new} or a
    callable(tensor, saved_location) -> tensor.
    """
    name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<file>")
    try:
        z = zipfile.ZipFile(f if not isinstance(f, (str, os.PathLike)) else os.fspath(f))
    except zipfile.BadZipFile as e:
        if _head(f).startswith(_LEGACY_MAGIC):
            raise RuntimeError(f"{name} is in PyTorch's legacy (pre-1.6, non-zip) format, which "
                               "only an unrestricted unpickler can read; nbtorch does not. Load "
                               "it in PyTorch and save it again with torch.save (the zip "
                               "format is the default)") from None
        raise RuntimeError(f"{name} is not a valid nbtorch/PyTorch checkpoint (truncated or "
                           f"corrupted: {e})") from None
    import pickle
    import zlib
    place = _placer(map_location)
    with z:
        try:
            names = z.namelist()
            if "nbtorch.json" in names:
                from ._nbtorch_v1 import load_v1
                return load_v1(z, name, place)
            pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") <= 1]
            if pkl:
                from ._torch_pickle import load_torch_zip
                return load_torch_zip(z, pkl[0], place)
            raise RuntimeError(f"{name} is not an nbtorch or PyTorch checkpoint")
        except pickle.UnpicklingError:
            raise
        except (zipfile.BadZipFile, KeyError, EOFError, ValueError, TypeError, IndexError,
                zlib.error, pickle.PickleError) as e:
            raise RuntimeError(f"{name} is truncated or corrupted: {e}") from None
