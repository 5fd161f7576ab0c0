"""`linearize`, `functionalize` and `replace_all_batch_norm_modules_` of ``torch.func``."""
from ._transforms import jvp

__all__ = ["linearize", "functionalize", "replace_all_batch_norm_modules_"]


def linearize(func, *primals):
    """(func(*primals), jvp_fn): ``jvp_fn(*tangents)`` is the Jacobian-vector product of
    `func` at `primals` (recomputed per call by `jvp`, the same values PyTorch's traced
    linearisation gives). Tangents must match the primals in number and shape."""
    output = func(*primals)

    def jvp_fn(*tangents):
        if len(tangents) != len(primals):
            raise RuntimeError(f"Expected the tangents to have the same argspec as the primals: "
                               f"got {len(tangents)} tangents for {len(primals)} primals")
        for i, (t, p) in enumerate(zip(tangents, primals)):
            if tuple(t.shape) != tuple(p.shape):
                raise RuntimeError(f"tangent:{i} with shape {t.shape} in flattened pytree doesn't "
                                   f"match the shape {p.shape} of the corresponding primal.")
        return jvp(func, primals, tangents)[1]
    return output, jvp_fn


def functionalize(func, *, remove="mutations"):
    """`func` itself: eager nbtorch already gives a mutating function's values, which is all
    functionalization changes for a caller (it matters to graph capture, not results)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument "
                           f"for remove={remove}. Valid options are:\n"
                           f"     remove='mutations': all inplace and out= operators will be "
                           f"removed from the program, and replaced with their out-of-place "
                           f"equivalents.\n     remove='mutations_and_views': In addition to the "
                           f"above, all aliasing operators {{view}} will be replaced with their "
                           f"non-aliasing counterparts, {{view}}_copy.\n")
    return func


def replace_all_batch_norm_modules_(root):
    """Make every batch norm under `root` use batch statistics only (no running stats), so
    it can run under ``vmap``; in place, returns `root`."""
    from ..nn.modules.batchnorm import _BatchNorm
    for m in root.modules():
        if isinstance(m, _BatchNorm):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root
