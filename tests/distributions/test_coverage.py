"""API coverage against PyTorch: every name of torch.distributions.__all__, of its
constraints and transforms modules, and every pair in its KL registry."""
import pytest

import nbtorch.distributions as D
from nbtorch.distributions import constraints, kl, transforms

torch = pytest.importorskip("torch")
TD = torch.distributions


@pytest.mark.parametrize("ours,theirs", [(D, TD), (constraints, TD.constraints),
                                         (transforms, TD.transforms)],
                         ids=["distributions", "constraints", "transforms"])
def test_every_public_name(ours, theirs):
    missing = sorted(n for n in theirs.__all__ if not hasattr(ours, n))
    have = len(theirs.__all__) - len(missing)
    print(f"{theirs.__name__}: {have}/{len(theirs.__all__)}")
    assert not missing


def test_every_kl_pair():
    pairs = {(p.__name__, q.__name__) for p, q in TD.kl._KL_REGISTRY}
    ours = {(p.__name__, q.__name__) for p, q in kl._KL_REGISTRY}
    print(f"kl pairs: {len(pairs & ours)}/{len(pairs)}")
    assert not sorted(pairs - ours)


def test_flags_match():
    """has_rsample / has_enumerate_support and support reprs of every distribution class."""
    for name in TD.__all__:
        theirs = getattr(TD, name)
        if isinstance(theirs, type) and issubclass(theirs, TD.Distribution):
            ours = getattr(D, name)
            for flag in ("has_rsample", "has_enumerate_support"):
                a, b = getattr(ours, flag), getattr(theirs, flag)
                if isinstance(b, bool):
                    assert a == b, (name, flag)
