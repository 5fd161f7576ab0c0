"""What the normalisation kernels (norm.py, layer_norm.py) share: when to go parallel."""
import numba

from . import openmp

# Below this many input elements the serial variant wins on 2 cores. One prange launch
# cost ~2 us with spinning workers (DESIGN.md); with Numba's workers sleeping between
# regions (nbtorch/_threads.py) it costs ~60 us: layer_norm forward+backward serial vs
# parallel (256, 128) 111 vs 272 us, (1024, 128) 277 vs 402 (a Transformer block's),
# (2048, 256) 913 vs 887, (4096, 512) 3303 vs 2578; batch_norm 16x16x16x16 116 vs 385,
# 32x32x16x16 367 vs 562, 32x64x32x32 2176 vs 1667.
PARALLEL_MIN_ELEMENTS = 1 << 19

FAST = {"reassoc"}      # reassociation alone vectorises the sums; NaN still propagates


def use_parallel(n_elements, n_tasks):
    """True when a kernel of ``n_elements`` split into ``n_tasks`` pays to run in parallel
    (never in a child forked after OpenMP's threads started: see openmp.py)."""
    return (n_elements >= PARALLEL_MIN_ELEMENTS and n_tasks > 1 and openmp.USABLE
            and numba.get_num_threads() > 1)
