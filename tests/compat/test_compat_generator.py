"""torch.Generator's methods: clone_state, pickling/deepcopy, seed checks, the
graph-safe and offset methods PyTorch's CPU generator refuses."""
import copy
import pickle

import pytest

import nbtorch


def test_clone_pickle_deepcopy_continue_the_stream():
    g = nbtorch.Generator().manual_seed(5)
    nbtorch.rand(3, generator=g)
    for other in (g.clone_state(), pickle.loads(pickle.dumps(g)), copy.deepcopy(g)):
        assert other.initial_seed() == 5 and other.device == g.device
        assert nbtorch.equal(nbtorch.rand(4, generator=other),
                             nbtorch.rand(4, generator=g.clone_state()))
    before = nbtorch.rand(2, generator=g.clone_state())
    assert nbtorch.equal(nbtorch.rand(2, generator=g), before)


def test_refusals_and_seed_checks():
    g = nbtorch.Generator()
    with pytest.raises(NotImplementedError, match="graphsafe_get_state is not supported"):
        g.graphsafe_get_state()
    with pytest.raises(NotImplementedError, match="graphsafe_set_state is not supported"):
        g.graphsafe_set_state(g)
    with pytest.raises(RuntimeError, match="CPU Generator does not use offset"):
        g.get_offset()
    with pytest.raises(RuntimeError, match="CPU Generator does not use offset"):
        g.set_offset(1)
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(nbtorch.zeros(3))
    with pytest.raises(RuntimeError, match="expected a long, but got float"):
        g.manual_seed(1.5)
    with pytest.raises(RuntimeError, match="expected a long, but got bool"):
        g.manual_seed(True)
    with pytest.raises(ValueError, match="Overflow"):
        g.manual_seed(2 ** 64)
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    assert g.manual_seed(nbtorch.tensor(7)).initial_seed() == 7


def test_method_names_match_pytorch():
    torch = pytest.importorskip("torch")
    theirs = {n for n in dir(torch.Generator) if not n.startswith("_")}
    ours = {n for n in dir(nbtorch.Generator) if not n.startswith("_")} | {"device"}
    assert theirs <= ours
