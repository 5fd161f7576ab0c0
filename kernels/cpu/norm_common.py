"""What the normalisation kernels (norm.py, layer_norm.py) share: when to go parallel."""
import numba

from . import openmp

# Below this many input elements the serial variant wins on 2 cores
# (one prange launch costs ~2 us; see DESIGN.md).
PARALLEL_MIN_ELEMENTS = 32768

FAST = {"reassoc"}      # reassociation alone vectorises the sums; NaN still propagates


def use_parallel(n_elements, n_tasks):
    """True when a kernel of ``n_elements`` split into ``n_tasks`` pays to run in parallel
    (never in a child forked after OpenMP's threads started: see openmp.py)."""
    return (n_elements >= PARALLEL_MIN_ELEMENTS and n_tasks > 1 and openmp.USABLE
            and numba.get_num_threads() > 1)
