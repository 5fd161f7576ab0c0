"""set_num_threads drives both Numba's pool and NumPy's OpenBLAS."""
import pytest

import nbtorch as torch
from nbtorch import _threads


def test_set_num_threads_sets_numba_and_blas():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert torch.get_num_threads() == 1
        lib = _threads._openblas()
        if lib is not None:
            assert _threads._call(lib, _threads._GETTERS) == 1
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="positive integer"):
        torch.set_num_threads(0)
