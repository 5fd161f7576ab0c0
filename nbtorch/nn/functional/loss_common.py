"""Helpers the loss modules share: reductions (by PyTorch's node names), the deprecated
size_average/reduce flags, and PyTorch's broadcast warning and type names."""
import warnings

from ...autograd.function import renamed

_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
               "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
               "bool": "Bool", "bfloat16": "BFloat16"}


def _type_name(t):
    return _TYPE_NAMES.get(t.dtype.name, t.dtype.name)


def _legacy_reduction(size_average, reduce, reduction):
    """The reduction string implied by the deprecated size_average/reduce flags."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if (size_average and reduce) else ("sum" if reduce else "none")
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", stacklevel=3)
    return ret


def _check_reduction(reduction, extra=()):
    if reduction not in ("mean", "sum", "none") + tuple(extra):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss, reduction, node=None):
    """'mean'/'sum' of `loss`; `node` names that reduction's node as PyTorch's fused
    loss prints it (MseLossBackward0), with the same Mean/Sum formula."""
    _check_reduction(reduction)
    if reduction == "none":
        return loss
    if node is None:
        return loss.mean() if reduction == "mean" else loss.sum()
    return _named_reduction(node, reduction == "mean")(loss)


def _named_reduction(node, mean):
    """`loss.mean()` (or `.sum()`) through a Mean/Sum whose node prints `node`."""
    from ...ops import reduction as r
    if mean:
        return lambda x: renamed(r.Mean, node).apply(
            x, r.normalize_dims(None, x.dim()), False, r._float_dtype_for("mean", x, None),
            True)
    return lambda x: renamed(r.Sum, node).apply(
        x, r.normalize_dims(None, x.dim()), False, r._sum_dtype(x, None))


def _warn_size(input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)
