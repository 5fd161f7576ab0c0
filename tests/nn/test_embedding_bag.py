"""EmbeddingBag / F.embedding_bag: NumPy reference over modes, offsets, include_last_offset,
per_sample_weights and padding_idx; gradcheck; PyTorch's values, gradients and errors."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
import nbtorch.nn.functional as F
from nbtorch.autograd import gradcheck


def _t(a, requires_grad=False, device="cpu"):
    return nbtorch.tensor(np.asarray(a), requires_grad=requires_grad, device=device)


def _ref(idx, w, offsets, mode, psw=None, last=False, pad=None):
    """The bags one by one in NumPy."""
    ends = list(offsets[1:]) + ([] if last else [len(idx)])
    out = []
    for s, e in zip(offsets, ends):
        sel = [i for i in range(s, e) if idx[i] != pad]
        rows = w[idx[sel]] * (psw[sel][:, None] if psw is not None else 1)
        if not sel:
            out.append(np.zeros(w.shape[1]))
        else:
            out.append({"sum": rows.sum(0), "mean": rows.mean(0), "max": rows.max(0)}[mode])
    return np.array(out)


IDX = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0])
OFFS = np.array([0, 3, 3, 7])          # bag 1 is empty


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("pad", [None, 4])
def test_embedding_bag_matches_numpy(mode, pad, device):
    w = np.random.default_rng(0).standard_normal((10, 3))
    y = F.embedding_bag(_t(IDX, device=device), _t(w, device=device), _t(OFFS, device=device),
                        mode=mode, padding_idx=pad)
    np.testing.assert_allclose(y.cpu().numpy(), _ref(IDX, w, OFFS, mode, pad=pad), rtol=1e-12)
    last = np.array([0, 3, 3, 7, 8])   # the last offset ends the last bag: index 9 left out
    y = F.embedding_bag(_t(IDX, device=device), _t(w, device=device), _t(last, device=device),
                        mode=mode, include_last_offset=True, padding_idx=pad)
    np.testing.assert_allclose(y.cpu().numpy(), _ref(IDX, w, last, mode, last=True, pad=pad),
                               rtol=1e-12)


def test_embedding_bag_2d_input_and_per_sample_weights():
    w = np.random.default_rng(0).standard_normal((10, 3))
    idx = IDX[:8].reshape(2, 4)
    psw = np.random.default_rng(1).standard_normal(8)
    y = F.embedding_bag(_t(idx), _t(w), mode="sum", per_sample_weights=_t(psw.reshape(2, 4)))
    np.testing.assert_allclose(y.numpy(), _ref(IDX[:8], w, [0, 4], "sum", psw), rtol=1e-12)
    y = F.embedding_bag(_t(IDX), _t(w), _t(OFFS), mode="sum",
                        per_sample_weights=_t(psw[:1].repeat(9)))
    np.testing.assert_allclose(y.numpy(), _ref(IDX, w, OFFS, "sum", psw[:1].repeat(9)),
                               rtol=1e-12)
    assert F.embedding_bag(_t(idx), _t(w.astype(np.float32))).dtype == nbtorch.float32


def test_embedding_bag_gradcheck():
    w = _t(np.random.default_rng(0).standard_normal((10, 3)), True)
    psw = _t(np.random.default_rng(1).standard_normal(9), True)
    idx, offs = _t(np.array([1, 2, 4, 5, 7, 3, 2, 9, 0])), _t(OFFS)
    for mode in ("sum", "mean", "max"):
        assert gradcheck(lambda w: F.embedding_bag(idx, w, offs, mode=mode, padding_idx=2), (w,))
    assert gradcheck(lambda w, p: F.embedding_bag(idx, w, offs, mode="sum",
                                                  per_sample_weights=p), (w, psw))


def test_embedding_bag_module_against_torch():
    torch = pytest.importorskip("torch")
    w = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
    for kw in ({"mode": "sum"}, {"mode": "mean", "padding_idx": -1},
               {"mode": "max", "include_last_offset": True}, {"mode": "mean", "max_norm": 1.0}):
        ours = nn.EmbeddingBag.from_pretrained(_t(w.copy()), freeze=False, **kw)
        theirs = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w.copy()), freeze=False, **kw)
        assert repr(ours) == repr(theirs)
        # PyTorch's CPU max kernel runs the last bag to the input's end even with
        # include_last_offset (its sum/mean stop at the last offset, as documented; nbtorch
        # stops there in every mode): compared where the two agree
        offs = np.append(OFFS, 9) if kw.get("include_last_offset") else OFFS
        yo = ours(_t(IDX), _t(offs))
        yt = theirs(torch.tensor(IDX), torch.tensor(offs))
        np.testing.assert_allclose(yo.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
        (yo * yo).sum().backward()
        (yt * yt).sum().backward()
        np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                                   rtol=1e-6)
    m = nn.EmbeddingBag(6, 2, padding_idx=2)
    assert m.weight.shape == (6, 2) and np.all(m.weight.detach().numpy()[2] == 0)
    assert repr(m) == repr(torch.nn.EmbeddingBag(6, 2, padding_idx=2))


def test_embedding_bag_errors():
    w = nbtorch.randn(5, 3)
    i = nbtorch.tensor([0, 1, 2])
    cases = [
        (lambda: F.embedding_bag(i, w, nbtorch.tensor([1, 2])), RuntimeError,
         r"offsets\[0\] has to be 0"),
        (lambda: F.embedding_bag(i, w, nbtorch.tensor([0, 4])), RuntimeError,
         r"offsets\[-1\] can not be greater than input's length 3 but got offsets\[-1\] of 4"),
        (lambda: F.embedding_bag(nbtorch.tensor([0, 1, 5]), w, nbtorch.tensor([0, 1])),
         RuntimeError, r"Index 2 of input takes value 5 which is not in the valid range \[0, 5\)"),
        (lambda: F.embedding_bag(nbtorch.tensor([0.0, 1.0]), w, nbtorch.tensor([0, 1])),
         RuntimeError, "'indices' to have one of the following scalar types: Long, Int; but got "
                       "torch.FloatTensor"),
        (lambda: F.embedding_bag(i, w, nbtorch.tensor([0, 1]), padding_idx=5), RuntimeError,
         "padding_idx must be within the number of embeddings, -5 through 4, but got 5"),
        (lambda: F.embedding_bag(i.reshape(1, 3), w, nbtorch.tensor([0])), ValueError,
         "if input is 2D, then offsets has to be None"),
        (lambda: F.embedding_bag(i, w), ValueError, "offsets has to be a 1D Tensor but got None"),
        (lambda: F.embedding_bag(i.reshape(1, 1, 3), w), ValueError,
         "input has to be 1D or 2D Tensor, but got Tensor of dimension 3"),
        (lambda: F.embedding_bag(i, w, nbtorch.tensor([0]), mode="min"), ValueError,
         "mode has to be one of sum, mean or max"),
        (lambda: F.embedding_bag(i, w, nbtorch.tensor([0]), mode="max", scale_grad_by_freq=True),
         ValueError, "max mode does not support scaling the gradient by the frequency"),
        (lambda: F.embedding_bag(i, w, nbtorch.tensor([0]), per_sample_weights=nbtorch.ones(3)),
         NotImplementedError, "per_sample_weights is only supported for mode='sum' "
                              r"\(got mode='mean'\)"),
        (lambda: F.embedding_bag(i, w, nbtorch.tensor([0]), per_sample_weights=nbtorch.ones(2)),
         ValueError, "then it must have the same shape as the input"),
        (lambda: F.embedding_bag(i, nbtorch.randn(5), nbtorch.tensor([0])), ValueError,
         "weight has to be a 2D Tensor, but got Tensor of dimension 1"),
        (lambda: nn.EmbeddingBag(5, 3, padding_idx=6), AssertionError,
         "padding_idx must be within num_embeddings"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_compiles_whole_and_trains_as_eager(mode):
    """One node whose forward and backward read each call's indices (a capture replays
    them): fullgraph compile, new indices every step, the same losses and weights."""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.bag = nn.EmbeddingBag(20, 4, mode=mode, padding_idx=3)
            self.lin = nn.Linear(4, 2)

        def forward(self, ids, offs, psw=None):
            return self.lin(self.bag(ids, offs, per_sample_weights=psw))

    nbtorch.manual_seed(0)
    eager, twin = Model(), Model()
    twin.load_state_dict(eager.state_dict())
    fast = nbtorch.compile(twin, fullgraph=True)
    opts = [nbtorch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, twin)]
    rng = np.random.default_rng(1)
    for _ in range(3):
        ids, offs = _t(rng.integers(0, 20, 10)), _t(np.array([0, 3, 3, 7]))
        psw = _t(rng.standard_normal(10).astype("f4"), True) if mode == "sum" else None
        psw2 = psw.detach().clone().requires_grad_() if psw is not None else None
        losses = [m(ids, offs, p).pow(2).sum() for m, p in ((eager, psw), (fast, psw2))]
        for opt, loss in zip(opts, losses):
            opt.zero_grad()
            loss.backward()
            opt.step()
        assert abs(losses[0].item() - losses[1].item()) < 1e-5
        if psw is not None:
            np.testing.assert_allclose(psw.grad.numpy(), psw2.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(eager.bag.weight.detach().numpy(),
                               twin.bag.weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_embedding_bag_max_gradient_goes_to_the_first_maximum():
    """Tied maxima: the gradient goes to the first row holding it, as PyTorch's max_indices;
    double backward is refused with the reason."""
    w = _t(np.array([[1.0, 5.0], [1.0, 2.0], [0.0, 5.0]]), True)
    y = F.embedding_bag(_t(np.array([1, 0, 2])), w, _t(np.array([0])), mode="max")
    assert y.tolist() == [[1.0, 5.0]]
    y.sum().backward()
    assert w.grad.tolist() == [[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]]
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        tw = torch.tensor(w.detach().numpy(), requires_grad=True)
        torch.nn.functional.embedding_bag(torch.tensor([1, 0, 2]), tw, torch.tensor([0]),
                                          mode="max").sum().backward()
        assert tw.grad.tolist() == w.grad.tolist()
    y = F.embedding_bag(_t(np.array([1, 0, 2])), w, _t(np.array([0])), mode="max")
    v = nbtorch.ones(1, 2, dtype=w.dtype, requires_grad=True)
    (g,) = nbtorch.autograd.grad(y, w, grad_outputs=v, create_graph=True)
    with pytest.raises(RuntimeError, match="double backward is not supported in mode 'max'"):
        g.sum().backward()


def test_embedding_bag_double_backward_sum_and_mean():
    """The weight's gradient is linear in the output's: gradgradcheck for sum and mean."""
    from nbtorch.autograd import gradgradcheck
    w = _t(np.random.default_rng(0).standard_normal((10, 3)), True)
    idx, offs = _t(np.array([1, 2, 4, 5, 7, 3, 2, 9, 0])), _t(OFFS)
    for mode in ("sum", "mean"):
        assert gradgradcheck(lambda w: F.embedding_bag(idx, w, offs, mode=mode, padding_idx=2),
                             (w,))
