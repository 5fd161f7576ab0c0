"""The fused LSTM ops (`ops/lstm.py`, `kernels/cpu/rnn.py`): the same values as the
op-by-op formulas, exact gradients (float64 gradcheck and gradgradcheck), and the
nodes a compiled LSTM records."""
import collections

import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import gradcheck, gradgradcheck
from nbtorch.ops import lstm as L


def _t(*shape, dtype=np.float64, seed=0, grad=True):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return nbtorch.tensor(a, requires_grad=grad)


def _grads(outs, inputs, seed=1):
    ws = [_t(*o.shape, dtype=o.detach().numpy().dtype, seed=seed + k, grad=False)
          for k, o in enumerate(outs)]
    loss = sum((o * w).sum() for o, w in zip(outs, ws))
    return nbtorch.autograd.grad(loss, inputs)


def test_cell_matches_the_op_formulas_float32():
    gates, c = _t(5, 24, dtype=np.float32), _t(5, 6, dtype=np.float32, seed=1)
    fused = L.lstm_cell(gates, c)
    assert type(fused[0].grad_fn).__name__ == "LSTMCellFusedBackward0"
    ref = L._cell_ops(gates, c)
    for a, b in zip(fused, ref):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)
    for a, b in zip(_grads(fused, [gates, c]), _grads(ref, [gates, c])):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reverse", [False, True])
def test_layer_matches_the_op_formulas_float32(reverse):
    xw, h0, c0, w = (_t(4, 3, 8, dtype=np.float32), _t(3, 2, dtype=np.float32, seed=1),
                     _t(3, 2, dtype=np.float32, seed=2), _t(8, 2, dtype=np.float32, seed=3))
    fused = L.lstm_layer(xw, h0, c0, w, reverse)
    assert type(fused[0].grad_fn).__name__ == "LSTMLayerBackward0"
    ref = L._layer_ops(xw, h0, c0, w, reverse)
    for a, b in zip(fused, ref):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)
    for a, b in zip(_grads(fused, [xw, h0, c0, w]), _grads(ref, [xw, h0, c0, w])):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reverse", [False, True])
def test_transposed_step_product_matches_the_op_formulas(reverse, monkeypatch):
    """Hidden sizes from rnn.SWAP_MIN_HIDDEN run each step's product as w_hh @ h^T and
    transpose it back (`rnn._step_product`): the values of the op formulas, float32 at
    the real threshold and float64 (gradcheck) with it lowered to these small shapes."""
    from nbtorch.kernels.cpu import rnn
    H = rnn.SWAP_MIN_HIDDEN
    xw, h0, c0, w = (_t(3, 9, 4 * H, dtype=np.float32), _t(9, H, dtype=np.float32, seed=1),
                     _t(9, H, dtype=np.float32, seed=2),
                     _t(4 * H, H, dtype=np.float32, seed=3) * 0.05)
    fused = L.lstm_layer(xw, h0, c0, w, reverse)
    ref = L._layer_ops(xw, h0, c0, w, reverse)
    for a, b in zip(fused, ref):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)
    monkeypatch.setattr(rnn, "SWAP_MIN_HIDDEN", 1)
    args = (_t(3, 2, 8), _t(2, 2, seed=1), _t(2, 2, seed=2), _t(8, 2, seed=3))
    assert gradcheck(lambda *a: L.lstm_layer(*a, reverse=reverse), args)
    out = L.lstm_layer(*args, reverse=reverse)
    monkeypatch.setattr(rnn, "SWAP_MIN_HIDDEN", 1 << 30)
    for a, b in zip(out, L.lstm_layer(*args, reverse=reverse)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-14)


def test_cell_gradcheck_and_gradgradcheck():
    gates, c = _t(3, 8), _t(3, 2, seed=1)
    assert gradcheck(L.lstm_cell, (gates, c))
    assert gradgradcheck(L.lstm_cell, (gates, c))


@pytest.mark.parametrize("reverse", [False, True])
def test_layer_gradcheck_and_gradgradcheck(reverse):
    args = (_t(3, 2, 8), _t(2, 2, seed=1), _t(2, 2, seed=2), _t(8, 2, seed=3))
    fn = lambda *a: L.lstm_layer(*a, reverse=reverse)              # noqa: E731
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


def test_bidirectional_lstm_gradcheck_through_states():
    """h_n and c_n carry gradients too (the fused backward's g_hT and g_cT)."""
    nbtorch.manual_seed(0)
    lstm = nbtorch.nn.LSTM(3, 2, num_layers=2, bidirectional=True).double()
    x, h0, c0 = _t(4, 2, 3), _t(4, 2, 2, seed=1), _t(4, 2, 2, seed=2)

    def fn(x, h0, c0):
        out, (h, c) = lstm(x, (h0, c0))
        return out, h, c
    assert gradcheck(fn, (x, h0, c0))


