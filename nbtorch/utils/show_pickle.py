"""torch.utils.show_pickle: print what a pickle holds without running any of it.

``python -m nbtorch.utils.show_pickle model.pt@archive/data.pkl`` (a member of a zip
archive, e.g. a ``torch.save`` file; ``model.pt@*/data.pkl`` takes the first member the
glob matches) or ``... file.pkl`` (a plain pickle). Classes are never imported: each
appears as ``module.Name(args)`` (`FakeObject`), storages as ``pers.obj(...)``.
"""
import fnmatch
import pickle
import pprint
import struct
import sys
import zipfile

__all__ = ["FakeObject", "FakeClass", "DumpUnpickler", "main"]


class FakeObject:
    """An object the pickle would have built: its class's name, args and state."""

    def __init__(self, module, name, args):
        self.module, self.name, self.args = module, name, args
        self.state = None

    def __repr__(self):
        state = "" if self.state is None else f"(state={self.state!r})"
        return f"{self.module}.{self.name}{self.args!r}{state}"

    def __setstate__(self, state):
        self.state = state

    @staticmethod
    def pp_format(printer, obj, stream, indent, allowance, context, level):
        """pprint's layout for a FakeObject: its args or state nested and indented."""
        if not obj.args and obj.state is None:
            stream.write(repr(obj))
        elif obj.state is None:
            stream.write(f"{obj.module}.{obj.name}")
            printer._format(obj.args, stream, indent + 1, allowance + 1, context, level)
        elif not obj.args:
            stream.write(f"{obj.module}.{obj.name}()(state=\n")
            indent += printer._indent_per_level
            stream.write(" " * indent)
            printer._format(obj.state, stream, indent, allowance + 1, context, level + 1)
            stream.write(")")
        else:
            stream.write(repr(obj))


class FakeClass:
    """Stands for a class the pickle names: calling it makes a FakeObject."""

    def __init__(self, module, name):
        self.module, self.name = module, name
        self.__new__ = self.fake_new

    def __repr__(self):
        return f"{self.module}.{self.name}"

    def __call__(self, *args):
        return FakeObject(self.module, self.name, args)

    def fake_new(self, *args):
        return FakeObject(self.module, self.name, args[1:])


class DumpUnpickler(pickle._Unpickler):
    """An unpickler that imports nothing (every global is a FakeClass, every persistent
    id a FakeObject); `catch_invalid_utf8` shows bad strings instead of failing."""

    def __init__(self, file, *, catch_invalid_utf8=False, **kwargs):
        super().__init__(file, **kwargs)
        self.catch_invalid_utf8 = catch_invalid_utf8

    def find_class(self, module, name):
        return FakeClass(module, name)

    def persistent_load(self, pid):
        return FakeObject("pers", "obj", (pid,))

    dispatch = dict(pickle._Unpickler.dispatch)

    def load_binunicode(self):
        strlen, = struct.unpack("<I", self.read(4))
        if strlen > sys.maxsize:
            raise pickle.UnpicklingError("String too long.")
        data = self.read(strlen)
        try:
            obj = str(data, "utf-8", "surrogatepass")
        except UnicodeDecodeError as exn:
            if not self.catch_invalid_utf8:
                raise
            obj = FakeObject("builtin", "UnicodeDecodeError", (str(exn),))
        self.append(obj)
    dispatch[pickle.BINUNICODE[0]] = load_binunicode

    @classmethod
    def dump(cls, in_stream, out_stream):
        """Unpickle `in_stream` and pretty-print it to `out_stream`; return the value."""
        value = cls(in_stream).load()
        pprint.pprint(value, stream=out_stream)
        return value


_USAGE = """usage: show_pickle PICKLE_FILE
  PICKLE_FILE can be any of:
    path to a pickle file
    file.zip@member.pkl
    file.zip@*/pattern.*
      (shell glob pattern for members)
      (only first match will be shown)
"""


def main(argv, output_stream=None):
    """``main(["show_pickle", "file.pt@archive/data.pkl"])``; returns 2 on bad usage."""
    if len(argv) != 2:
        if output_stream is not None:
            raise ValueError("Pass argv of length 2.")
        sys.stderr.write(_USAGE)
        return 2
    fname = argv[1]
    if "@" not in fname:
        with open(fname, "rb") as handle:
            DumpUnpickler.dump(handle, output_stream)
        return None
    zfname, mname = fname.split("@", 1)
    with zipfile.ZipFile(zfname) as zf:
        names = [mname] if "*" not in mname else \
            [i.filename for i in zf.infolist() if fnmatch.fnmatch(i.filename, mname)][:1]
        if not names:
            raise FileNotFoundError(f"Could not find member matching {mname} in {zfname}")
        with zf.open(names[0]) as handle:
            DumpUnpickler.dump(handle, output_stream)
    return None


if __name__ == "__main__":
    pprint.PrettyPrinter._dispatch[FakeObject.__repr__] = FakeObject.pp_format
    sys.exit(main(sys.argv))
