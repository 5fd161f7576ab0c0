"""The meta device: factories, printing, moves, errors, modules built and run on meta."""
import copy

import numpy as np
import pytest

import nbtorch as torch
from nbtorch import nn


def mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 4))


def test_device_and_factories():
    d = torch.device("meta")
    assert d.type == "meta" and d.index is None and str(d) == "meta"
    assert repr(d) == "device(type='meta')"
    for t in (torch.empty(3, 4, device="meta"), torch.zeros(3, 4, device=d),
              torch.ones(3, 4, device="meta"), torch.full((3, 4), 2.0, device="meta"),
              torch.rand(3, 4, device="meta"), torch.randn(3, 4, device="meta")):
        assert t.is_meta and t.device.type == "meta" and t.shape == (3, 4)
        assert t.stride() == (4, 1) and t.dtype is torch.float32
    a = torch.arange(5, device="meta")
    assert a.is_meta and a.shape == (5,) and a.dtype is torch.int64
    assert not torch.ones(2).is_meta


def test_no_memory_taken():
    t = torch.empty(100_000, 100_000, device="meta")     # 40 GB if it were allocated
    assert t.untyped_storage().nbytes() == 40_000_000_000
    assert t.nbytes == 40_000_000_000
    assert t._storage.data.strides == (0,)
    assert t.data_ptr() == 0
    nn.init.normal_(t)                   # a no-op, at once
    assert (t * 2 + 1).sum(0).shape == (100_000,)


def test_repr_matches_pytorch():
    tt = pytest.importorskip("torch")
    cases = [lambda l: l.empty(3, 4, device="meta"),
             lambda l: l.empty((), device="meta"),
             lambda l: l.empty(0, 3, device="meta"),
             lambda l: l.arange(5, device="meta"),
             lambda l: l.empty(3, dtype=l.float64, device="meta", requires_grad=True),
             lambda l: l.nn.Parameter(l.empty(2, 2, device="meta")),
             lambda l: (l.empty(2, device="meta", requires_grad=True) * 2).sum()]
    for c in cases:
        assert repr(c(torch)) == repr(c(tt))


def test_moves():
    x = torch.randn(3, 4)
    y = x.to("meta")
    assert y.is_meta and y.shape == (3, 4) and y.dtype is torch.float32
    assert x.to("meta", torch.float64).dtype is torch.float64
    e = torch.empty_like(y)
    assert e.is_meta and e.shape == (3, 4)
    c = torch.empty_like(y, device="cpu")
    assert c.device.type == "cpu" and c.shape == (3, 4)
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        y.to("cpu")
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        y.cpu()


def test_reading_values_raises_pytorchs_errors():
    t = torch.empty(3, 4, device="meta")
    with pytest.raises(RuntimeError, match=r"Tensor.item\(\) cannot be called on meta tensors"):
        t[0, 0].item()
    with pytest.raises(RuntimeError, match=r"Tensor.item\(\) cannot be called on meta tensors"):
        float(t.sum())
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        t.item()
    with pytest.raises(TypeError, match="can't convert meta device type tensor to numpy"):
        t.numpy()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        t.tolist()
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor"):
        np.asarray(t)


def test_data_dependent_ops_raise():
    t = torch.empty(3, 4, device="meta")
    with pytest.raises(NotImplementedError):
        torch.nonzero(t)
    with pytest.raises(NotImplementedError):
        t[t > 0]


def test_default_device_context_and_set_default():
    with torch.device("meta"):
        model = mlp()
        z = torch.zeros(2)
    assert z.is_meta and all(p.is_meta for p in model.parameters())
    assert all(p.requires_grad for p in model.parameters())
    assert not torch.zeros(2).is_meta
    torch.set_default_device("meta")
    try:
        assert torch.ones(2).is_meta
    finally:
        torch.set_default_device(None)
    assert not torch.ones(2).is_meta
    lin = nn.Linear(3, 5, device="meta")
    assert lin.weight.is_meta and lin.weight.shape == (5, 3) and lin.bias.is_meta


def test_init_on_meta_is_a_noop():
    w = torch.empty(4, 6, device="meta")
    for init in (nn.init.kaiming_uniform_, nn.init.xavier_normal_, nn.init.zeros_,
                 nn.init.ones_, nn.init.orthogonal_, nn.init.trunc_normal_):
        assert init(w) is w and w.is_meta
    assert nn.init.constant_(w, 3.0) is w


def test_to_empty_then_init():
    with torch.device("meta"):
        model = mlp()
    model.to_empty(device="cpu")
    for p in model.parameters():
        assert p.device.type == "cpu" and isinstance(p, nn.Parameter) and p.requires_grad
    for layer in (model[0], model[3]):
        layer.reset_parameters()
    assert model(torch.randn(2, 8)).shape == (2, 4)


def test_load_state_dict_assign_replaces_meta_params():
    with torch.device("meta"):
        model = mlp()
    ref = mlp()
    model.load_state_dict(ref.state_dict(), assign=True)
    assert not any(p.is_meta for p in model.parameters())
    model.eval(), ref.eval()
    x = torch.randn(2, 8)
    np.testing.assert_array_equal(model(x).detach().numpy(), ref(x).detach().numpy())


def test_deepcopy_to_meta():
    base = copy.deepcopy(mlp()).to("meta")
    assert all(p.is_meta for p in base.parameters())
    assert isinstance(base[0].weight, nn.Parameter)


