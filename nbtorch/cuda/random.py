"""CUDA random numbers: Philox kernels keyed from nbtorch's generator.

`manual_seed` (here or `nbtorch.manual_seed`) seeds the one default generator
that CPU and CUDA share; each GPU draw takes a fresh 64-bit Philox key from it,
so a seed reproduces every draw. `uniform_`/`normal_` fill a CUDA tensor in
place on the GPU (no host round trip), as the Tensor methods and `nbtorch.rand`,
`randn`, `randint`, `bernoulli` do on a CUDA tensor (the registry's samplers).

The CUDA RNG state (`get_rng_state`) is therefore the shared generator's state
(nbtorch's 5056-byte one, not PyTorch's 16-byte Philox seed and offset):
saving and restoring it, as checkpointing and `fork_rng` do, reproduces every
later CUDA draw; restoring it also restores the CPU stream, which it is.
"""
from .. import random as _random
from .._generator import Generator, default_generator
from . import _runtime

__all__ = ["manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
           "get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all",
           "uniform_", "normal_"]


def manual_seed(seed):
    """Seed the generator CUDA draws from (shared with the CPU, as one default generator)."""
    _random.manual_seed(seed)


manual_seed_all = manual_seed


def seed():
    return _random.seed()


seed_all = seed


def initial_seed():
    return _random.initial_seed()


def _fill(op, t, a, b, generator):
    if t.device.type != "cuda":
        raise RuntimeError(f"{op} expects a CUDA tensor, got one on {t.device}")
    if not t.dtype.is_floating_point:
        raise RuntimeError(f'"{op}" not implemented for integer tensors on CUDA')
    method = t.uniform_ if op == "uniform_" else t.normal_
    return method(a, b, generator=generator)


def uniform_(t, low=0.0, high=1.0, generator=None):
    """Fill CUDA tensor `t` with samples uniform on [low, high), on the GPU."""
    return _fill("uniform_", t, low, high, generator)


def normal_(t, mean=0.0, std=1.0, generator=None):
    """Fill CUDA tensor `t` with normal samples N(mean, std**2), on the GPU."""
    return _fill("normal_", t, mean, std, generator)


class _CudaDefaultGenerator(Generator):
    """``torch.cuda.default_generators[i]``: device ``cuda:i``, state and seed those of the
    one default generator that CPU and CUDA draws share."""

    def __init__(self, index):
        super().__init__("cpu")
        from .._device import device
        self.device = device("cuda", index)

    @property
    def _rng(self):
        return default_generator._rng

    def manual_seed(self, seed):
        default_generator.manual_seed(seed)
        return self

    def seed(self):
        return default_generator.seed()

    def initial_seed(self):
        return default_generator.initial_seed()

    def get_state(self):
        return default_generator.get_state()

    def set_state(self, state):
        default_generator.set_state(state)
        return self


def default_generators():
    """One generator per CUDA device (an empty tuple without CUDA, as PyTorch's)."""
    return tuple(_CudaDefaultGenerator(i) for i in range(_runtime.device_count()))


def _rng_index(device):
    """The device index of get/set_rng_state's `device` (int, str, nbtorch.device)."""
    from .._device import device as device_type
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    d = device_type(device) if isinstance(device, str) else device
    if getattr(d, "type", None) != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return _runtime.current_device() if d.index is None else d.index


def get_rng_state(device="cuda"):
    """The CUDA generator's state as a uint8 tensor (the state CPU draws share).

    Example:
        >>> s = nbtorch.cuda.get_rng_state(); a = nbtorch.rand(3, device='cuda')
        >>> nbtorch.cuda.set_rng_state(s); b = nbtorch.rand(3, device='cuda')  # a == b
    """
    _runtime.lazy_init()
    idx = _rng_index(device)
    if not 0 <= idx < _runtime.device_count():
        raise IndexError("tuple index out of range")
    return default_generator.get_state()


def get_rng_state_all():
    """The states of every device's generator ([] without CUDA)."""
    return [get_rng_state(i) for i in range(_runtime.device_count())]


def set_rng_state(new_state, device="cuda"):
    """Restore a state from `get_rng_state`. Without CUDA this does nothing, as PyTorch's
    (which defers it to a CUDA initialisation that never comes)."""
    if not _runtime.is_available():
        return
    idx = _rng_index(device)
    if not 0 <= idx < _runtime.device_count():
        raise IndexError("tuple index out of range")
    if getattr(new_state, "dtype", None) is not None and new_state.numel() == 16:
        raise RuntimeError("set_rng_state: this 16-byte state is PyTorch's CUDA Philox state "
                           "(seed, offset); nbtorch's CUDA draws come from the generator they "
                           "share with the CPU, whose state nbtorch.cuda.get_rng_state() "
                           "returns (seed with nbtorch.cuda.manual_seed instead)")
    default_generator.set_state(new_state)


def set_rng_state_all(new_states):
    """Restore each device's state from `get_rng_state_all`."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
