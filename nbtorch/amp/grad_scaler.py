"""`GradScaler`: loss scaling for float16 training, with PyTorch's dynamic schedule.

`scale(loss)` multiplies by the scale before backward so small float16 gradients
do not flush to zero; `step(optimizer)` divides the gradients back (`unscale_`),
checks them for inf/NaN and skips the optimizer's step if any; `update()` halves
the scale after such a step (`backoff_factor`) and doubles it after
`growth_interval` clean steps in a row (`growth_factor`). Works on CPU and CUDA
tensors; ``enabled=False`` makes every method a pass-through.

Example:
    >>> scaler = nbtorch.amp.GradScaler("cpu")
    >>> scaler.scale(loss).backward()
    >>> scaler.step(opt)
    >>> scaler.update()
"""
import warnings
from collections import abc, defaultdict
from enum import Enum

import numpy as np

__all__ = ["OptState", "GradScaler"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    """Multiply `grads` by `inv_scale` in place; `found_inf` becomes 1 if any holds an
    inf or NaN (PyTorch's _amp_foreach_non_finite_check_and_unscale_)."""
    import nbtorch
    for g in grads:
        bad = nbtorch.logical_not(nbtorch.isfinite(g)).any().to(found_inf.dtype)
        nbtorch.maximum(found_inf, bad, out=found_inf)
        g.mul_(inv_scale)


def _update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                   growth_interval):
    """PyTorch's _amp_update_scale_: back off after an inf, grow after
    `growth_interval` clean steps (the product rounded to float32 once)."""
    if found_inf.item():
        scale.fill_(float(np.float32(scale.item() * backoff_factor)))
        growth_tracker.fill_(0)
        return
    successful = growth_tracker.item() + 1
    if successful == growth_interval:
        new_scale = np.float32(scale.item() * growth_factor)
        if np.isfinite(new_scale):
            scale.fill_(float(new_scale))
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)


class GradScaler:
    """Dynamic loss scaling (`torch.amp.GradScaler`)."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not "
                              "available.  Disabling.", stacklevel=2)
                self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if not backoff_factor < 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None              # made on the device of the first scaled output
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) "
               "earlier in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        import nbtorch
        self._scale = nbtorch.full((), self._init_scale, dtype=nbtorch.float32, device=dev)
        self._growth_tracker = nbtorch.full((), self._init_growth_tracker,
                                            dtype=nbtorch.int32, device=dev)

    def scale(self, outputs):
        """`outputs` (a tensor or nested lists/tuples of them) times the scale."""
        from .._tensor import Tensor
        if not self._enabled:
            return outputs

        def apply_scale(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(device=val.device)
            if isinstance(val, abc.Iterable):
                scaled = map(apply_scale, val)
                return type(val)(scaled) if isinstance(val, (list, tuple)) else scaled
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        """Unscale the optimizer's gradients, grouped by device; the found-inf flags."""
        import nbtorch
        groups = defaultdict(list)
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                if not allow_fp16 and param.grad.dtype is nbtorch.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                groups[param.grad.device].append(param.grad)
        found = {}
        with nbtorch.no_grad():
            for device, grads in groups.items():
                found[device] = found_inf if device == found_inf.device else found_inf.to(device)
                _non_finite_check_and_unscale_(grads, found[device],
                                               inv_scale.to(device))
        return found

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale (once per step), e.g. before
        clipping them."""
        import nbtorch
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = nbtorch.full((), 0.0, dtype=nbtorch.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf,
                                                             False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done already) and run ``optimizer.step`` unless a gradient
        holds an inf or NaN; returns what step returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Set the scale for the next iteration: `new_scale`, or the dynamic rule."""
        if not self._enabled:
            return
        scale, growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor "
                          "or torch.FloatTensor with requires_grad=False.")
                if (new_scale.device.type != self._device or new_scale.numel() != 1
                        or new_scale.requires_grad):
                    raise AssertionError(reason)
                scale.copy_(new_scale)
        else:
            found_infs = [f.to(device=scale.device)
                          for state in self._per_optimizer_states.values()
                          for f in state["found_inf_per_device"].values()]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found_infs[0]
            for f in found_infs[1:]:
                combined = combined + f
            _update_scale_(scale, growth_tracker, combined, self._growth_factor,
                           self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    # ---- accessors and state -------------------------------------------------------------
    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return (self._init_growth_tracker if self._growth_tracker is None
                    else int(self._growth_tracker.item()))
        return 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval, _growth_tracker
        (empty when disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor,
                    "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the "
                                     "beginning of an iteration, or at the end after "
                                     "scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