def test_mlp_cnn_transformer_forward_shapes_match_pytorch():
    tt = pytest.importorskip("torch")

    def models(lib):
        n = lib.nn
        return [
            (n.Sequential(n.Linear(8, 16), n.GELU(), n.LayerNorm(16), n.Linear(16, 4),
                          n.LogSoftmax(-1)), (2, 8)),
            (n.Sequential(n.Conv2d(3, 8, 3, padding=1), n.BatchNorm2d(8), n.ReLU(),
                          n.MaxPool2d(2), n.Conv2d(8, 4, 3, stride=2), n.AvgPool2d(2),
                          n.AdaptiveAvgPool2d(1), n.Flatten(), n.Linear(4, 10)),
             (2, 3, 17, 17)),
            (n.TransformerEncoderLayer(16, 4, 32, batch_first=True), (2, 5, 16)),
            (n.TransformerEncoderLayer(16, 4, 32, norm_first=True), (5, 2, 16)),
        ]

    for (mine, shape), (ref, _) in zip(models(torch), models(tt)):
        mine, ref = mine.to("meta"), ref.to("meta")
        for train in (True, False):
            mine.train(train), ref.train(train)
            a = mine(torch.empty(*shape, device="meta"))
            b = ref(tt.empty(*shape, device="meta"))
            assert a.is_meta and tuple(a.shape) == tuple(b.shape) and a.stride() == b.stride()


def test_embedding_and_loss_on_meta():
    emb = nn.Embedding(10, 6, device="meta")
    ids = torch.empty(2, 3, dtype=torch.long, device="meta")
    h = emb(ids)
    assert h.is_meta and h.shape == (2, 3, 6)
    loss = nn.functional.cross_entropy(torch.empty(4, 10, device="meta"),
                                       torch.empty(4, dtype=torch.long, device="meta"))
    assert loss.is_meta and loss.shape == ()


def test_autograd_on_meta():
    with torch.device("meta"):
        model = mlp()
    out = model(torch.empty(2, 8, device="meta"))
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    for p in model.parameters():
        assert p.grad is not None and p.grad.is_meta and p.grad.shape == p.shape


def test_mixing_devices_raises():
    with pytest.raises(RuntimeError, match="same device"):
        torch.empty(3, 4, device="meta") + torch.ones(4)


def test_pickle_keeps_shape_dtype_requires_grad():
    import pickle
    t = pickle.loads(pickle.dumps(torch.empty(2, 3, dtype=torch.float64, device="meta",
                                              requires_grad=True)))
    assert t.is_meta and t.shape == (2, 3) and t.dtype is torch.float64 and t.requires_grad
    lin = pickle.loads(pickle.dumps(nn.Linear(2, 3, device="meta")))
    assert lin.weight.is_meta and isinstance(lin.weight, nn.Parameter)


def test_func_model_ensembling_with_meta_base():
    """torch.func's ensembling tutorial: a meta copy of the model as the stateless base."""
    from nbtorch.func import functional_call, stack_module_state, vmap
    models = [nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3)) for _ in range(3)]
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def fmodel(params, buffers, x):
        return functional_call(base, (params, buffers), (x,))

    x = torch.randn(4, 6)
    out = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, x)
    ref = torch.stack([m(x) for m in models])
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_advanced_indexing_on_meta_takes_no_memory_of_the_result():
    x = torch.empty(50_000, 50_000, device="meta")
    idx = torch.empty(50_000, dtype=torch.long, device="meta")
    y = x[idx]                          # 10 GB of int64 offsets if they were made
    assert y.is_meta and y.shape == (50_000, 50_000)
    assert x[[0, 1], 3:].shape == (2, 49_997)
    x[idx] = 1.0
    x[idx] += torch.empty(50_000, device="meta")
    with pytest.raises(IndexError, match="out of bounds"):
        torch.empty(6, 5, device="meta")[[7]]


def test_load_state_dict_into_meta_without_assign_warns_and_does_nothing():
    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(2, 2))
    with pytest.warns(UserWarning, match="copying from a non-meta parameter in the "
                                         "checkpoint to a meta parameter") as rec:
        model.load_state_dict(nn.Sequential(nn.Linear(2, 2)).state_dict())
    assert [str(w.message).split(":")[0] for w in rec] == ["for 0.weight", "for 0.bias"]
    assert model[0].weight.is_meta


def test_save_load_meta_tensors_as_pytorch_does():
    """PyTorch writes meta tensors as _rebuild_meta_tensor_no_storage (no data record)."""
    import io
    lin = nn.Linear(3, 2, device="meta")
    sd = {"w": torch.empty(4, 5, dtype=torch.float64, device="meta")[1:, ::2],
          "p": lin.weight}
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    r = torch.load(buf)
    assert r["w"].is_meta and r["w"].shape == (3, 3) and r["w"].stride() == (5, 2)
    assert r["w"].dtype is torch.float64
    assert isinstance(r["p"], nn.Parameter) and r["p"].is_meta and r["p"].requires_grad
    tt = pytest.importorskip("torch")
    buf.seek(0)
    r = tt.load(buf)
    assert r["w"].is_meta and r["w"].stride() == (5, 2)
    assert isinstance(r["p"], tt.nn.Parameter) and r["p"].shape == (2, 3)
    buf = io.BytesIO()
    tt.save({"w": tt.empty(2, 3, device="meta")[:, 1:]}, buf)
    buf.seek(0)
    w = torch.load(buf)["w"]
    assert w.is_meta and w.shape == (2, 2) and w.stride() == (3, 1)
