"""Shared test configuration."""
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed():
    import nbtorch
    nbtorch.manual_seed(0)
    np.random.seed(0)
    yield


# Tests that each take many seconds (subprocesses that compile, notebook kernels). Run first,
# so pytest-xdist's work stealing can balance the quick ones around them (`make test`
# runs `--dist worksteal`); one of them left for the end would idle the other workers.
LONG_RUNNING = ("tests/cuda/test_typecheck.py", "tests/notebooks/test_notebooks.py",
                "tests/test_numba_cache.py", "tests/ops/test_pointwise_cache.py",
                "tests/test_demo.py")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_RUNNING))   # stable sort
