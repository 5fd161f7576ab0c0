"""The ATen calls PyTorch makes for a public call, as FlopCounterMode counts them.

PyTorch counts flops below autograd, on the ATen ops a call decomposes into (``F.linear``
becomes ``addmm`` or ``mm``, ``matmul`` becomes ``mm``, ``bmm`` or nothing (``mv``/``dot``
are not counted), ``einsum`` a chain of ``bmm``...), and in backward on the ATen ops the
backward formulas run. nbtorch has no such level, so each function here replays PyTorch's
decomposition on shapes, strides and requires_grad flags: it returns ``(forward, backward)``,
two lists of ``(op name, argument shapes, output shape)``; backward lists what runs when
the call's node does (one ``mm`` per matrix operand that needs a gradient, one
``convolution_backward``...).
"""
from math import prod

__all__ = ["Meta", "meta", "matmul", "linear", "mm", "bmm", "addmm", "baddbmm",
           "tensordot", "multi_dot"]


class Meta:
    """What a decomposition needs of a tensor: shape, strides, requires_grad."""

    __slots__ = ("shape", "strides", "rg")

    def __init__(self, shape, strides=None, rg=False):
        self.shape = tuple(shape)
        self.strides = tuple(strides) if strides is not None else _contiguous(self.shape)
        self.rg = bool(rg)

    def dim(self):
        return len(self.shape)

    def mT(self):
        s, st = list(self.shape), list(self.strides)
        s[-1], s[-2], st[-1], st[-2] = s[-2], s[-1], st[-2], st[-1]
        return Meta(s, st, self.rg)

    def is_contiguous(self):
        if prod(self.shape) == 0:
            return True
        expected = 1
        for n, st in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and st != expected:
                return False
            expected *= n
        return True


