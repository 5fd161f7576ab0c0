"""The random state: `Generator` and the default generator every sampler draws from.

A CPU stream is PyTorch's: MT19937 seeded as PyTorch seeds it, with PyTorch's
transforms in the samplers (`kernels/cpu/random.py`), so after
``manual_seed(s)`` every sampler gives PyTorch's CPU numbers, and
``get_state()`` is PyTorch's 5056-byte state (``torch.set_rng_state`` reads it,
and this reads ``torch.get_rng_state()``). NumPy's PCG64 streams, nbtorch's first
engine, stay selectable: ``nbtorch.random.use_generator("pcg64")`` (or the
environment variable ``NBTORCH_GENERATOR=pcg64``) - faster for normals, but not
PyTorch's numbers. CUDA's Philox kernels take one 64-bit key from the stream per
call. Below the op layer: the sampling ops (`nbtorch/ops/random.py`) and the
public `nbtorch.random` module use it.
"""
import os

import numpy as np

from ._device import to_device
from ._tensor import wrap

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state", "fork_rng", "rng_of", "use_generator"]

_DEFAULT_SEED = 67280421310721
_ENGINES = ("mt19937", "pcg64")
_engine_kind = os.environ.get("NBTORCH_GENERATOR", "mt19937").strip().lower() or "mt19937"
if _engine_kind not in _ENGINES:
    raise ValueError(f"NBTORCH_GENERATOR must be one of {_ENGINES}, got {_engine_kind!r}")

# PyTorch's CPUGeneratorImplState, byte for byte (little-endian, C padding).
_TORCH_STATE = np.dtype([
    ("seed", "<u8"), ("left", "<i4"), ("seeded", "<i4"), ("next", "<u8"),
    ("key", "<u8", 624), ("normal_x", "<f8"), ("normal_y", "<f8"), ("normal_rho", "<f8"),
    ("normal_is_valid", "<i4"), ("_pad", "<i4"), ("float_normal", "<f4"),
    ("float_normal_is_valid", "u1"), ("_pad2", "u1", 3)])
assert _TORCH_STATE.itemsize == 5056


def _new_engine(kind, seed):
    if kind == "pcg64":
        return np.random.Generator(np.random.PCG64(seed))
    from .kernels.cpu.mt19937 import seeded
    return seeded(seed)


class Generator:
    """A random stream; ``Generator().manual_seed(0)`` makes it reproducible."""

    def __init__(self, device="cpu"):
        self.device = to_device(device)
        self._seed = _DEFAULT_SEED
        self._kind = _engine_kind
        self._engine = None             # seeded on first use (a 624-step recurrence)

    @property
    def _rng(self):
        """The engine the samplers draw from (an MT19937State or a NumPy Generator)."""
        engine = self._engine
        if engine is None:
            engine = self._engine = _new_engine(self._kind, self._seed)
        return engine

    def manual_seed(self, seed):
        _not_compiling("manual_seed")
        seed = _check_seed(seed)
        self._seed = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
        self._kind = _engine_kind
        self._engine = None
        return self

    def seed(self):
        s = int(np.random.SeedSequence().entropy) & 0xFFFF_FFFF_FFFF_FFFF
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """The stream's state as a uint8 tensor: PyTorch's layout for MT19937 streams,
        NumPy's bit-generator state as JSON for PCG64 ones."""
        rng = self._rng
        if isinstance(rng, np.random.Generator):
            import json
            state = json.dumps(rng.bit_generator.state).encode()
            return wrap(np.frombuffer(state, np.uint8).copy())
        rec = np.zeros((), _TORCH_STATE)
        rec["seed"], rec["seeded"] = rng.seed, 1
        rec["left"], rec["next"] = rng.pos
        rec["key"] = rng.key
        if rng.normal[0]:
            rec["normal_is_valid"], rec["normal_y"] = 1, rng.normal[1]
        if rng.normal[2]:
            rec["float_normal_is_valid"], rec["float_normal"] = 1, rng.normal[3]
        return wrap(np.frombuffer(rec.tobytes(), np.uint8).copy())

    def set_state(self, state):
        _not_compiling("set_rng_state")
        from . import _dtype
        if getattr(state, "dtype", None) is not _dtype.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        raw = bytes(state.detach().cpu().contiguous().numpy())
        if len(raw) != _TORCH_STATE.itemsize and raw.startswith(b'{"bit_generator"'):
            import json
            rng = np.random.Generator(np.random.PCG64())
            rng.bit_generator.state = json.loads(raw.decode())
            self._kind, self._engine = "pcg64", rng
            return self
        if len(raw) != _TORCH_STATE.itemsize:
            raise RuntimeError(f"Expected a CPUGeneratorImplState of size "
                               f"{_TORCH_STATE.itemsize} but found the input RNG state size "
                               f"to be {len(raw)}")
        rec = np.frombuffer(raw, _TORCH_STATE)[0]
        left, nxt = int(rec["left"]), int(rec["next"])
        # PyTorch's validity test, and no run of words past the key's end
        if not rec["seeded"] or not 0 < left <= 624 or nxt > 624 or left + nxt > 625:
            raise RuntimeError("Invalid mt19937 state")
        from .kernels.cpu.mt19937 import MT19937State
        normal = np.zeros(4)
        if rec["normal_is_valid"]:
            normal[:2] = 1.0, rec["normal_y"]
        if rec["float_normal_is_valid"]:
            normal[2:] = 1.0, rec["float_normal"]
        self._seed = int(rec["seed"])
        self._kind = "mt19937"
        self._engine = MT19937State(rec["key"].astype(np.uint32), np.array([left, nxt]),
                                    normal, self._seed)
        return self

    def clone_state(self):
        """A new generator on the same device, at this one's seed and state."""
        g = Generator(self.device).set_state(self.get_state())
        g._seed = self._seed
        return g

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
    g = Generator(device).set_state(state)
    g._seed = seed
    return g


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


def _not_compiling(what):
    """Seeding inside nbtorch.compile'd code would happen at the capture only (compiled
    calls draw on from where they are): refused there, so the code runs eagerly."""
    from .jit._concrete import compiling
    if compiling():
        raise RuntimeError(f"{what}() inside compiled code: a graph cannot replay seeding "
                           "the random generator (seed outside the compiled function)")


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
    """The engine of `generator` (the default generator's if None) the samplers draw
    from: an `MT19937State`, or a NumPy Generator for PCG64 streams."""
    return (generator or default_generator)._rng


def use_generator(name):
    """Choose the engine of CPU streams seeded from now on: ``"mt19937"`` (PyTorch's
    numbers, the default) or ``"pcg64"`` (NumPy's PCG64: faster normals). The default
    generator is re-seeded with its initial seed. Returns the previous choice.

    Example:
        >>> nbtorch.random.use_generator("pcg64")
        'mt19937'
    """
    global _engine_kind
    name = str(name).lower()
    if name not in _ENGINES:
        raise ValueError(f"use_generator: expected one of {_ENGINES}, got {name!r}")
    previous, _engine_kind = _engine_kind, name
    default_generator.manual_seed(default_generator.initial_seed())
    return previous
