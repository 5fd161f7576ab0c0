"""autocast against PyTorch 2.13 on the CPU: output dtypes per op category, nesting,
no_grad, the weight cast cache, thread-locality, and that the hooks leave no trace."""
import importlib
import re
import sys
import threading
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch.amp import _hooks

torch = pytest.importorskip("torch")

R = np.random.RandomState(0)


def _arr(*shape):
    return R.randn(*shape).astype(np.float32)


def _inputs(m, spec):
    """Tensors of `m` from (array, dtype name) pairs, the same values in both libraries."""
    return [m.tensor(a).to(getattr(m, dt)) if isinstance(a, np.ndarray) else a
            for a, dt in spec]


A, B = _arr(3, 4), _arr(4, 5)
X4, W4 = _arr(2, 3, 6, 6), _arr(4, 3, 3, 3)
B3, C3 = _arr(2, 3, 4), _arr(2, 4, 5)
V5 = _arr(2, 3, 4, 4, 4)
LOGITS, TARGET = _arr(4, 5), np.array([0, 2, 1, 4])

# name -> (inputs as (array, dtype), call(m, *tensors))
CASES = {
    # run in the low dtype
    "mm": ([(A, "float32"), (B, "float32")], lambda m, a, b: m.mm(a, b)),
    "mm mixed": ([(A, "float32"), (B, "bfloat16")], lambda m, a, b: m.mm(a, b)),
    "matmul op": ([(A, "float32"), (B, "float32")], lambda m, a, b: a @ b),
    "Tensor.matmul": ([(A, "float32"), (B, "float32")], lambda m, a, b: a.matmul(b)),
    "bmm": ([(B3, "float32"), (C3, "float32")], lambda m, a, b: m.bmm(a, b)),
    "baddbmm": ([(B3, "float32"), (C3, "float32")],
                lambda m, a, b: m.baddbmm(m.zeros(2, 3, 5), a, b)),
    "addmm": ([(A, "float32"), (B, "float32")], lambda m, a, b: m.addmm(m.ones(5), a, b)),
    "linear": ([(A, "float32"), (B.T.copy(), "float32")],
               lambda m, a, w: m.nn.functional.linear(a, w, m.ones(5))),
    "conv2d": ([(X4, "float32"), (W4, "float32")],
               lambda m, x, w: m.nn.functional.conv2d(x, w, m.zeros(4), padding=1)),
    "conv1d": ([(B3, "float32"), (_arr(2, 3, 2), "float32")],
               lambda m, x, w: m.nn.functional.conv1d(x, w)),
    "conv_transpose2d": ([(X4, "float32"), (W4.transpose(1, 0, 2, 3).copy(), "float32")],
                         lambda m, x, w: m.nn.functional.conv_transpose2d(x, w)),
    "prelu": ([(A, "float32")], lambda m, a: m.nn.functional.prelu(a, m.tensor([0.25]))),
    "float64 stays": ([(A, "float64"), (B, "float64")], lambda m, a, b: m.mm(a, b)),
    "int stays": ([], lambda m: m.mm(m.ones(2, 2, dtype=m.int64), m.ones(2, 2, dtype=m.int64))),
    # run in float32
    "mse_loss": ([(A, "bfloat16"), (A, "float32")], lambda m, a, b: m.nn.functional.mse_loss(a, b)),
    "cross_entropy": ([(LOGITS, "bfloat16")],
                      lambda m, x: m.nn.functional.cross_entropy(x, m.tensor(TARGET))),
    "nll_loss": ([(LOGITS, "bfloat16")],
                 lambda m, x: m.nn.functional.nll_loss(x, m.tensor(TARGET))),
    "l1_loss": ([(A, "bfloat16"), (A, "bfloat16")], lambda m, a, b: m.nn.functional.l1_loss(a, b)),
    "bce_with_logits": ([(A, "bfloat16"), (np.abs(A) / 3, "bfloat16")],
                        lambda m, a, b: m.nn.functional.binary_cross_entropy_with_logits(a, b)),
    "kl_div": ([(A, "bfloat16"), (np.abs(A), "bfloat16")],
               lambda m, a, b: m.nn.functional.kl_div(a, b, reduction="batchmean")),
    "prod": ([(A, "bfloat16")], lambda m, a: m.prod(a)),
    "cdist": ([(A, "bfloat16"), (A, "float32")], lambda m, a, b: m.cdist(a, b)),
    "trace": ([(A, "bfloat16")], lambda m, a: m.trace(a)),
    "linalg.inv": ([(np.eye(3, dtype=np.float32) * 2, "bfloat16")], lambda m, a: m.linalg.inv(a)),
    "max_pool3d": ([(V5, "bfloat16")], lambda m, x: m.nn.functional.max_pool3d(x, 2)),
    "adaptive_avg_pool3d": ([(V5, "bfloat16")],
                            lambda m, x: m.nn.functional.adaptive_avg_pool3d(x, 1)),
    # not listed on the CPU: whatever dtypes they are given
    "softmax": ([(A, "bfloat16")], lambda m, a: m.softmax(a, -1)),
    "exp": ([(A, "bfloat16")], lambda m, a: a.exp()),
    "sum": ([(A, "bfloat16")], lambda m, a: a.sum()),
    "layer_norm mixed": ([(A, "bfloat16")],
                         lambda m, a: m.nn.functional.layer_norm(a, (4,), m.ones(4), m.zeros(4))),
    "add promotes": ([(A, "bfloat16"), (A, "float32")], lambda m, a, b: a + b),
    "relu": ([(A, "bfloat16")], lambda m, a: m.relu(a)),
    # widest input type
    "cat": ([(A, "bfloat16"), (A, "float32")], lambda m, a, b: m.cat([a, b])),
    "cat low": ([(A, "bfloat16"), (A, "bfloat16")], lambda m, a, b: m.cat((a, b))),
    "stack": ([(A, "float32"), (A, "bfloat16")], lambda m, a, b: m.stack([a, b])),
    "index_copy": ([(A, "bfloat16"), (A[:2], "float32")],
                   lambda m, a, b: a.index_copy(0, m.tensor([0, 2]), b)),
}


