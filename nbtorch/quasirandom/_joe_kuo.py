"""Joe & Kuo's Sobol' direction numbers (new-joe-kuo-6.21201), as shipped beside this
file: see README.md in this folder for their source, licence and format."""
import functools
import lzma
import os

import numpy as np

MAXDIM = 21201
_FILE = os.path.join(os.path.dirname(__file__), "new-joe-kuo-6.21201.xz")


@functools.lru_cache(maxsize=1)
def direction_table():
    """(poly, vinit): int64 arrays of shape (21201,) and (21201, 18). ``poly[d]`` is
    dimension d's primitive polynomial with its leading and trailing bits (degree s =
    bit_length - 1), ``vinit[d, :s]`` its initial direction numbers m_1..m_s."""
    with open(_FILE, "rb") as f:
        words = np.frombuffer(lzma.decompress(f.read()), dtype="<u4")
    vinit = words[:18 * MAXDIM].reshape(18, MAXDIM).T.astype(np.int64)
    poly = np.cumsum(words[18 * MAXDIM:], dtype=np.int64)
    return poly, np.ascontiguousarray(vinit)
