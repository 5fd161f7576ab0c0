"""L-BFGS, as torch.optim.LBFGS (written with tensor ops over one flat vector, as
PyTorch's is: its work is a few dot products and axpys per iteration, not one
elementwise rule a fused kernel could serve)."""
from .._tensor import Tensor
from ..autograd import enable_grad, no_grad
from ..ops.joining import cat
from ._line_search import strong_wolfe
from .optimizer import Optimizer, check_hyper, check_lr

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    """Limited-memory BFGS: quasi-Newton steps from the last `history_size`
    gradient differences, optionally with a strong-Wolfe line search.

    One `step(closure)` runs up to `max_iter` iterations (and `max_eval`
    evaluations of `closure`, which re-evaluates the model and returns the
    loss); it stops early when the largest gradient entry is below
    `tolerance_grad` or the loss or the step changes less than
    `tolerance_change`. Only one parameter group is allowed, and all
    parameters must live on one device. Memory: about
    ``param_bytes * (2 * history_size + 2)``.

    Args:
        params: the parameters to optimize (one group).
        lr: learning rate (default 1).
        max_iter: iterations per step (default 20).
        max_eval: closure evaluations per step (default max_iter * 5 // 4).
        tolerance_grad: stop when max |grad| is at most this (default 1e-7).
        tolerance_change: stop when loss or parameters change less (default 1e-9).
        history_size: number of correction pairs kept (default 100).
        line_search_fn: None (fixed step lr) or ``"strong_wolfe"``.

    Example:
        >>> opt = torch.optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe")
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = loss_fn(model(x), y)
        ...     loss.backward()
        ...     return loss
        >>> opt.step(closure)
    """

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        check_lr(lr)
        check_hyper(0.0 <= lr, f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                        tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                        history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    # ---- the parameters as one flat vector ----------------------------------
    def _numel(self):
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self):
        return cat([p.new_zeros(p.numel()) if p.grad is None
                    else (p.grad.to_dense() if p.grad.is_sparse else p.grad).reshape(-1)
                    for p in self._params], 0)

    def _add_grad(self, step_size, update):
        """p += step_size * (p's slice of `update`) for every parameter."""
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(update[offset:offset + n].view_as(p), alpha=step_size)
            offset += n

    def _clone_param(self):
        return [p.clone().contiguous() for p in self._params]

    def _set_param(self, values):
        for p, v in zip(self._params, values):
            p.copy_(v)

    def _directional_evaluate(self, closure, x, t, d):
        """(loss, flat grad) at x + t d; the parameters are x again afterwards."""
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # ---- one step -----------------------------------------------------------
    def step(self, closure):
        """Run up to max_iter L-BFGS iterations; returns the loss `closure()`
        gave at the start."""
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        def closure_with_grad():
            with enable_grad():
                return closure()

        with no_grad():
            return self._step(closure_with_grad)

    def _step(self, closure):
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        lr = lr.item() if isinstance(lr, Tensor) else lr
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                state["old_dirs"], state["old_stps"], state["ro"] = [], [], []
                state["H_diag"] = 1
            else:
                self._remember(state, flat_grad.sub(prev_flat_grad), d.mul(t),
                               group["history_size"])
                d = self._direction(state, flat_grad, group["history_size"])
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone()
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss
            # the first step is scaled by the gradient's size; then lr itself
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)                    # directional derivative
            if gtd > -tolerance_change:
                break

            evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, evals = strong_wolfe(obj_func, x_init, t, d, loss,
                                                         flat_grad, gtd,
                                                         max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:               # re-evaluate unless this is the last
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max() <= tolerance_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals

            if (n_iter == max_iter or current_evals >= max_eval or opt_cond
                    or d.mul(t).abs().max() <= tolerance_change
                    or abs(loss - prev_loss) < tolerance_change):
                break

        state["d"], state["t"] = d, t
        state["prev_flat_grad"], state["prev_loss"] = prev_flat_grad, prev_loss
        return orig_loss

    @staticmethod
    def _remember(state, y, s, history_size):
        """Keep the correction pair (y = change of gradient, s = step) if the
        curvature y.s is positive enough; the oldest pair goes at history_size."""
        ys = y.dot(s)
        if ys > 1e-10:
            if len(state["old_dirs"]) == history_size:
                for key in ("old_dirs", "old_stps", "ro"):
                    state[key].pop(0)
            state["old_dirs"].append(y)
            state["old_stps"].append(s)
            state["ro"].append(1.0 / ys)
            state["H_diag"] = ys / y.dot(y)          # initial Hessian scale

    @staticmethod
    def _direction(state, flat_grad, history_size):
        """The two-loop recursion: -H grad for the inverse Hessian H the pairs imply."""
        old_dirs, old_stps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        if "al" not in state:
            state["al"] = [None] * history_size
        al = state["al"]
        q = flat_grad.neg()
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q.add_(old_dirs[i], alpha=-al[i])
        r = q * state["H_diag"]
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r.add_(old_stps[i], alpha=al[i] - be_i)
        return r
