"""`nbtorch.random` (PyTorch's `torch.random`): seeding and the random state.

The generator lives in `nbtorch/_generator.py`; the sampling ops (`rand`,
`randn`, ...) in `nbtorch/ops/random.py`, exported as `nbtorch.rand` etc.
CPU streams give PyTorch's numbers (MT19937); ``use_generator("pcg64")`` switches
to NumPy's PCG64 streams, nbtorch's faster first engine.
"""
from ._generator import (Generator, default_generator, fork_rng, get_rng_state, initial_seed,
                         manual_seed, seed, set_rng_state, use_generator)

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "default_generator", "fork_rng", "use_generator"]