def _run(m, name, dtype):
    spec, call = CASES[name]
    with m.autocast("cpu", dtype=getattr(m, dtype)):
        return call(m, *_inputs(m, spec))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", list(CASES))
def test_output_dtype_matches_pytorch(name, dtype):
    try:
        want = _run(torch, name, dtype)
    except RuntimeError as e:            # e.g. promote over bfloat16 in float16 autocast
        with pytest.raises(RuntimeError, match=str(e).split("\n")[0]):
            _run(nbtorch, name, dtype)
        return
    got = _run(nbtorch, name, dtype)
    assert str(got.dtype) == str(want.dtype)
    np.testing.assert_allclose(got.float().detach().numpy(), want.float().detach().numpy(),
                               rtol=3e-2, atol=3e-2)


X3 = _arr(2, 3, 4)
# modules and composite ops whose inner ops autocast (dtypes compared; weights differ)
COMPOSITE = {
    "lstm": lambda m, x: m.nn.LSTM(4, 5, batch_first=True)(x)[1][1],
    "lstm 2 layers bidir": lambda m, x: m.nn.LSTM(4, 5, 2, bidirectional=True)(x)[0],
    "gru": lambda m, x: m.nn.GRU(4, 5, batch_first=True)(x)[0],
    "rnn": lambda m, x: m.nn.RNN(4, 5, batch_first=True)(x)[0],
    "lstm cell": lambda m, x: m.nn.LSTMCell(4, 5)(x[0])[0],
    "multihead attention": lambda m, x: m.nn.MultiheadAttention(4, 2, batch_first=True)(
        x, x, x)[1],
    "transformer layer": lambda m, x: m.nn.TransformerEncoderLayer(4, 2, 8,
                                                                   batch_first=True)(x),
    "embedding": lambda m, x: m.nn.Embedding(5, 3)(m.tensor([1, 2])),
    "bilinear": lambda m, x: m.nn.Bilinear(4, 4, 2)(x[0], x[0]),
    "sdpa": lambda m, x: m.nn.functional.scaled_dot_product_attention(x, x, x),
    "einsum": lambda m, x: m.einsum("bij,bkj->bik", x, x),
    "einsum one operand": lambda m, x: m.einsum("bii->b", x[:, :, :3]),
    "tensordot": lambda m, x: m.tensordot(x, x, dims=([2], [2])),
    "pad reflect": lambda m, x: m.nn.functional.pad(x.to(m.bfloat16), (1, 1), mode="reflect"),
    "pad replicate 2d": lambda m, x: m.nn.functional.pad(x[None].to(m.bfloat16), (1, 1, 1, 1),
                                                         mode="replicate"),
    "pad constant": lambda m, x: m.nn.functional.pad(x.to(m.bfloat16), (1, 1)),
    "interpolate": lambda m, x: m.nn.functional.interpolate(x.to(m.bfloat16), scale_factor=2),
    "norm": lambda m, x: x.to(m.bfloat16).norm(),
    "dot": lambda m, x: m.dot(x[0, 0], x[0, 1]),
    "mv": lambda m, x: m.mv(x[0], x[0, 0]),
    "cosine_similarity": lambda m, x: m.nn.functional.cosine_similarity(x.to(m.bfloat16), x),
    "multi_dot": lambda m, x: m.linalg.multi_dot([x[0], x[0].T, x[0]]),
    "torch.conv2d": lambda m, x: m.conv2d(x[None], m.ones(1, 2, 2, 2)),
    "torch.convolution": lambda m, x: m.convolution(x[None], m.ones(1, 2, 2, 2), None, [1, 1],
                                                    [0, 0], [1, 1], False, [0, 0], 1),
    "torch.layer_norm": lambda m, x: m.layer_norm(x.to(m.bfloat16), (4,)),
    "torch.grid_sampler": lambda m, x: m.grid_sampler(x[None], m.zeros(1, 2, 2, 2), 0, 0,
                                                      False),
}


