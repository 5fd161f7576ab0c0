"""Shared test configuration."""
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed():
    import nbtorch
    nbtorch.manual_seed(0)
    np.random.seed(0)
    yield
