"""The Mersenne Twister MT19937 (Matsumoto & Nishimura, 1998), as PyTorch's CPU generator
runs it: the engine under nbtorch's default random stream.

A stream is an `MT19937State`: 624 32-bit words (`key`) and two counters (`pos`):
``left`` and ``next`` with PyTorch's meaning, so a state moves to and from
``torch.get_rng_state()``'s bytes field for field. Seeding is Knuth's
``x[i] = 1812433253 * (x[i-1] ^ (x[i-1] >> 30)) + i`` from the seed's low 32 bits,
leaving ``left = 1``: the first draw twists the whole key. A draw::

    left -= 1; if left == 0: twist(key); left = 624; next = 0
    y = key[next]; next += 1; return temper(y)
    random64 = (first draw << 32) | second draw

Samplers take their words in runs: `fill_words` writes the next m words into a
buffer (a vector loop over the key between twists: ~1 ns a word; a draw-at-a-time
loop ran 10x slower), and each transform reads the buffer.
The reference outputs (seed 5489: the 10000th draw is 4123659995) are tested.
"""
import numba
import numpy as np

__all__ = ["MT19937State", "seeded", "fill_words", "word64", "raw32", "raw64", "twist",
           "STATE_N"]

STATE_N = 624
_M = 397
_UPPER = np.uint64(0x80000000)
_LOWER = np.uint64(0x7FFFFFFF)
_MATRIX_A = np.uint64(0x9908B0DF)
_ONE = np.uint64(1)


class MT19937State:
    """One MT19937 stream: `key` (uint32[624]), `pos` (int64 [left, next]), `normal`
    (float64 [double valid, double sample, float valid, float sample]: the Box-Muller
    sample PyTorch's scalar normal path keeps for its next call) and the 64-bit `seed`."""

    __slots__ = ("key", "pos", "normal", "seed")

    def __init__(self, key, pos, normal, seed):
        self.key, self.pos, self.normal, self.seed = key, pos, normal, seed

    def copy(self):
        return MT19937State(self.key.copy(), self.pos.copy(), self.normal.copy(), self.seed)

    def integers(self, low, high):
        """One integer in [low, high) from one 64-bit draw (``random64() % range``): the
        key a Philox kernel (CUDA, `kernels/sampling.py`) takes per call."""
        return int(low) + int(raw64(self, 1)[0]) % (int(high) - int(low))


def seeded(seed):
    """A new stream seeded as PyTorch seeds its CPU generator (`seed` a 64-bit unsigned
    int; its low 32 bits start the key)."""
    key = np.empty(STATE_N, np.uint32)
    x = seed & 0xFFFFFFFF
    key[0] = x
    for i in range(1, STATE_N):
        x = (1812433253 * (x ^ (x >> 30)) + i) & 0xFFFFFFFF
        key[i] = x
    return MT19937State(key, np.array([1, 0], np.int64), np.zeros(4), seed)


@numba.njit(cache=True)
def _mix(a, b):
    """The twist's combination of word a's top bit and word b's low 31 bits."""
    y = (np.uint64(a) & _UPPER) | (np.uint64(b) & _LOWER)
    return (y >> _ONE) ^ ((y & _ONE) * _MATRIX_A)


@numba.njit(cache=True)
def twist(key):
    """Regenerate all 624 words in place: ``key[i] = key[i + 397] ^ mix(key[i],
    key[i + 1])``, indices mod 624, in order (three loops, no modulo)."""
    for i in range(STATE_N - _M):
        key[i] = np.uint32(np.uint64(key[i + _M]) ^ _mix(key[i], key[i + 1]))
    for i in range(STATE_N - _M, STATE_N - 1):
        key[i] = np.uint32(np.uint64(key[i + _M - STATE_N]) ^ _mix(key[i], key[i + 1]))
    key[STATE_N - 1] = np.uint32(np.uint64(key[_M - 1]) ^ _mix(key[STATE_N - 1], key[0]))


@numba.njit(cache=True)
def _temper(y):
    y = np.uint64(y)
    y ^= y >> np.uint64(11)
    y ^= (y << np.uint64(7)) & np.uint64(0x9D2C5680)
    y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
    y ^= y >> np.uint64(18)
    return np.uint32(y & np.uint64(0xFFFFFFFF))


@numba.njit(cache=True)
def fill_words(key, pos, buf, m):
    """buf[:m] = the stream's next m 32-bit words; `pos` advances.

    A run of the key is tempered at a time (a vector loop), twisting when a run is
    used up: the same words and counters as m single draws."""
    left, nxt = pos[0], pos[1]
    i = 0
    while i < m:
        if left == 1:
            twist(key)
            left = STATE_N + 1
            nxt = 0
        k = min(m - i, left - 1)
        for j in range(k):
            buf[i + j] = _temper(key[nxt + j])
        i += k
        nxt += k
        left -= k
    pos[0], pos[1] = left, nxt


@numba.njit(cache=True)
def word64(buf, i):
    """random64() from words buf[i], buf[i + 1]: the first in the high half."""
    return (np.uint64(buf[i]) << np.uint64(32)) | np.uint64(buf[i + 1])


def raw32(state, n):
    """The next `n` 32-bit words of `state` (uint32 array), advancing it."""
    out = np.empty(n, np.uint32)
    fill_words(state.key, state.pos, out, n)
    return out


def raw64(state, n):
    """The next `n` random64() values of `state` (uint64 array), advancing it."""
    w = raw32(state, 2 * n).astype(np.uint64)
    return (w[0::2] << np.uint64(32)) | w[1::2]
