"""Find the user's line behind a traced operation (for errors, warnings, stack traces)."""
import linecache
import os
import sys

__all__ = ["user_frame", "describe_line", "stack_summary"]

_NBTORCH_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TRACING_DIRS = (os.path.join(_NBTORCH_DIR, "fx"), os.path.join(_NBTORCH_DIR, "jit"))


def _is_internal(filename):
    return filename.startswith(_TRACING_DIRS) or filename.startswith("<eval_with_key")


def user_frame(skip_nbtorch=False):
    """The innermost frame outside nbtorch.fx / nbtorch.jit (outside all nbtorch if asked)."""
    f = sys._getframe(1)
    while f is not None:
        name = os.path.abspath(f.f_code.co_filename)
        internal = name.startswith(_NBTORCH_DIR) if skip_nbtorch else _is_internal(name)
        if not internal:
            return f
        f = f.f_back
    return None


def describe_line(frame):
    """'file.py:12 in forward: if x.sum() > 0:' for a frame, '' for None."""
    if frame is None:
        return ""
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    line = linecache.getline(filename, lineno, frame.f_globals).strip()
    return f"{filename}:{lineno} in {frame.f_code.co_name}" + (f": {line}" if line else "")


def stack_summary(limit=8):
    """The user's part of the stack as 'File "f.py", line 3, in fn' lines (innermost last)."""
    f, lines = user_frame(), []
    while f is not None and len(lines) < limit:
        name = os.path.abspath(f.f_code.co_filename)
        if not name.startswith(_NBTORCH_DIR):
            lines.append(f'  File "{f.f_code.co_filename}", line {f.f_lineno}, in '
                         f'{f.f_code.co_name}\n    '
                         f'{linecache.getline(f.f_code.co_filename, f.f_lineno).strip()}')
        f = f.f_back
    return "\n".join(reversed(lines))
