"""nn.utils.rnn packing (PackedSequence, pack_padded_sequence, pad_packed_sequence,
pack_sequence, unpack_sequence, invert_permutation) and RNN/LSTM/GRU over packed input:
NumPy references, gradcheck, PyTorch's values, states and gradients, errors."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn as nn
from nbtorch.autograd import gradcheck
from nbtorch.nn.utils import rnn as R


def _t(a, requires_grad=False):
    return nbtorch.tensor(np.asarray(a), requires_grad=requires_grad)


LENS = [4, 2, 5, 1]
X = np.random.default_rng(0).standard_normal((5, 4, 3))


def test_pack_and_pad_match_numpy():
    packed = R.pack_padded_sequence(_t(X), LENS, enforce_sorted=False)
    order = np.argsort(-np.array(LENS), kind="stable")
    want = np.concatenate([X[t, [b for b in order if LENS[b] > t]] for t in range(5)])
    np.testing.assert_array_equal(packed.data.numpy(), want)
    assert packed.batch_sizes.tolist() == [4, 3, 2, 2, 1]
    assert packed.sorted_indices.tolist() == order.tolist()
    assert R.invert_permutation(packed.sorted_indices).tolist() == \
        packed.unsorted_indices.tolist()
    padded, lengths = R.pad_packed_sequence(packed, batch_first=True, padding_value=-1.0,
                                            total_length=6)
    assert lengths.tolist() == LENS and padded.shape == (4, 6, 3)
    for b, n in enumerate(LENS):
        np.testing.assert_array_equal(padded.numpy()[b, :n], X[:n, b])
        assert np.all(padded.numpy()[b, n:] == -1)
    seqs = [_t(X[:n, b]) for b, n in enumerate(LENS)]
    for a, b in zip(R.unpack_sequence(R.pack_sequence(seqs, enforce_sorted=False)), seqs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert gradcheck(lambda x: R.pad_packed_sequence(
        R.pack_padded_sequence(x, LENS, enforce_sorted=False))[0], (_t(X, True),))


def test_packed_sequence_methods_and_errors():
    packed = R.pack_sequence([_t(np.ones((3, 2))), _t(np.ones((2, 2)))])
    assert packed.double().data.dtype == nbtorch.float64
    assert packed.float().data.dtype == nbtorch.float32 and not packed.is_cuda
    assert packed.to(nbtorch.float32).batch_sizes is packed.batch_sizes
    assert R.bind(None, len) is None and R.bind([1], len) == 1
    with pytest.raises(RuntimeError, match="`lengths` array must be sorted in decreasing order"):
        R.pack_padded_sequence(_t(X), LENS)
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        R.pack_padded_sequence(_t(X), [5, 3, 2, 0])
    with pytest.raises(ValueError, match="Expected total_length to be at least the length of "
                                         "the longest sequence in input, but got "
                                         "total_length=2 and max sequence length being 3"):
        R.pad_packed_sequence(packed, total_length=2)


@pytest.mark.parametrize("mode, kw", [("LSTM", {"bidirectional": True, "num_layers": 2}),
                                      ("GRU", {"bidirectional": True}),
                                      ("RNN", {"num_layers": 2, "nonlinearity": "relu"}),
                                      ("LSTM", {"proj_size": 2})])
def test_rnn_on_packed_input_against_torch(mode, kw):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = getattr(torch.nn, mode)(3, 4, **kw).double()
    ours = getattr(nn, mode)(3, 4, **kw).double()
    ours.load_state_dict({k: _t(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    xo, xt = _t(X, True), torch.tensor(X, requires_grad=True)
    po = R.pack_padded_sequence(xo, LENS, enforce_sorted=False)
    pt = torch.nn.utils.rnn.pack_padded_sequence(xt, LENS, enforce_sorted=False)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    h_size = kw.get("proj_size", 4)
    h0 = np.random.default_rng(1).standard_normal((layers, 4, h_size))
    c0 = np.random.default_rng(2).standard_normal((layers, 4, 4))
    if mode == "LSTM":
        (oo, (ho, co)), (ot, (ht, ct)) = ours(po, (_t(h0), _t(c0))), \
            theirs(pt, (torch.tensor(h0), torch.tensor(c0)))
        np.testing.assert_allclose(co.detach().numpy(), ct.detach().numpy(), atol=1e-12)
    else:
        (oo, ho), (ot, ht) = ours(po, _t(h0)), theirs(pt, torch.tensor(h0))
    assert isinstance(oo, R.PackedSequence)
    assert oo.batch_sizes.tolist() == ot.batch_sizes.tolist()
    np.testing.assert_allclose(oo.data.detach().numpy(), ot.data.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(ho.detach().numpy(), ht.detach().numpy(), atol=1e-12)
    (oo.data.sum() + 2 * ho.sum()).backward()
    (ot.data.sum() + 2 * ht.sum()).backward()
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), atol=1e-12)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(dict(ours.named_parameters())[name].grad.numpy(),
                                   p.grad.numpy(), atol=1e-11)


def test_rnn_packed_equals_running_each_sequence_alone():
    gru = nn.GRU(3, 4, batch_first=True).double()
    packed = R.pack_sequence([_t(X[:n, b]) for b, n in enumerate(LENS)], enforce_sorted=False)
    out, h = gru(packed)
    padded, _ = R.pad_packed_sequence(out, batch_first=True)
    for b, n in enumerate(LENS):
        alone, h_alone = gru(_t(X[None, :n, b]))
        np.testing.assert_allclose(padded.detach().numpy()[b, :n], alone.detach().numpy()[0],
                                   atol=1e-12)
        np.testing.assert_allclose(h.detach().numpy()[:, b], h_alone.detach().numpy()[:, 0],
                                   atol=1e-12)
