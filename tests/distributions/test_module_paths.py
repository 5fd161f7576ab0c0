"""Every submodule of torch.distributions imports from nbtorch.distributions with the names
of its __all__ (`from torch.distributions.beta import Beta` style code)."""
import importlib
import pkgutil

import pytest

torch = pytest.importorskip("torch")


def test_every_submodule_and_its_names():
    missing = []
    for info in pkgutil.iter_modules(torch.distributions.__path__):
        theirs = importlib.import_module("torch.distributions." + info.name)
        try:
            ours = importlib.import_module("nbtorch.distributions." + info.name)
        except ImportError:
            missing.append(info.name)
            continue
        missing += [f"{info.name}.{n}" for n in getattr(theirs, "__all__", ())
                    if not hasattr(ours, n)]
    assert not missing


def test_submodule_classes_are_the_package_classes():
    from nbtorch import distributions as D
    from nbtorch.distributions.beta import Beta
    from nbtorch.distributions.chi2 import Chi2
    from nbtorch.distributions.generalized_pareto import GeneralizedPareto
    from nbtorch.distributions.half_cauchy import HalfCauchy
    from nbtorch.distributions.one_hot_categorical import (
        OneHotCategorical, OneHotCategoricalStraightThrough)
    assert (Beta, Chi2, GeneralizedPareto, HalfCauchy, OneHotCategorical,
            OneHotCategoricalStraightThrough) == (
        D.Beta, D.Chi2, D.GeneralizedPareto, D.HalfCauchy, D.OneHotCategorical,
        D.OneHotCategoricalStraightThrough)
