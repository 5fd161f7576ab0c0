"""Shared test configuration."""
import os

import numpy as np
import pytest

os.environ.setdefault("NUMBA_CACHE_DIR", "")


@pytest.fixture(autouse=True)
def _seed():
    import nbtorch
    nbtorch.manual_seed(0)
    np.random.seed(0)
    yield
