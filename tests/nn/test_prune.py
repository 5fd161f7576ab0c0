"""nn.utils.prune against PyTorch: masks, state-dict names, iterative pruning, remove()."""
import numpy as np
import pytest

import nbtorch
from nbtorch import nn
from nbtorch.nn.utils import prune

torch = pytest.importorskip("torch")
tprune = pytest.importorskip("torch.nn.utils.prune")


def _pair(make_nb, make_t, seed=0):
    """The same module in both libraries, PyTorch's weights copied into nbtorch's."""
    torch.manual_seed(seed)
    t = make_t()
    m = make_nb()
    with nbtorch.no_grad():
        for name, p in t.named_parameters():
            getattr(m, name).copy_(nbtorch.tensor(p.detach().numpy()))
    return m, t


def _linear_pair(seed=0):
    return _pair(lambda: nn.Linear(6, 5), lambda: torch.nn.Linear(6, 5), seed)


def _conv_pair(seed=0):
    return _pair(lambda: nn.Conv2d(3, 4, 3), lambda: torch.nn.Conv2d(3, 4, 3), seed)


def _same_state(m, t):
    sd, tsd = m.state_dict(), t.state_dict()
    assert list(sd) == list(tsd)
    for k in sd:
        np.testing.assert_array_equal(sd[k].numpy(), tsd[k].numpy(), err_msg=k)
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in t.named_buffers()]


@pytest.mark.parametrize("amount", [0, 3, 0.4, 1.0])
def test_l1_unstructured_matches(amount):
    m, t = _linear_pair()
    prune.l1_unstructured(m, "weight", amount=amount)
    tprune.l1_unstructured(t, "weight", amount=amount)
    _same_state(m, t)
    np.testing.assert_array_equal(m.weight.detach().numpy(), t.weight.detach().numpy())
    assert prune.is_pruned(m)
    x = np.random.rand(2, 6).astype(np.float32)
    np.testing.assert_allclose(m(nbtorch.tensor(x)).detach().numpy(),
                               t(torch.tensor(x)).detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n,dim,amount", [(2, 0, 2), (1, 1, 0.5), (float("inf"), -1, 1),
                                          (float("-inf"), 0, 0.25)])
def test_ln_structured_matches(n, dim, amount):
    m, t = _conv_pair()
    prune.ln_structured(m, "weight", amount=amount, n=n, dim=dim)
    tprune.ln_structured(t, "weight", amount=amount, n=n, dim=dim)
    _same_state(m, t)


def test_ln_structured_fro_on_matrix():
    m, t = _linear_pair()
    prune.ln_structured(m, "weight", amount=2, n="fro", dim=0)
    tprune.ln_structured(t, "weight", amount=2, n="fro", dim=0)
    _same_state(m, t)


def test_importance_scores_and_prune_method():
    m, t = _linear_pair()
    scores = np.random.rand(5, 6).astype(np.float32)
    prune.l1_unstructured(m, "weight", amount=7, importance_scores=nbtorch.tensor(scores))
    tprune.l1_unstructured(t, "weight", amount=7, importance_scores=torch.tensor(scores))
    _same_state(m, t)
    w = np.random.randn(4, 5).astype(np.float32)
    got = prune.L1Unstructured(amount=0.5).prune(nbtorch.tensor(w))
    want = tprune.L1Unstructured(amount=0.5).prune(torch.tensor(w))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_iterative_pruning_combines_masks():
    """A second method prunes only what the first kept; a container holds them."""
    m, t = _conv_pair(1)
    steps = [("l1_unstructured", dict(amount=0.3)),
             ("ln_structured", dict(amount=1, n=2, dim=0)),
             ("l1_unstructured", dict(amount=5)),
             ("custom_from_mask", None)]
    mask = (np.random.rand(4, 3, 3, 3) > 0.2).astype(np.float32)
    for fn, kw in steps:
        if fn == "custom_from_mask":
            prune.custom_from_mask(m, "weight", mask=nbtorch.tensor(mask))
            tprune.custom_from_mask(t, "weight", mask=torch.tensor(mask))
        else:
            getattr(prune, fn)(m, "weight", **kw)
            getattr(tprune, fn)(t, "weight", **kw)
        _same_state(m, t)
    hook, = m._forward_pre_hooks.values()
    assert isinstance(hook, prune.PruningContainer) and len(hook) == 4
    assert [type(h).__name__ for h in hook] == ["L1Unstructured", "LnStructured",
                                               "L1Unstructured", "CustomFromMask"]
    # the weight is recomputed before each forward: a change to weight_orig shows up
    with nbtorch.no_grad():
        m.weight_orig.mul_(2)
    m(nbtorch.randn(1, 3, 5, 5))
    np.testing.assert_array_equal(m.weight.detach().numpy(),
                                  m.weight_orig.detach().numpy() * m.weight_mask.numpy())


def test_gradient_flows_to_orig_through_mask():
    m, _ = _linear_pair()
    prune.l1_unstructured(m, "weight", amount=0.5)
    m(nbtorch.randn(3, 6)).sum().backward()
    g = m.weight_orig.grad.numpy()
    assert np.all(g[m.weight_mask.numpy() == 0] == 0)
    assert np.any(g[m.weight_mask.numpy() == 1] != 0)


def test_remove_makes_pruning_permanent():
    m, t = _linear_pair()
    for mod, pr in ((m, prune), (t, tprune)):
        pr.l1_unstructured(mod, "weight", amount=0.5)
        pr.l1_unstructured(mod, "bias", amount=2)
        pr.remove(mod, "weight")
    _same_state(m, t)
    assert isinstance(m.weight, nn.Parameter) and prune.is_pruned(m)
    prune.remove(m, "bias")
    tprune.remove(t, "bias")
    _same_state(m, t)
    assert not prune.is_pruned(m) and not m._forward_pre_hooks
    with pytest.raises(ValueError, match="Parameter 'weight' of module .* has to be pruned"):
        prune.remove(m, "weight")


