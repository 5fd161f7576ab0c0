"""`nbtorch.random` (PyTorch's `torch.random`): seeding and the random state.

The generator lives in `nbtorch/_generator.py`; the sampling ops (`rand`,
`randn`, ...) in `nbtorch/ops/random.py`, exported as `nbtorch.rand` etc.
"""
from ._generator import (Generator, default_generator, fork_rng, get_rng_state, initial_seed,
                         manual_seed, seed, set_rng_state)

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "default_generator", "fork_rng"]
