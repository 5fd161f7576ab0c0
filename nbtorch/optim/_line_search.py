"""The strong-Wolfe line search of LBFGS (Nocedal & Wright, algorithms 3.5 and 3.6).

Works on a flat search direction `d` and an objective evaluated along it,
``obj_func(x, t, d) -> (loss, flat_grad)`` at ``x + t d``. Directional
derivatives (``g . d``) stay 0-d tensors of the parameters' dtype, as in
PyTorch, so a float32 problem is searched in float32 arithmetic.
"""
import math

__all__ = ["strong_wolfe", "cubic_interpolate"]


def cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2,
    clipped to `bounds` (default: the interval between x1 and x2); the middle
    of the bounds when the cubic has no minimum."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if not d2_square >= 0:
        return (lo + hi) / 2.0
    d2 = d2_square.sqrt() if hasattr(d2_square, "sqrt") else math.sqrt(d2_square)
    if x1 <= x2:
        t = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        t = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(t, lo), hi)


class _Point:
    """One trial step: t, the loss there, the gradient and its slope along d."""
    __slots__ = ("t", "f", "g", "gtd")

    def __init__(self, t, f, g, gtd):
        self.t, self.f, self.g, self.gtd = t, f, g, gtd


def strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                 max_ls=25):
    """Find a step t along d satisfying the strong Wolfe conditions.

    Sufficient decrease ``f(t) <= f + c1 t gtd`` and curvature
    ``|g(t) . d| <= -c2 gtd``. First widens t until a bracket holds a point
    satisfying them (or one is found), then shrinks the bracket by cubic
    interpolation ("zoom"). Gives up after `max_ls` evaluations or when the
    bracket is narrower than `tolerance_change`.

    Returns (loss, flat_grad, t, number of evaluations).
    """
    d_norm = d.abs().max()
    start = _Point(0, f, g.clone(), gtd)
    new = _evaluate(obj_func, x, t, d)
    evals, iters = 1, 0
    prev = start
    bracket, done = None, False
    while iters < max_ls:                                   # bracketing phase
        if new.f > (f + c1 * t * gtd) or (iters > 1 and new.f >= prev.f):
            bracket = [prev, _Point(new.t, new.f, new.g.clone(), new.gtd)]
            break
        if abs(new.gtd) <= -c2 * gtd:
            bracket, done = [new], True
            break
        if new.gtd >= 0:
            bracket = [prev, _Point(new.t, new.f, new.g.clone(), new.gtd)]
            break
        t_next = cubic_interpolate(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd,
                                   bounds=(t + 0.01 * (t - prev.t), t * 10))
        prev = _Point(new.t, new.f, new.g.clone(), new.gtd)
        t = t_next
        new = _evaluate(obj_func, x, t, d)
        evals += 1
        iters += 1
    if iters == max_ls:
        bracket = [start, new]

    insufficient_progress = False
    low, high = (0, 1) if bracket[0].f <= bracket[-1].f else (1, 0)
    while not done and iters < max_ls:                      # zoom phase
        a, b = bracket
        if abs(b.t - a.t) * d_norm < tolerance_change:
            break
        t = cubic_interpolate(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
        t_max, t_min = max(a.t, b.t), min(a.t, b.t)
        margin = 0.1 * (t_max - t_min)
        if min(t_max - t, t - t_min) < margin:             # too close to an end
            if insufficient_progress or t >= t_max or t <= t_min:
                t = t_max - margin if abs(t - t_max) < abs(t - t_min) else t_min + margin
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        new = _evaluate(obj_func, x, t, d)
        evals += 1
        iters += 1
        if new.f > (f + c1 * t * gtd) or new.f >= bracket[low].f:
            bracket[high] = _Point(t, new.f, new.g.clone(), new.gtd)
            low, high = (0, 1) if bracket[0].f <= bracket[1].f else (1, 0)
        else:
            if abs(new.gtd) <= -c2 * gtd:
                done = True
            elif new.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = _Point(t, new.f, new.g.clone(), new.gtd)
    best = bracket[low]
    return best.f, best.g, best.t, evals


def _evaluate(obj_func, x, t, d):
    f, g = obj_func(x, t, d)
    return _Point(t, f, g, g.dot(d))
