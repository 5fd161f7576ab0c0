"""Differential tests against PyTorch (skipped without it): generated calls of the op
table in tests/api/differential.py over dtypes x layouts x invalid arguments, comparing
values, dtypes, shapes and whether (and which class of) error is raised.

The default run is a fixed sample over the dtypes the rest of the suite compiles
anyway (a few seconds); `-m slow` runs every case of every dtype. Known differences
are listed in KNOWN with their reason, and must keep failing (so the list shrinks as
they are fixed).
"""
import fnmatch

import pytest

import nbtorch
import differential as D

torch = pytest.importorskip("torch")

# PyTorch's own advisory warnings (non-contiguous searchsorted inputs, beta APIs, degrees
# of freedom) are not what these tests compare
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

# case ids (differential.case_id; fnmatch patterns) where nbtorch deliberately differs
# from PyTorch, with the reason. Each must keep differing (the list cannot go stale).
KNOWN = {
    "layer_norm huge-float32-[cnt]*": "PyTorch's float32 moments overflow to NaN above ~1e19; "
                                 "nbtorch's two-pass float64 statistics normalise exactly",
    "take_along_dim flat-*-transposed": "PyTorch views the input as 1-D and raises for a "
                                        "non-viewable one; nbtorch reshapes (copies)",
    "isin-*-transposed": "PyTorch views the elements as 1-D and raises for a non-viewable "
                         "tensor; nbtorch reshapes (copies)",
}

QUICK = D.cases(dtypes=D.DEFAULT_DTYPES, seed=0, limit=250)
FULL = D.cases(dtypes=D.all_dtypes_available(nbtorch))


def _known(cid):
    return next((why for pat, why in KNOWN.items() if fnmatch.fnmatchcase(cid, pat)), None)


def _check(case):
    cid = D.case_id(case)
    problem = D.check_case(torch, nbtorch, case)
    why = _known(cid)
    if why is not None:
        assert problem is not None, f"{cid} agrees with PyTorch now: remove it from KNOWN"
        pytest.xfail(why)
    assert problem is None, f"{cid}: {problem}"


@pytest.mark.parametrize("case", QUICK, ids=D.case_id)
def test_matches_pytorch(case):
    _check(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", FULL, ids=D.case_id)
def test_matches_pytorch_every_dtype(case):
    _check(case)


def test_table_is_well_formed():
    names = [op.name for op in D.OPS]
    assert len(names) == len(set(names)), "op names in differential.OPS must be unique"
    assert len(QUICK) >= 200
