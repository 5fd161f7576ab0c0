"""The view ops' direct path (ops/views.py `_plain`): unrecorded and unwatched calls make
the view without the Function, with the layout the Function gives; recorded, traced or
profiled calls keep the Function (its node, the trace's or profiler's event)."""
import numpy as np
import pytest

import nbtorch
from nbtorch.ops import views

VIEWS = {
    "t": lambda x: x.t(),
    "transpose": lambda x: x.transpose(0, 2),
    "transpose(-1, 1)": lambda x: x.transpose(-1, 1),
    "permute": lambda x: x.permute(2, 0, 1),
    "view": lambda x: x.view(-1, x.shape[-1]),
    "reshape": lambda x: x.reshape(x.shape[0], -1),
    "unsqueeze(0)": lambda x: x.unsqueeze(0),
    "unsqueeze(2)": lambda x: x.unsqueeze(2),
    "unsqueeze(-1)": lambda x: x.unsqueeze(-1),
    "flatten": lambda x: x.flatten(1),
}
SOURCES = {
    "contiguous": lambda base: base,
    "transposed": lambda base: base.transpose(0, 2),
    "sliced": lambda base: base[1:, :, ::2],
    "expanded": lambda base: base[:, :1].expand(-1, 3, -1),
}


def _layout(t):
    return tuple(t.shape), t.stride(), t.storage_offset()


@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize("name", sorted(VIEWS))
def test_direct_views_have_the_functions_layout(name, source, monkeypatch):
    base = nbtorch.tensor(np.arange(4 * 3 * 6, dtype=np.float32).reshape(4, 3, 6))
    x = SOURCES[source](base)
    if name == "t":
        x = x[0]                              # t() takes at most 2 dims
    fn = VIEWS[name]
    try:
        direct = fn(x)
    except RuntimeError as exc:              # (view of a gapped layout): the same error
        monkeypatch.setattr(views, "_plain", lambda t: False)
        with pytest.raises(RuntimeError, match=str(exc)[:40]):
            fn(x)
        return
    monkeypatch.setattr(views, "_plain", lambda t: False)
    through = fn(x)
    assert _layout(direct) == _layout(through)
    np.testing.assert_array_equal(direct.numpy(), through.numpy())
    if direct._storage is x._storage:                   # a view (reshape may copy)
        root = x if x._base is None else x._base
        assert direct._base is root and through._base is root
    assert direct.grad_fn is None


def test_recorded_traced_and_profiled_views_keep_their_function():
    x = nbtorch.ones(2, 3, requires_grad=True)
    assert type(x.t().grad_fn).__name__ == "TBackward0"
    assert type(x.unsqueeze(0).grad_fn).__name__ == "UnsqueezeBackward0"
    assert type(x.transpose(0, 1).grad_fn).__name__ == "TransposeBackward0"
    with nbtorch.no_grad():
        assert x.t().grad_fn is None
    y = nbtorch.ones(2, 3)
    with nbtorch.profiler.profile() as prof:
        y.t()
        y.view(3, 2)
    assert {e.key for e in prof.key_averages()} == {"Permute", "View"}   # t(): a Permute

    def f(a):
        return a.t().reshape(-1) * 2

    traced = nbtorch.jit.trace(f, (nbtorch.ones(2, 3),))
    a = nbtorch.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(traced(a).numpy(), f(a).numpy())
    assert len(list(traced.graph.nodes)) >= 3
