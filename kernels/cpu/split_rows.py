"""Row kernels split by ranges of rows over the spinning helpers (`spin_threads.py`).

A reduction or normalisation over contiguous rows (inner == 1: `sum(dim=-1)`, softmax
over the last dim) is a ufunc-ABI `cfunc` over rows whose operands are (a, int params,
float params, out); a range of rows computes exactly what the serial row kernel computes
for them, so the split gives the serial values. Kinds of call whose split does not pay
run serially (`workers.use_helpers`, per kind and size class). Columns (inner > 1) are
not split: two threads each taking half of every row of a 1024x512 sum(0) took 116-166 us
against 53-61 serial on the 2-core EPYC.
"""
import numpy as np

from . import loop_threads, spin_threads, workers

__all__ = ["SPIN_MIN_NUMEL", "splits_rows", "run_rows_split"]



# Row kernels over at least this many elements split over the helpers (sum, softmax).
SPIN_MIN_NUMEL = 1 << 15


def splits_rows(a3, out2):
    """Whether a float32/float64 (outer, n, 1) input of SPIN_MIN_NUMEL+ elements (outer
    >= 2, C-contiguous in and out) may be split by rows over the spinning helpers."""
    return (a3.size >= SPIN_MIN_NUMEL and a3.shape[2] == 1 and a3.shape[0] >= 2
            and workers.NUM_THREADS > 1 and spin_threads.SUPPORTED
            and a3.dtype.char in "fd" and a3.flags.c_contiguous and out2.flags.c_contiguous
            and out2.dtype == a3.dtype)


_PLANS = {}     # (name, shape, dtype char, iparams, fparams, out step) -> (key, ip, fp, steps)


def run_rows_split(name, wrappers, a3, out2, iparams, fparams, serial, *serial_args):
    """Run the rows loop wrappers[dtype] over the rows of a3 (outer, n, 1) on this
    thread and the spinning helpers while that pays (`workers.use_helpers`, per kind
    and size class), else `serial(*serial_args)`: the same values either way.
    iparams/fparams: tuples, made arrays once per plan."""
    outer, n = a3.shape[0], a3.shape[1]
    char = a3.dtype.char
    out_step = out2.size // outer * out2.itemsize
    pkey = (name, a3.shape, char, iparams, fparams, out_step)
    plan = _PLANS.get(pkey)
    if plan is None:
        if len(_PLANS) > 256:
            _PLANS.clear()
        plan = _PLANS[pkey] = ((name, char, a3.size.bit_length()),
                               np.array(iparams, np.int64), np.array(fparams, np.float64),
                               np.array([n * a3.itemsize, 0, 0, out_step], np.intp))
    key, ip, fp, steps = plan
    if not workers.use_helpers(key):
        return workers.timed(workers.record_serial, key, a3.size, serial, *serial_args)
    bases, _ = loop_threads.operand_pointers((a3.reshape(-1), ip, fp, out2.reshape(-1)))
    workers.timed(workers.record_parallel, key, a3.size, _split, loop_threads.cfunc_address(wrappers[char]),
                  bases, steps, outer, serial, serial_args)


def _split(address, bases, steps, count, serial, serial_args):
    if not spin_threads.run(address, bases, steps, count, workers.NUM_THREADS, 1):
        serial(*serial_args)
