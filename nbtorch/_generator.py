"""The random state: `Generator` and the default generator every sampler draws from.

Streams come from NumPy's PCG64 bit generator, seeded like PyTorch's API
(`manual_seed`, `Generator().manual_seed(s)`, `get_state`/`set_state`), so a
seed reproduces a run. CPU samplers draw from the stream itself; CUDA's Philox
kernels take one 64-bit key from it per call. Below the op layer: the sampling
ops (`nbtorch/ops/random.py`) and the public `nbtorch.random` module use it.
"""
import numpy as np

from ._device import to_device
from ._tensor import wrap

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "fork_rng", "rng_of"]


class Generator:
    """A random stream; ``Generator().manual_seed(0)`` makes it reproducible."""

    def __init__(self, device="cpu"):
        self.device = to_device(device)
        self._seed = 67280421310721
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed):
        seed = _check_seed(seed)
        self._seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        s = int(np.random.SeedSequence().entropy) & 0xFFFF_FFFF_FFFF_FFFF
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        import json
        state = json.dumps(self._rng.bit_generator.state).encode()
        return wrap(np.frombuffer(state, np.uint8).copy())

    def set_state(self, state):
        import json
        from . import _dtype
        if getattr(state, "dtype", None) is not _dtype.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        self._rng.bit_generator.state = json.loads(bytes(state.numpy()).decode())
        return self


    def clone_state(self):
        """A new generator on the same device, at this one's seed and state."""
        g = Generator(self.device)
        g._seed = self._seed
        return g.set_state(self.get_state())

    def graphsafe_get_state(self):
        raise NotImplementedError("graphsafe_get_state is not supported in this Generator")

    def graphsafe_set_state(self, state):
        raise NotImplementedError("graphsafe_set_state is not supported in this Generator")

    def get_offset(self):
        raise RuntimeError(f"{self.device.type.upper()} Generator does not use offset")

    def set_offset(self, offset):
        raise RuntimeError(f"{self.device.type.upper()} Generator does not use offset")

    def __reduce__(self):
        # pickles (and deep-copies) with its device, seed and state, as PyTorch's does
        return (_rebuild_generator, (str(self.device), self._seed, self.get_state()))


def _rebuild_generator(device, seed, state):
    g = Generator(device)
    g._seed = seed
    return g.set_state(state)


def _check_seed(seed):
    """PyTorch's checks on a seed: an integer (or integer tensor) in [-2**63, 2**64)."""
    import builtins
    if hasattr(seed, "item") and not isinstance(seed, builtins.int):
        seed = seed.item()
    if isinstance(seed, builtins.bool) or not isinstance(seed, (builtins.int, np.integer)):
        raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
    if not -2 ** 63 <= seed < 2 ** 64:
        raise ValueError("Overflow when unpacking long long")
    return seed


default_generator = Generator()


def manual_seed(seed):
    """Seed the default generator (and CUDA's, which shares it)."""
    default_generator.manual_seed(seed)
    return default_generator


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


class fork_rng:
    """Restore the default generator's state on exit."""

    def __init__(self, devices=None, enabled=True):
        self.enabled = enabled

    def __enter__(self):
        self._state = get_rng_state() if self.enabled else None

    def __exit__(self, *exc):
        if self._state is not None:
            set_rng_state(self._state)
        return False


def rng_of(generator):
    """The NumPy stream of `generator` (the default generator's if None)."""
    return (generator or default_generator)._rng