def test_policy_lists_cover_pytorchs_registrations():
    """Every op PyTorch registers an autocast kernel for, that nbtorch has under that name,
    is in nbtorch's lists (catches a list falling behind new nbtorch ops)."""
    from nbtorch.amp import _policies
    registrations = getattr(torch._C, "_dispatch_get_registrations_for_dispatch_key", None)
    if registrations is None:
        pytest.skip("this PyTorch cannot list its autocast registrations")

    def exists(name):
        prefix, _, attr = name.rpartition(".")
        owners = {"linalg": [nbtorch.linalg], "fft": [getattr(nbtorch, "fft", None)],
                  "": [nbtorch, nbtorch.nn.functional, nbtorch.Tensor]}[prefix]
        return any(o is not None and hasattr(o, attr) for o in owners)

    for key, table in (("AutocastCPU", _policies.CPU), ("AutocastCUDA", _policies.CUDA)):
        listed = {w for names in table.values() for w in names.split()}
        missing = []
        for reg in registrations(key):
            op = reg.replace("aten::", "").split(".")[0]
            name = re.sub(r"^(linalg|fft)_", r"\1.", op)
            if exists(name) and name not in listed:
                missing.append(name)
        assert not missing, f"{key}: {missing}"


@pytest.mark.parametrize("name", list(COMPOSITE))
def test_composite_dtype_matches_pytorch(name):
    dtypes = []
    for m in (nbtorch, torch):
        with m.autocast("cpu"):
            dtypes.append(str(COMPOSITE[name](m, m.tensor(X3)).dtype))
    assert dtypes[0] == dtypes[1]


def test_lstm_backward_under_autocast():
    lstm = nbtorch.nn.LSTM(4, 5)
    with nbtorch.autocast("cpu"):
        out, (h, c) = lstm(nbtorch.tensor(X3))
    assert out.dtype == h.dtype == c.dtype == nbtorch.bfloat16
    out.float().sum().backward()
    assert all(p.grad.dtype == nbtorch.float32 for p in lstm.parameters())


def test_hooks_leave_no_trace():
    """Outside autocast the ops are the plain functions (nothing to pay for)."""
    plain = (nbtorch.mm, nbtorch.Tensor.matmul, nbtorch.nn.functional.linear, nbtorch.cat)
    with nbtorch.autocast("cpu"):
        assert nbtorch.mm is not plain[0] and nbtorch.Tensor.matmul is not plain[1]
        with nbtorch.autocast("cpu", enabled=False):
            assert nbtorch.mm(nbtorch.ones(2, 2), nbtorch.ones(2, 2)).dtype == nbtorch.float32
    assert (nbtorch.mm, nbtorch.Tensor.matmul, nbtorch.nn.functional.linear,
            nbtorch.cat) == plain
    assert _hooks._USERS[0] == 0 and not _hooks.STATE.on


