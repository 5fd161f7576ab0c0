"""A wrapper's state dict ("module." keys) loads into the bare model after
nn.modules.utils.consume_prefix_in_state_dict_if_present, as in PyTorch."""
import nbtorch
from nbtorch.nn.modules.utils import consume_prefix_in_state_dict_if_present


def test_wrapper_state_dict_loads_into_the_bare_model():
    wrapped = nbtorch.nn.DataParallel(nbtorch.nn.Linear(2, 3))
    sd = wrapped.state_dict()
    assert list(sd) == ["module.weight", "module.bias"]
    consume_prefix_in_state_dict_if_present(sd, "module.")
    assert list(sd) == ["weight", "bias"] and "module" not in sd._metadata
    bare = nbtorch.nn.Linear(2, 3)
    bare.load_state_dict(sd)
    assert bare.weight.equal(wrapped.module.weight)
    consume_prefix_in_state_dict_if_present(sd, "module.")       # no prefix: unchanged
    assert list(sd) == ["weight", "bias"]