def test_other_dtypes_use_the_op_formulas():
    gates, c = _t(2, 8, dtype=np.float16, grad=False), _t(2, 2, dtype=np.float16, grad=False)
    h, c2 = L.lstm_cell(gates, c)
    ref = L._cell_ops(gates.float(), c.float())
    np.testing.assert_allclose(h.float().numpy(), ref[0].numpy(), atol=2e-3)


def test_compiled_lstm_records_fused_layers_and_matches_eager():
    nbtorch.manual_seed(0)
    lstm = nbtorch.nn.LSTM(4, 3, num_layers=2)
    x = _t(5, 2, 4, dtype=np.float32)
    out = lstm(x)[0]
    eager = _grads([out], [x] + list(lstm.parameters()))
    cm = nbtorch.compile(lstm)
    out_c = cm(x)[0]
    compiled = _grads([out_c], [x] + list(lstm.parameters()))
    assert not cm.fallback_reasons
    np.testing.assert_allclose(out_c.detach().numpy(), out.detach().numpy(), rtol=1e-6,
                               atol=1e-7)
    for a, b in zip(compiled, eager):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    entry = next(iter(cm._compiled._cache.values()))
    names = collections.Counter(getattr(n.target, "__name__", "")
                                for gm in (entry.cg.forward_gm, entry.cg.backward_gm)
                                for n in gm.graph.nodes if n.op == "call_function")
    assert names["lstmlayer_forward"] == 2 and names["lstmlayer_grad"] == 2


def test_lstm_matches_pytorch():
    torch = pytest.importorskip("torch")
    nbtorch.manual_seed(0)
    ours = nbtorch.nn.LSTM(5, 4, num_layers=2, bidirectional=True)
    theirs = torch.nn.LSTM(5, 4, num_layers=2, bidirectional=True)
    theirs.load_state_dict({k: torch.tensor(v.detach().numpy())
                            for k, v in ours.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((6, 3, 5)).astype(np.float32)
    xo, xt = nbtorch.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (oo, (ho, co)), (ot, (ht, ct)) = ours(xo), theirs(xt)
    (oo.sum() + ho.sum() * 2 + co.sum() * 3).backward()
    (ot.sum() + ht.sum() * 2 + ct.sum() * 3).backward()
    np.testing.assert_allclose(oo.detach().numpy(), ot.detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(xo.grad.numpy(), xt.grad.numpy(), atol=1e-5)
    for (n, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-5, err_msg=n)


def test_grad_from_two_outputs_of_one_node():
    """autograd.grad with h and c (outputs of one node) as roots: the engine counts the
    node's edges once (it counted them twice and never reached the inputs)."""
    x = _t(5, 4, dtype=np.float32)
    cell = nbtorch.nn.LSTMCell(4, 3)
    h, c = cell(x)
    ones = nbtorch.ones(5, 3)
    both = nbtorch.autograd.grad([h, c], [x], [ones, ones])[0]
    h, c = cell(x)
    summed = nbtorch.autograd.grad(h.sum() + c.sum(), [x])[0]
    np.testing.assert_allclose(both.numpy(), summed.numpy(), rtol=1e-6)


def test_compiled_lstm_cell_matches_eager():
    nbtorch.manual_seed(0)
    cell = nbtorch.nn.LSTMCell(4, 3)
    x = _t(5, 4, dtype=np.float32)
    eager = _grads(list(cell(x)), [x] + list(cell.parameters()))
    cm = nbtorch.compile(cell)
    compiled = _grads(list(cm(x)), [x] + list(cell.parameters()))
    assert not cm.fallback_reasons
    for a, b in zip(compiled, eager):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reverse", [False, True])
def test_layer_second_derivatives_when_the_output_gradient_depends_on_the_input(reverse):
    """With a loss like out ** 2 the output gradient depends on xw: the double backward
    recomputed the layer and differentiated it with respect to xw and the gradient
    together, counting the path through the gradient twice (gradgradcheck failed). It
    takes partial derivatives now (ops/_fused_grad.py's vjp)."""
    args = (_t(3, 2, 8), _t(2, 2, seed=1), _t(2, 2, seed=2), _t(8, 2, seed=3))
    assert gradgradcheck(lambda *a: L.lstm_layer(*a, reverse=reverse)[0].pow(2), args)
    assert gradgradcheck(lambda *a: L.lstm_layer(*a, reverse=reverse)[2].sin(), args)


def test_vjp_op_is_differentiable_to_any_order():
    from nbtorch.ops._fused_grad import vjp
    x = nbtorch.randn(3, dtype=nbtorch.float64, requires_grad=True)
    y = nbtorch.randn(3, dtype=nbtorch.float64, requires_grad=True)

    def g(x, y):
        a, b = vjp(lambda x, y: (x.sin() * y, x * x), (x, y), (x * 2, y))  # cotangents of x
        return a + b
    assert gradcheck(g, (x, y))
    assert gradgradcheck(g, (x, y))
