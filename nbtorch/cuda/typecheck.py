"""Compile every registered CUDA kernel to PTX without a GPU: real type checking.

The simulator runs kernels as Python and checks no types, so a kernel can pass
the simulator suite and still fail to compile for a GPU. This module compiles
each kernel family's signatures (``typecheck_signatures()`` in each
``kernels/cuda/<family>.py``) with ``numba.cuda.compile_ptx`` for compute
capability 9.0. That needs NVVM (``pip install "numba-cuda[cu13]"``), no GPU.
Run it in its own process, without ``NUMBA_ENABLE_CUDASIM``::

    python -m nbtorch.cuda.typecheck            # exit 0: all compiled; 1: failures; 3: no NVVM
    python -m nbtorch.cuda.typecheck --shard 1/3     # the second third of the signatures
    python -m nbtorch.cuda.typecheck --quick         # int64 standing in for the narrow ints,
                                                     # float32 for most float16 bodies, and
                                                     # strided signatures for a sample
    python -m nbtorch.cuda.typecheck --narrow        # only those (--quick + --narrow: all)

(The test suite runs it as shards, in parallel where pytest-xdist has workers.)

Without a GPU, Numba's device-function compiler asks the (absent) current
device for its compute capability; this process answers with the target's.
"""
import importlib
import os
import re
import sys
import time
import types

CC = (9, 0)
# `--quick` leaves out the signatures of the narrower integer types (int8/16/32, uint8/16):
# their kernels are the int64 ones' source typed again (make test runs --quick; the
# `slow` test, in make test-all, every signature).
_NARROW_INT = re.compile(r"(?<![a-z])u?int(8|16|32)(?![0-9])")
# ...the float16 signatures of the elementwise bodies but a sample: a half operand is
# loaded as float32, so the body is typed as in its float32 signature; the half loads and
# stores are the same generated code for every body (168 signatures, ~18 s of make test);
# ...and their strided signatures but the same sample: a strided kernel calls the body
# its flat kernel of the same dtype calls, and its index math does not depend on the body
# (183 signatures, 16.6 of the 118 s `--quick` took in one process).
_SAMPLE = "add|exp|where|addcmul|clamp|relu_grad|cexp|cdiv"
_HALF_BODY = re.compile(rf"^(?!({_SAMPLE})\[)\w+\[flat,float16\]$")
_STRIDED_BODY = re.compile(rf"^(?!({_SAMPLE})\[)\w+\[strided,\w+\]$")


def _left_to_slow(label):
    """True for a signature `--quick` leaves out (and `--narrow` checks)."""
    return bool(_NARROW_INT.search(label) or _HALF_BODY.match(label)
                or _STRIDED_BODY.match(label))

def _families():
    """Every kernels/cuda family module of the CUDA table (pointwise is checked apart)."""
    from nbtorch.kernels.cuda.table import FAMILIES
    return FAMILIES


def _fake_current_device(cc):
    """Let device functions compile without a driver (they only read compute_capability)."""
    import numba.cuda.dispatcher as dispatcher
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)


def _probe():
    pass


def _pointwise_bodies():
    from nbtorch.kernels.elementwise import OPS
    return sorted(OPS)


def signatures(only=None):
    """Every (label, python kernel, numba argument types) to compile."""
    from nbtorch.kernels.cuda import gridstride
    yield from gridstride.typecheck_signatures(only or _pointwise_bodies())
    for fam in _families():
        mod = importlib.import_module(f"nbtorch.kernels.cuda.{fam}")
        yield from mod.typecheck_signatures()


def main(argv=None):
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        print("typecheck must run without NUMBA_ENABLE_CUDASIM", file=sys.stderr)
        return 2
    from numba import cuda
    if not cuda.is_available():
        _fake_current_device(CC)
    try:
        cuda.compile_ptx(_probe, (), cc=CC)
    except Exception as e:        # NVVM/NVRTC libraries missing
        print(f"NVVM unavailable ({type(e).__name__}: {str(e).splitlines()[0]}); install "
              f"numba-cuda[cu13]", file=sys.stderr)
        return 3
    args = list(sys.argv[1:] if argv is None else argv)
    quick, narrow = "--quick" in args, "--narrow" in args
    args = [a for a in args if a not in ("--quick", "--narrow")]
    shard, count = 0, 1
    if "--shard" in args:
        i = args.index("--shard")
        shard, count = (int(v) for v in args[i + 1].split("/"))
        del args[i:i + 2]
    todo = [s for s in signatures(args or None)
            if not (quick and _left_to_slow(s[0]))
            and not (narrow and not _left_to_slow(s[0]))]
    todo = todo[len(todo) * shard // count:len(todo) * (shard + 1) // count]   # neighbours
    failures, n, t0 = [], 0, time.perf_counter()                 # share device functions
    for label, fn, argtypes in todo:
        n += 1
        try:
            cuda.compile_ptx(fn, argtypes, cc=CC)
        except Exception as e:
            msg = " ".join(str(e).split())[:400]
            failures.append(f"{label}: {type(e).__name__}: {msg}")
    dt = time.perf_counter() - t0
    for f in failures:
        print("FAIL", f)
    print(f"compiled {n - len(failures)}/{n} kernel signatures for sm_{CC[0]}{CC[1]} "
          f"in {dt:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
