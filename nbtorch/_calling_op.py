"""Which public op the user's code called, read off the stack: the name layouts without a
strided buffer (sparse, nested) put in their errors ("'exp' is not supported for nested
tensors"), as PyTorch names the aten op that had no kernel for the layout."""
import os
import sys

__all__ = ["calling_op", "NO_OP"]

NO_OP = "a dense operation"
_PACKAGE = os.path.dirname(os.path.abspath(__file__))                   # nbtorch/
_PLUMBING = {"wrapper", "wrapped", "inner", "<lambda>", "<genexpr>", "<listcomp>", "apply",
             "call", "forward", "compute", "_apply_recorded", "_call_impl", "__call__",
             "_wrapped_call_impl", "method", "fn", "op"}


def _frame_op(f):
    """The op a frame of nbtorch's code stands for: a string `name`/`op` it holds, or the
    kernel name of the elementwise Function `cls` it runs (generated wrappers), else its
    function's name."""
    loc = f.f_locals
    code = f.f_code
    for key in ("name", "op"):
        v = loc.get(key)
        if isinstance(v, str) and v.isidentifier():
            return v
    kernel = getattr(loc.get("cls"), "kernel", None)      # an elementwise op's Function
    if isinstance(kernel, str) and kernel.isidentifier():
        return kernel + ("_" if code.co_name.endswith("_") else "")
    if "<locals>" in getattr(code, "co_qualname", "") or code.co_name in _PLUMBING:
        return None
    return code.co_name


def calling_op(layout_dir):
    """The outermost op-naming frame of the innermost run of nbtorch frames outside
    `layout_dir` (the layout's own package) on the stack, or NO_OP when the user's code
    reached the layout directly."""
    run = []
    f = sys._getframe(1)
    while f is not None:
        path = f.f_code.co_filename
        if not path.startswith(_PACKAGE):
            if run:
                break
        elif not path.startswith(layout_dir) and path != __file__:
            run.append(f)
        f = f.f_back
    for f in reversed(run):
        op = _frame_op(f)
        if op:
            return op[2:-2] if op.startswith("__") and op.endswith("__") else op
    return NO_OP
