"""Shared test configuration: seeding, the `device` every device-generic test runs on,
and the order of long tests.

Tests written once, run on every device (PyTorch's instantiate_device_type_tests):
a test that takes the `device` fixture runs on "cpu" in the main pytest process
and on "cuda" in the CUDA-simulator process (NUMBA_ENABLE_CUDASIM=1, which must
be set before Numba loads, hence a process of its own). That process collects
tests/ops and tests/nn too but keeps only such device-generic tests; the rest
ran on the CPU already. NBTORCH_TEST_DEVICES (e.g. "cuda" on a real GPU, or
"cpu,cuda") overrides the choice.
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))       # tests/harness.py: `from harness import`

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
TEST_DEVICES = os.environ.get("NBTORCH_TEST_DEVICES", "cuda" if SIMULATOR else "cpu").split(",")


@pytest.fixture(autouse=True)
def _seed():
    import nbtorch
    nbtorch.manual_seed(0)
    np.random.seed(0)
    yield


@pytest.fixture(params=TEST_DEVICES)
def device(request):
    """The device a device-generic test runs on (see the module docstring)."""
    return request.param


# Tests that each take many seconds (subprocesses that compile, notebook kernels). Run first,
# so pytest-xdist's work stealing can balance the quick ones around them (`make test`
# runs `--dist worksteal`); one of them left for the end would idle the other workers.
LONG_RUNNING = ("tests/cuda/test_typecheck.py", "tests/notebooks/test_notebooks.py",
                "tests/test_numba_cache.py", "tests/ops/test_pointwise_cache.py",
                "tests/test_demo.py")


def pytest_collection_modifyitems(config, items):
    if "cpu" not in TEST_DEVICES:      # a CUDA-only run: device-generic tests outside tests/cuda
        keep = [i for i in items if i.nodeid.startswith("tests/cuda/")
                or "device" in getattr(i, "fixturenames", ())]
        if len(keep) != len(items):
            kept = {id(i) for i in keep}
            config.hook.pytest_deselected(items=[i for i in items if id(i) not in kept])
            items[:] = keep
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_RUNNING))   # stable sort
