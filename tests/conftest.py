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
    from nbtorch import _torch_function
    if _torch_function.is_active():     # a test's Tensor subclass or mode switched the
        _torch_function.deactivate()    # __torch_function__ protocol on: not for the next


@pytest.fixture(params=TEST_DEVICES)
def device(request):
    """The device a device-generic test runs on (see the module docstring)."""
    return request.param


# The order of long tests, for pytest-xdist's work stealing (`make test` runs --dist
# worksteal). FIRST: long tests that compile without the disk cache (the PTX type check),
# started at once so the other worker balances the quick ones around them. LAST: tests
# whose subprocesses (notebook kernels, second processes, spawned workers) load kernels
# from Numba's disk cache, which the rest of the run has filled by then: started first,
# on a cold cache, they compiled much of the suite's kernels over again.
FIRST = ("tests/cuda/test_typecheck.py",)
LAST = ("tests/notebooks/test_notebooks.py", "tests/test_numba_cache.py",
        "tests/ops/test_pointwise_cache.py", "tests/test_demo.py", "tests/multiprocessing/", "tests/distributed/",
        "tests/tutorials/")


def _rank(item):
    return 0 if item.nodeid.startswith(FIRST) else 2 if item.nodeid.startswith(LAST) else 1


def pytest_collection_modifyitems(config, items):
    if "cpu" not in TEST_DEVICES:      # a CUDA-only run: device-generic tests outside tests/cuda
        keep = [i for i in items if i.nodeid.startswith("tests/cuda/")
                or "device" in getattr(i, "fixturenames", ())]
        if len(keep) != len(items):
            kept = {id(i) for i in keep}
            config.hook.pytest_deselected(items=[i for i in items if id(i) not in kept])
            items[:] = keep
    items.sort(key=_rank)                                # stable: file order within a rank
