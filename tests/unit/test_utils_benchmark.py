"""torch.utils.benchmark's Timer/Measurement/Compare, torch.utils.hooks, and Module's
set_submodule / to_empty, as PyTorch's."""
import pytest

import nbtorch
import nbtorch.nn as nn
from nbtorch.utils import benchmark
from nbtorch.utils.hooks import RemovableHandle


def test_timer_measures_a_statement():
    t = benchmark.Timer(stmt="x + 1", globals={"x": nbtorch.ones(3)}, label="add",
                        sub_label="3", description="cpu")
    m = t.timeit(50)
    assert m.number_per_run == 50 and len(m.times) == 1 and m.mean == m.median > 0
    assert m.title == "add: 3" and "50 runs" in repr(m)
    auto = t.blocked_autorange(min_run_time=0.02)
    assert len(auto.times) >= 2 and auto.iqr >= 0 and "Median" in repr(auto)
    assert "Times are in" in str(benchmark.Compare([m, auto]))
    before = nbtorch.get_num_threads()
    benchmark.Timer("pass", num_threads=1).timeit(2)
    assert nbtorch.get_num_threads() == before


def test_module_set_submodule_to_empty_and_hook_handles():
    m = nn.Sequential(nn.Linear(2, 2))
    m.set_submodule("0", nn.ReLU())
    assert isinstance(m[0], nn.ReLU)
    with pytest.raises(AttributeError, match="has no attribute `x`"):
        m.set_submodule("x", nn.ReLU(), strict=True)
    with pytest.raises(ValueError, match="without a target name"):
        m.set_submodule("", nn.ReLU())
    lin = nn.Linear(3, 2).to_empty(device="cpu")
    assert lin.weight.shape == (2, 3) and isinstance(lin.weight, nn.Parameter)
    handle = m.register_forward_hook(lambda *a: None)
    assert isinstance(handle, RemovableHandle)