def _contiguous(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def meta(t):
    return Meta(t.shape, t.stride(), t.requires_grad)


# -- matrix products ----------------------------------------------------------------------

def mm(a, b, name="mm", extra=()):
    """(m, k) @ (k, n): the op, and in backward one mm per operand needing a gradient."""
    m, k = a.shape
    n = b.shape[1]
    bw = []
    if a.rg:
        bw.append(("mm", ((m, n), (n, k)), (m, k)))
    if b.rg:
        bw.append(("mm", ((k, m), (m, n)), (k, n)))
    return [(name, extra + (a.shape, b.shape), (m, n))], bw


def addmm(bias, a, b):
    return mm(a, b, "addmm", (bias,))


def bmm(a, b, name="bmm", extra=()):
    B, m, k = a.shape
    n = b.shape[2]
    bw = []
    if a.rg:
        bw.append(("bmm", ((B, m, n), (B, n, k)), (B, m, k)))
    if b.rg:
        bw.append(("bmm", ((B, k, m), (B, m, n)), (B, k, n)))
    return [(name, extra + (a.shape, b.shape), (B, m, n))], bw


def baddbmm(bias, a, b):
    return bmm(a, b, "baddbmm", (bias,))


def _should_fold(t1, t2):
    """PyTorch's test for folding the larger operand's batch into rows (an mm, no bmm)."""
    larger = t1.dim() >= t2.dim()
    big = t1 if larger else t2.mT()
    small_dim = t2.dim() if larger else t1.dim()
    if not (big.dim() >= 3 and small_dim <= 2):
        return False
    if (t2.rg if larger else t1.rg):
        return True
    if t1.dim() == 2:
        return False
    if prod(big.shape) == 0:
        return True
    sh, st = big.shape, big.strides
    return all(st[i] == st[i + 1] * sh[i + 1] for i in range(big.dim() - 2))


def _broadcast(a, b):
    out = []
    for i in range(max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        out.append(x if y == 1 else y)
    return tuple(reversed(out))


def matmul(t1, t2):
    """torch.matmul's decomposition (dot and mv count nothing)."""
    d1, d2 = t1.dim(), t2.dim()
    if d1 == 1 and d2 == 1 or d1 == 2 and d2 == 1:
        return [], []
    if d1 == 1 and d2 == 2:
        return mm(Meta((1,) + t1.shape, None, t1.rg), t2)
    if d1 == 2 and d2 == 2:
        return mm(t1, t2)
    if _should_fold(t1, t2):
        transpose = d2 > d1
        a = t2.mT() if transpose else t1
        b = (t1.mT() if d1 == 2 else t1) if transpose else t2
        if b.dim() != 2:
            return [], []                       # folded matrix @ vector: an mv
        return mm(Meta((prod(a.shape[:-1]), a.shape[-1]), None, a.rg), b)
    if d1 == 3 and d2 == 3 and t1.shape[0] != t2.shape[0]:
        if t1.shape[0] == 1 and t1.rg:
            return matmul(Meta(t1.shape[1:], t1.strides[1:], True), t2)
        if t2.shape[0] == 1:            # (PyTorch 2.13 squeezes this one always)
            return matmul(t1, Meta(t2.shape[1:], t2.strides[1:], t2.rg))
    n = t1.shape[-2] if d1 > 1 else 1
    k = t1.shape[-1]
    p = t2.shape[-1] if d2 > 1 else 1
    batch = prod(_broadcast(t1.shape[:-2], t2.shape[:-2]))
    return bmm(Meta((batch, n, k), None, t1.rg), Meta((batch, k, p), None, t2.rg))


def linear(x, w, b):
    """F.linear: addmm on the input flattened to 2-D where PyTorch takes that path, else
    matmul with the transposed weight (bias added elementwise)."""
    wt = w.mT() if w.dim() == 2 else w
    if b is not None:
        if x.dim() == 2:
            return addmm(b.shape, x, wt)
        if x.is_contiguous() and (x.dim() == 3 or len(b.shape) == 1):
            flat = Meta((prod(x.shape[:-1]), x.shape[-1]), None, x.rg)
            return addmm(b.shape, flat, wt)
    return matmul(x, wt)


def tensordot(a, b, dims_a, dims_b):
    """The contracted dims of both operands folded into one mm."""
    k = prod(a.shape[d] for d in dims_a)
    m = prod(s for i, s in enumerate(a.shape) if i not in dims_a)
    n = prod(s for i, s in enumerate(b.shape) if i not in dims_b)
    return mm(Meta((m, k), None, a.rg), Meta((k, n), None, b.rg))


def multi_dot(ts):
    """linalg.multi_dot / chain_matmul: mm's in the cheapest order (PyTorch's)."""
    ts = list(ts)
    if ts[0].dim() == 1:
        ts[0] = Meta((1,) + ts[0].shape, None, ts[0].rg)
    if ts[-1].dim() == 1:
        ts[-1] = Meta(ts[-1].shape + (1,), None, ts[-1].rg)
    fwd, bw = [], []

    def product(a, b):
        f, g = mm(a, b)
        fwd.extend(f)
        bw.extend(g)
        return Meta((a.shape[0], b.shape[1]), None, a.rg or b.rg)
    if len(ts) == 3:
        a, b, c = (t.shape for t in ts)
        cost1 = a[0] * a[1] * b[1] + a[0] * b[1] * c[1]      # (AB)C
        cost2 = b[0] * b[1] * c[1] + a[0] * a[1] * c[1]      # A(BC)
        if cost1 < cost2:
            product(product(ts[0], ts[1]), ts[2])
        else:
            product(ts[0], product(ts[1], ts[2]))
        return fwd, bw
    order = _chain_order([t.shape for t in ts])

    def build(i, j):
        return ts[i] if i == j else product(build(i, order[i][j]), build(order[i][j] + 1, j))
    build(0, len(ts) - 1)
    return fwd, bw


def _chain_order(shapes):
    n = len(shapes)
    p = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split