def test_nesting_and_state_functions():
    a = nbtorch.ones(2, 2)
    assert not nbtorch.is_autocast_enabled("cpu")
    assert nbtorch.get_autocast_dtype("cpu") is nbtorch.bfloat16
    assert nbtorch.get_autocast_dtype("cuda") is nbtorch.float16
    with nbtorch.autocast("cpu"):
        assert nbtorch.is_autocast_enabled("cpu") and not nbtorch.is_autocast_enabled()
        with nbtorch.autocast("cpu", enabled=False):
            assert nbtorch.mm(a, a).dtype == nbtorch.float32
            with nbtorch.autocast("cpu", dtype=nbtorch.float16):
                assert nbtorch.mm(a, a).dtype == nbtorch.float16
        assert nbtorch.mm(a, a).dtype == nbtorch.bfloat16
    assert nbtorch.get_autocast_dtype("cpu") is nbtorch.bfloat16
    nbtorch.set_autocast_enabled("cpu", True)          # by hand, as PyTorch allows
    try:
        assert nbtorch.mm(a, a).dtype == nbtorch.bfloat16
    finally:
        nbtorch.set_autocast_enabled("cpu", False)
    assert nbtorch.mm(a, a).dtype == nbtorch.float32 and _hooks._USERS[0] == 0
    with pytest.warns(DeprecationWarning, match=r"get_autocast_cpu_dtype\(\) is deprecated"):
        assert nbtorch.get_autocast_cpu_dtype() is nbtorch.bfloat16


def test_decorator_and_bad_arguments():
    @nbtorch.autocast("cpu")
    def f(a):
        return a @ a
    assert f(nbtorch.ones(2, 2)).dtype == nbtorch.bfloat16
    with pytest.raises(TypeError, match=r"autocast\(\)\(func\) requires a callable"):
        nbtorch.autocast("cpu")(3)
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        nbtorch.autocast(nbtorch.device("cpu"))
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'mps'"):
        nbtorch.autocast("mps")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, .* device string: xyz"):
        nbtorch.autocast("xyz")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, .* device string: xyz"):
        torch.autocast("xyz")
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not "
                                         "supported. Disabling autocast."):
        ctx = nbtorch.autocast("cpu", dtype=nbtorch.float64)
    with ctx:
        assert nbtorch.mm(nbtorch.ones(2, 2), nbtorch.ones(2, 2)).dtype == nbtorch.float32
    if not nbtorch.cuda.is_available():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            nbtorch.autocast("cuda")


def test_training_step_under_autocast_matches_pytorch_dtypes():
    """A small CNN: forward under autocast, backward outside it; gradients in float32."""
    def make(m):
        nn = m.nn
        return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                             nn.Linear(64, 5), nn.LayerNorm(5), nn.GELU())
    x, y = _arr(2, 3, 6, 6), np.array([1, 3])
    dtypes = {}
    for m in (nbtorch, torch):
        model = make(m)
        with m.autocast("cpu"):
            out = model(m.tensor(x))
            loss = m.nn.functional.cross_entropy(out, m.tensor(y))
        loss.backward()
        dtypes[m] = (str(out.dtype), str(loss.dtype),
                     [str(p.grad.dtype) for p in model.parameters()])
    assert dtypes[nbtorch] == dtypes[torch]


def test_backward_inside_region_and_no_grad():
    lin = nbtorch.nn.Linear(4, 3)
    x = nbtorch.randn(2, 4)
    with nbtorch.autocast("cpu"):
        with nbtorch.no_grad():
            y0 = lin(x)
        assert y0.dtype == nbtorch.bfloat16 and y0.grad_fn is None
        y = lin(x)                           # a cast made under no_grad is not reused
        y.float().sum().backward()
    assert lin.weight.grad is not None and lin.weight.grad.dtype == nbtorch.float32
    assert lin.bias.grad.dtype == nbtorch.float32


