"""`einsum`: Einstein summation built from views, sums and batched matmuls."""
import math

from ..autograd.function import unrecorded
from .linalg import Matmul, _check_pair, _plain_mm, _plain_product

__all__ = ["einsum"]


# ---- einsum ------------------------------------------------------------------------
# Labels are ints: a letter is its code point (so sorting puts A-Z before a-z, as
# PyTorch does); the dims an ellipsis covers are -1 (last), -2, ... so that they
# line up from the right across operands and broadcast.

def _einsum_labels(term, ndim, i):
    """The labels of operand i's dims from its subscripts `term`."""
    head, ell, tail = term.partition("...")
    if "." in head + tail:
        raise RuntimeError(f"einsum(): found '.' for operand {i} that is not part of any "
                           "ellipsis")
    letters = head + tail
    if not ell and len(letters) != ndim:
        raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                           f"({len(letters)}) does not match the number of dimensions "
                           f"({ndim}) for operand {i} and no ellipsis was given")
    if ell and len(letters) > ndim:
        raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                           f"({len(letters)}) is more than the number of dimensions "
                           f"({ndim}) for operand {i}")
    n_ell = ndim - len(letters)
    return [ord(c) for c in head] + list(range(-n_ell, 0)) * bool(ell) + \
        [ord(c) for c in tail]


def _einsum_output(rhs, inputs):
    """Output labels: explicit `rhs`, or (rhs None) ellipsis dims then once-seen letters."""
    seen = [lab for labels in inputs for lab in labels]
    n_ell = max((-min(labels, default=0) for labels in inputs), default=0)
    if rhs is None:
        once = sorted(lab for lab in set(seen) if lab >= 0 and seen.count(lab) == 1)
        return list(range(-n_ell, 0)) + once
    out = _einsum_labels(rhs.replace("...", ""), len(rhs.replace("...", "")), "output")
    if "..." in rhs:
        head = rhs.partition("...")[0]
        out = out[:len(head)] + list(range(-n_ell, 0)) + out[len(head):]
    for lab in out:
        if lab >= 0 and out.count(lab) > 1:
            raise RuntimeError(f"einsum(): output subscript {chr(lab)} appears more than "
                               "once in the output")
        if lab >= 0 and lab not in seen:
            raise RuntimeError(f"einsum(): output subscript {chr(lab)} does not appear in the "
                               "equation for any input operand")
    return out


def _take_diagonals(t, labels):
    """Merge repeated labels of one operand into their diagonal ('ii->i')."""
    labels = list(labels)
    for lab in list(dict.fromkeys(labels)):
        while labels.count(lab) > 1:
            i = labels.index(lab)
            j = labels.index(lab, i + 1)
            t = t.diagonal(0, i, j)
            labels = [x for k, x in enumerate(labels) if k not in (i, j)] + [lab]
    return t, labels


def _sum_out(t, labels, keep):
    """Sum the dims whose labels are not in `keep`."""
    dims = tuple(i for i, lab in enumerate(labels) if lab not in keep)
    if not dims:
        return t, labels
    return t.sum(dim=dims), [lab for lab in labels if lab in keep]


def _contract(a, la, b, lb, keep, sizes):
    """Contract two operands with one batched matmul; labels of the result."""
    batch = [x for x in la if x in lb and x in keep]
    summed = [x for x in la if x in lb and x not in keep]
    left = [x for x in la if x not in lb]
    right = [x for x in lb if x not in la]

    def arrange(t, labels, order):
        return _expanded(_permuted(t, labels, order), [sizes[x] for x in order])
    nb, nl, ns, nr = (math.prod(sizes[x] for x in g) for g in (batch, left, summed, right))
    a = arrange(a, la, batch + left + summed)
    b = arrange(b, lb, batch + summed + right)
    if nb == 1 and a.device.type == "cpu" and unrecorded(a, b):
        a, b = a.reshape(nl, ns), b.reshape(ns, nr)     # the CPU kernel reduces a batch of
        out = _plain_product(a, b) if _plain_mm(a, b) else Matmul.apply(a, b)   # one so
    else:
        out = Matmul.apply(a.reshape(nb, nl, ns), b.reshape(nb, ns, nr))
    return out.reshape(*[sizes[x] for x in batch + left + right]), batch + left + right


def _permuted(t, labels, order):
    """t with its dims (named by `labels`) in `order`; t itself for the identity order
    where nothing records (a recorded call keeps its view node, as before)."""
    if labels == order and unrecorded(t):
        return t
    return t.permute(*[labels.index(x) for x in order])


