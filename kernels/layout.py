"""Layout helpers shared by the CPU and CUDA launchers (plain Python, no Numba)."""

__all__ = ["merge_dims"]


def merge_dims(shape, strides_list):
    """Drop size-1 dims and merge neighbours that are contiguous in every stride set.

    Works for strides in elements or bytes. Returns (shape, [strides per array]) as
    tuples with at least one dim, so a kernel's index math runs once per merged row.
    """
    dims = [i for i, s in enumerate(shape) if s != 1]
    if not dims:
        return (1,), [(0,) for _ in strides_list]
    out_shape = [shape[dims[0]]]
    out_strides = [[st[dims[0]]] for st in strides_list]
    for i in dims[1:]:
        n = shape[i]
        if all(o[-1] == st[i] * n for o, st in zip(out_strides, strides_list)):
            out_shape[-1] *= n
            for o, st in zip(out_strides, strides_list):
                o[-1] = st[i]
        else:
            out_shape.append(n)
            for o, st in zip(out_strides, strides_list):
                o.append(st[i])
    return tuple(out_shape), [tuple(o) for o in out_strides]