def test_weight_cast_cache():
    lin = nbtorch.nn.Linear(4, 3)
    x = nbtorch.randn(2, 4)
    with nbtorch.autocast("cpu"):
        lin(x)
        lin(x)
        cache = dict(_hooks.STATE.cache)
        with nbtorch.autocast("cpu"):
            lin(x)
        assert len(_hooks.STATE.cache) == len(cache)        # the inner exit keeps it
    assert {id(lin.weight), id(lin.bias)} == set(cache)
    assert all(c.dtype == nbtorch.bfloat16 for _, c in cache.values())
    assert not _hooks.STATE.cache                            # cleared at the outermost exit
    with nbtorch.autocast("cpu", cache_enabled=False):
        lin(x)
        assert not _hooks.STATE.cache


def test_autocast_is_per_thread():
    a = nbtorch.ones(2, 2)
    seen = []
    with nbtorch.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append(nbtorch.mm(a, a).dtype))
        t.start()
        t.join()
        assert nbtorch.mm(a, a).dtype == nbtorch.bfloat16
    assert seen == [nbtorch.float32]


def test_custom_fwd_and_deprecated_aliases():
    class Mul(nbtorch.autograd.Function):
        @staticmethod
        @nbtorch.amp.custom_fwd(device_type="cpu", cast_inputs=nbtorch.float32)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.mm(b)                   # autocast is off in here

        @staticmethod
        @nbtorch.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g.mm(b.t()), a.t().mm(g)
    a = nbtorch.ones(2, 2, dtype=nbtorch.bfloat16, requires_grad=True)
    with nbtorch.autocast("cpu"):
        out = Mul.apply(a, nbtorch.ones(2, 2))
    assert out.dtype == nbtorch.float32
    out.sum().backward()
    assert a.grad.dtype == nbtorch.bfloat16
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cpu_amp = importlib.import_module("nbtorch.cpu.amp")
        with cpu_amp.autocast():
            assert nbtorch.is_autocast_enabled("cpu")
        cpu_amp.GradScaler()
    assert [x.category for x in w] == [FutureWarning, FutureWarning]
    assert "torch.amp.autocast('cpu', args...)" in str(w[0].message)


def test_compile_guards_on_autocast_state():
    """A graph recorded under autocast holds its casts: outside autocast it is not reused."""
    model = nbtorch.nn.Sequential(nbtorch.nn.Linear(4, 8), nbtorch.nn.ReLU(),
                                  nbtorch.nn.Linear(8, 2))
    compiled = nbtorch.compile(model)
    x = nbtorch.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no fallback to eager: the cache is bypassed
        with nbtorch.autocast("cpu"):
            assert compiled(x).dtype == nbtorch.bfloat16
            assert compiled(x).dtype == nbtorch.bfloat16
        assert compiled(x).dtype == nbtorch.float32


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_checkpoint_recomputes_under_the_forwards_autocast(use_reentrant):
    from nbtorch.utils.checkpoint import checkpoint
    model = nbtorch.nn.Sequential(nbtorch.nn.Linear(4, 8), nbtorch.nn.ReLU(),
                                  nbtorch.nn.Linear(8, 2))
    x = nbtorch.randn(3, 4, requires_grad=True)
    grads = []
    for run in (lambda: checkpoint(model, x, use_reentrant=use_reentrant), lambda: model(x)):
        model.zero_grad()
        x.grad = None
        with nbtorch.autocast("cpu"):
            y = run()
        assert y.dtype == nbtorch.bfloat16
        y.float().sum().backward()               # outside the region, as the recipe does
        grads.append([x.grad.clone()] + [p.grad.clone() for p in model.parameters()])
    for a, b in zip(*grads):
        assert a.dtype == b.dtype and nbtorch.equal(a, b)


def test_names_imported_by_user_code_autocast():
    """``from torch.nn.functional import linear`` in a user module is hooked too."""
    import types
    user = types.ModuleType("user_model_for_autocast_test")
    exec("from nbtorch.nn.functional import linear\nfrom nbtorch import matmul\n"
         "def f(x, w):\n    return linear(x, w), matmul(x, w.t())\n", user.__dict__)
    sys.modules[user.__name__] = user
    try:
        x, w = nbtorch.ones(2, 3), nbtorch.ones(4, 3)
        with nbtorch.autocast("cpu"):
            assert [t.dtype for t in user.f(x, w)] == [nbtorch.bfloat16] * 2
        assert [t.dtype for t in user.f(x, w)] == [nbtorch.float32] * 2
        assert user.linear is nbtorch.nn.functional.linear
    finally:
        del sys.modules[user.__name__]