def _expanded(t, shape):
    """t.expand(*shape); t itself where that is its shape and nothing records."""
    if list(t._shape) == shape and unrecorded(t):
        return t
    return t.expand(*shape)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _from_sublists(args):
    """(equation, operands) of the sublist format: operand, sublist pairs, then optionally
    the output sublist; ints 0-51 name dims, Ellipsis stands for '...'."""
    def letters(sub):
        out = []
        for s in sub:
            if s is Ellipsis:
                out.append("...")
            elif isinstance(s, int) and 0 <= s < len(_LETTERS):
                out.append(_LETTERS[s])
            else:
                raise ValueError(f"einsum(): subscript in subscript list is not within the "
                                 f"valid range [0, 52), got {s!r}")
        return "".join(out)
    pairs = len(args) // 2
    operands = tuple(args[2 * i] for i in range(pairs))
    inputs = ",".join(letters(args[2 * i + 1]) for i in range(pairs))
    equation = inputs + ("->" + letters(args[-1]) if len(args) % 2 else "")
    return equation, operands


def einsum(equation, *operands):
    """Einstein summation, e.g. ``einsum('bij,bjk->bik', a, b)``.

    Supports explicit and implicit outputs, ellipses (broadcast), repeated
    subscripts in one operand (diagonals, traces) and any number of operands,
    contracted left to right with one batched matmul per pair.

    Example:
        >>> a = nbtorch.ones(2, 3)
        >>> nbtorch.einsum("ij,kj->ik", a, a).shape
        torch.Size([2, 2])
    """
    if not isinstance(equation, str):           # einsum(a, [0, 1], b, [1, 2], [0, 2])
        equation, operands = _from_sublists((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    key = (equation,) + tuple(getattr(x, "_shape", None) for x in operands)
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = _parse(equation, operands)
        if len(_PARSED) >= 512:
            _PARSED.clear()
        _PARSED[key] = parsed
    else:
        for x in operands:
            if x.dtype is not operands[0].dtype:
                _check_pair("einsum", operands[0], x, "bmm")
    inputs, output, sizes = parsed
    return _evaluate(operands, inputs, output, sizes)


_PARSED = {}    # (equation, operand shapes) -> `_parse`'s (labels, output, sizes)


def _parse(equation, operands):
    """The checked labels of each operand, the output labels and every label's size (or
    the RuntimeError that names what is wrong): ~20 us of an 8x16 einsum, done once per
    equation and shapes."""
    for i, c in enumerate(equation):
        arrow_part = equation[i:i + 2] == "->" or equation[i - 1:i + 1] == "->"
        if not ("a" <= c <= "z" or "A" <= c <= "Z" or c in " .," or arrow_part):
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the "
                               "equation string, subscripts must be in [a-zA-Z]")
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation" if len(operands) > len(terms) else
                           "einsum(): fewer operands were provided than specified in the "
                           "equation")
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for x in operands:
        if x.dtype is not operands[0].dtype:
            _check_pair("einsum", operands[0], x, "bmm")
    inputs = [_einsum_labels(term, x.dim(), i) for i, (term, x) in enumerate(zip(terms,
                                                                                   operands))]
    output = _einsum_output(rhs if arrow else None, inputs)
    sizes = {}
    for i, (x, labels) in enumerate(zip(operands, inputs)):
        own = {}
        for lab, n in zip(labels, x._shape):
            if own.setdefault(lab, n) != n:
                raise RuntimeError(f"einsum(): subscript {chr(lab)} is repeated for operand {i} "
                                   f"but the sizes don't match, {n} != {own[lab]}")
            seen = sizes.setdefault(lab, n)
            if n != seen and 1 not in (n, seen):
                name = chr(lab) if lab >= 0 else "..."
                raise RuntimeError(f"einsum(): subscript {name} has size {n} for operand {i} "
                                   f"which does not broadcast with previously seen size {seen}")
            sizes[lab] = max(n, seen)
    return inputs, output, sizes


def _evaluate(operands, inputs, output, sizes):
    """The summation itself: diagonals, sums of labels used once, then one batched matmul
    per pair of operands, left to right."""
    ops = [_take_diagonals(x, labels) for x, labels in zip(operands, inputs)]
    t, labels = ops[0]
    for k in range(1, len(ops) + 1):
        later = set(output).union(*(lb for _, lb in ops[k + 1:]))
        nxt = ops[k][1] if k < len(ops) else []
        t, labels = _sum_out(t, labels, later | set(nxt))
        if k < len(ops):
            b, lb = _sum_out(ops[k][0], nxt, later | set(labels))
            t, labels = _contract(t, labels, b, lb, later, sizes)
    t = _permuted(t, labels, output) if output else t
    return _expanded(t, [sizes[x] for x in output]) if output else t