def test_identity_and_global_unstructured():
    (m1, t1), (m2, t2) = _linear_pair(2), _conv_pair(3)
    prune.identity(m1, "bias")
    tprune.identity(t1, "bias")
    _same_state(m1, t1)
    prune.l1_unstructured(m2, "weight", amount=0.2)       # an earlier mask is respected
    tprune.l1_unstructured(t2, "weight", amount=0.2)
    prune.global_unstructured([(m1, "weight"), (m2, "weight"), (m1, "bias")],
                              pruning_method=prune.L1Unstructured, amount=0.5)
    tprune.global_unstructured([(t1, "weight"), (t2, "weight"), (t1, "bias")],
                               pruning_method=tprune.L1Unstructured, amount=0.5)
    _same_state(m1, t1)
    _same_state(m2, t2)
    with pytest.raises(TypeError, match="Only \"unstructured\" PRUNING_TYPE supported"):
        prune.global_unstructured([(m1, "weight")], prune.LnStructured, amount=1, n=2)
    with pytest.raises(TypeError, match="parameters is not an Iterable"):
        prune.global_unstructured(3, prune.L1Unstructured, amount=1)
    with pytest.raises(TypeError, match="importance_scores must be of type dict"):
        prune.global_unstructured([(m1, "weight")], prune.L1Unstructured, [1], amount=1)


def test_random_variants_match_pytorch_streams():
    """nbtorch's CPU random streams equal PyTorch's, so random masks are the same."""
    m, t = _conv_pair()
    for seed, (fn, kw) in enumerate([("random_unstructured", dict(amount=0.3)),
                                     ("random_structured", dict(amount=2, dim=0)),
                                     ("random_unstructured", dict(amount=10)),
                                     ("random_structured", dict(amount=0.5, dim=1))]):
        nbtorch.manual_seed(seed)
        torch.manual_seed(seed)
        getattr(prune, fn)(m, "weight", **kw)
        getattr(tprune, fn)(t, "weight", **kw)
        _same_state(m, t)


@pytest.mark.parametrize("amount,exc,msg", [
    (-1, ValueError, r"amount=-1 should either be a float in the range \[0, 1\] or a "
                     "non-negative integer"),
    (1.5, ValueError, r"amount=1.5 should either be a float"),
    ("a", TypeError, "Invalid type for amount: a. Must be int or float."),
    (100, ValueError, "amount=100 should be smaller than the number of parameters to "
                      "prune=30"),
])
def test_amount_errors(amount, exc, msg):
    m, t = _linear_pair()
    with pytest.raises(exc, match=msg):
        prune.l1_unstructured(m, "weight", amount=amount)
    with pytest.raises(exc, match=msg):
        tprune.l1_unstructured(t, "weight", amount=amount)
    _same_state(m, t)                     # a failed pruning leaves the module unchanged


def test_structured_errors():
    m = nn.Linear(3, 2)
    t = torch.nn.Linear(3, 2)
    for pr, mod in ((tprune, t), (prune, m)):   # PyTorch's order after the failed tries
        for name, kw in (("bias", dict(n=2, dim=0)), ("weight", dict(n=2, dim=2))):
            with pytest.raises((ValueError, IndexError)):
                pr.ln_structured(mod, name, amount=1, **kw)
    with pytest.raises(ValueError, match="Structured pruning can only be applied to "
                                         "multidimensional tensors"):
        prune.ln_structured(m, "bias", amount=1, n=2, dim=0)
    with pytest.raises(IndexError, match="Invalid index 2 for tensor of size"):
        prune.random_structured(m, "weight", amount=1, dim=2)
    with pytest.raises(AssertionError, match="importance_scores should have the same shape"):
        prune.l1_unstructured(m, "weight", 1, importance_scores=nbtorch.ones(3))
    c = prune.PruningContainer()
    c._tensor_name = "weight"
    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        c.add_pruning_method(3)
    other = prune.Identity()
    other._tensor_name = "bias"
    with pytest.raises(ValueError, match="Can only add pruning methods acting on the "
                                         "parameter named 'weight'"):
        c.add_pruning_method(other)
    assert list(m.state_dict()) == list(t.state_dict()) == ["bias", "weight"]


def test_state_dict_round_trip_into_pruned_module():
    m, t = _linear_pair()
    prune.l1_unstructured(m, "weight", amount=0.5)
    tprune.l1_unstructured(t, "weight", amount=0.5)
    fresh = prune.identity(nn.Linear(6, 5), "weight")
    fresh.load_state_dict({k: nbtorch.tensor(v.numpy()) for k, v in t.state_dict().items()})
    fresh(nbtorch.zeros(1, 6))
    np.testing.assert_array_equal(fresh.weight.detach().numpy(), t.weight.detach().numpy())


def test_ties_at_the_cut_prune_the_same_count():
    """Where entries tie at the cut, PyTorch's pick follows std::nth_element; nbtorch keeps
    the lower indices. The number pruned is the same."""
    w = np.zeros((4, 5), np.float32)
    m = prune.l1_unstructured(nn.Linear(5, 4), "weight", amount=7,
                              importance_scores=nbtorch.tensor(w))
    assert int((m.weight_mask == 0).sum()) == 7
    np.testing.assert_array_equal(m.weight_mask.numpy().ravel()[:7], 0)
