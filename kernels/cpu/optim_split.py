"""Adam/AdamW updates split over the spinning helpers (`spin_threads.py`) instead of
Numba's OpenMP threads.

An Adam update is bound by its divider, not by memory: per element a square root and two
divisions, as PyTorch's formula has them (`optim_adam.adam_element`); one thread takes
191 us for a 784x512 float32 parameter (0.48 ns an element, 59 GB/s, where a copy streams
at 90+). `optim.PARALLEL_MIN_SIZE` keeps the OpenMP loop for 2^20+ elements only (a
descheduled OpenMP worker stalls its fork-join), so an MLP's updates ran on one core:
the helpers here are the ones every elementwise kernel splits over, claimed chunk by
chunk (a helper that is not scheduled costs the call almost nothing) and judged against
the serial pace like them (`workers.use_helpers`), so a starved machine falls back to
the serial loop.

Each chunk runs `optim_adam._adam_loop` on its range, with the scalars the serial kernel
gets (read from one float64 array, cast to the parameter's dtype in the same place), so
the bits are the serial kernel's. Without amsgrad only (the common case): amsgrad calls
keep the serial/OpenMP pair.
"""
from time import perf_counter

import numpy as np
from numba import carray, njit

from nbtorch.kernels.cpu import loop_threads, optim_adam, spin_threads, workers
from nbtorch.kernels.cpu.optim import _JIT, PARALLEL_MIN_SIZE, _or_unused
from nbtorch.kernels.cpu.optim_adam import _adam_loop

__all__ = ["MIN_SIZE", "adam_step"]

MIN_SIZE = 1 << 14     # elements: ~8 us of serial work, several times the hand-off
# the scalars array: decay, weight_decay, beta1, beta2, eps, step_size, bc2_sqrt, maximize,
# decoupled (flags as 0.0 / 1.0)
_SCALARS = 9


@njit(inline="always", **_JIT)
def _adam_typed(args, count, dtype):
    s = carray(args[4], (_SCALARS,), np.float64)
    param = carray(args[0], (count,), dtype)
    unused = carray(args[0], (0,), dtype)        # max_exp_avg_sq: never touched here
    _adam_loop(param, carray(args[1], (count,), dtype), carray(args[2], (count,), dtype),
               carray(args[3], (count,), dtype), unused, s[0], s[1], s[2], s[3], s[4],
               s[5], s[6], False, s[7] != 0.0, s[8] != 0.0)


def _adam_chunk(args, n, steps, data):
    """ufunc-loop ABI: args = (param, grad, exp_avg, exp_avg_sq, scalars), the scalars'
    step 0; float32 or float64 by the parameter's step."""
    if steps[0] == 4:
        _adam_typed(args, n[0], np.float32)
    else:
        _adam_typed(args, n[0], np.float64)


_STEPS = {item: np.array([item, item, item, item, 0], np.intp) for item in (4, 8)}


def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps,
              weight_decay, step, amsgrad, maximize, decoupled):
    """The CPU kernel of "adam_step" (`optim_adam.adam_step`'s arguments): over the helpers
    where they pay, else `optim_adam.adam_step` (serial, or OpenMP from 2^20 elements)."""
    n = param.size
    if (amsgrad or n < MIN_SIZE or workers.NUM_THREADS < 2 or not spin_threads.SUPPORTED
            or n >= PARALLEL_MIN_SIZE):
        return optim_adam.adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr,
                                    beta1, beta2, eps, weight_decay, step, amsgrad, maximize,
                                    decoupled)
    decay, step_size, bc2_sqrt = optim_adam.adam_scalars(
        float(lr), float(beta1), float(beta2), float(weight_decay), float(step), decoupled)
    address = loop_threads.cfunc_address(_adam_chunk)
    key = (address, param.itemsize, n.bit_length())
    values = (decay, float(weight_decay), float(beta1), float(beta2), float(eps), step_size,
              bc2_sqrt)
    flags = (bool(maximize), bool(decoupled))
    if workers.use_helpers(key):
        t = perf_counter()
        if spin_threads.run_arrays(address, (param, grad, exp_avg, exp_avg_sq,
                                             np.array(values + flags, np.float64)),
                                   _STEPS[param.itemsize], n, workers.NUM_THREADS,
                                   loop_threads.ALIGN):
            workers.record_parallel(key, perf_counter() - t, n)
            return
    t = perf_counter()
    optim_adam.adam_step_serial(param, grad, exp_avg, exp_avg_sq, _or_unused(None, param),
                                *values, False, *flags)          # amsgrad False
    workers.record_serial(key, perf_counter() - t, n)
