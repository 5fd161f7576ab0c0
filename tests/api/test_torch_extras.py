"""The smaller torch-level names (storages, Stream/Event, layout, settings, control flow,
legacy entry points) and the Tensor methods around storages, against PyTorch where it
is installed."""
import numpy as np
import pytest

import nbtorch

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")   # PyTorch: TypedStorage


def _torch():
    return pytest.importorskip("torch")


def test_legacy_storages():
    torch = _torch()
    for name in ("FloatStorage", "DoubleStorage", "LongStorage", "IntStorage", "ShortStorage",
                 "CharStorage", "ByteStorage", "BoolStorage", "HalfStorage",
                 "BFloat16Storage", "ComplexFloatStorage", "ComplexDoubleStorage"):
        t, n = getattr(torch, name)([1, 0, 1]), getattr(nbtorch, name)([1, 0, 1])
        assert str(t.dtype) == str(n.dtype) and t.size() == n.size() == len(n) == 3
        assert t.tolist() == n.tolist() and t.element_size() == n.element_size()
        assert isinstance(n, nbtorch.TypedStorage)
    assert repr(nbtorch.FloatStorage([1, 2])) == repr(torch.FloatStorage([1, 2]))
    assert nbtorch.Storage is nbtorch.FloatStorage and nbtorch.FloatStorage(4).size() == 4
    x = nbtorch.arange(6.0)
    s = x[2:].storage()
    assert s.size() == 6 and s.data_ptr() == x.data_ptr() and s[3] == 3.0
    s[0] = 10.0
    assert x[0].item() == 10.0
    assert x.storage_type() is nbtorch.FloatStorage
    u = nbtorch.UntypedStorage(8)
    assert u.nbytes() == 8 and len(u) == 8 and nbtorch.StorageBase is nbtorch.UntypedStorage


def test_set_and_views_of_storage():
    torch = _torch()
    for m in (torch, nbtorch):
        a = m.arange(6.0)
        b = m.empty(0)
        b.set_(a)
        assert b.is_set_to(a) and b.data_ptr() == a.data_ptr()
        c = m.empty(0).set_(a.storage(), 1, (2, 2), (2, 1))
        assert c.tolist() == [[1.0, 2.0], [3.0, 4.0]]
        assert not c.is_set_to(a)
        assert m.empty(3).set_().shape == (0,)
    x = nbtorch.ones(2, 3)
    assert x.resize(3, 2).shape == (3, 2) and x.shape == (2, 3)
    assert x.resize_as(nbtorch.ones(6)).shape == (6,)


def test_tensor_metadata_methods():
    torch = _torch()
    for m in (torch, nbtorch):
        x = m.ones(2, 3, 4).permute(2, 0, 1)
        assert x.dim_order() == (1, 2, 0)
        assert not x.is_meta and not x.is_nested and not x.is_inference()
        assert not m.is_distributed(x) and x.const_data_ptr() == x.data_ptr()
        assert x.layout == m.strided and str(m.strided) == "torch.strided"
        assert m.get_device(x) == -1 and x.name is None
        y = (m.ones(2, requires_grad=True) * 2).unbind(0)[1]
        assert y.output_nr == 1
    class Sub(nbtorch.Tensor):
        pass
    s = nbtorch.ones(2).as_subclass(Sub)
    assert type(s) is Sub and s.tolist() == [1.0, 1.0]
    assert nbtorch.ones(2).record_stream(nbtorch.Stream()) is None
    w = nbtorch.ones(2, requires_grad=True)
    assert nbtorch.ones(2).module_load(w).requires_grad is False


def test_streams_events_and_cpu_module():
    s = nbtorch.Stream("cpu")
    assert s.query() and s.device_type == "cpu"
    e1, e2 = nbtorch.Event(), nbtorch.Event()
    e1.record(s)
    e2.record(s)
    assert e1.query() and e1.elapsed_time(e2) >= 0
    import nbtorch.cpu as cpu
    assert cpu.is_available() and cpu.device_count() == 1
    with cpu.stream(cpu.current_stream()):
        cpu.synchronize()
    assert nbtorch.get_device_module("cpu") is cpu


def test_settings_and_control_flow():
    torch = _torch()
    for m in (torch, nbtorch):
        n = m.get_num_interop_threads()
        assert n >= 1
        m.set_warn_always(True)
        assert m.is_warn_always_enabled()
        m.set_warn_always(False)
    # (PyTorch's cond/while_loop go through torch.compile: seconds; the semantics are these)
    out = nbtorch.cond(nbtorch.tensor(False), lambda x: x + 1, lambda x: x - 1,
                       (nbtorch.ones(2),))
    assert out.tolist() == [0.0, 0.0]
    i, acc = nbtorch.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2),
                                (nbtorch.tensor(0), nbtorch.ones(1)))
    assert int(i) == 3 and acc.tolist() == [8.0]
    nbtorch.set_default_tensor_type(nbtorch.DoubleTensor)
    try:
        assert nbtorch.ones(1).dtype is nbtorch.float64
        nbtorch.set_default_tensor_type("torch.FloatTensor")
        assert nbtorch.ones(1).dtype is nbtorch.float32
    finally:
        nbtorch.set_default_dtype(nbtorch.float32)
    with pytest.raises(TypeError):
        nbtorch.set_default_tensor_type(nbtorch.LongTensor)
    assert nbtorch.set_flush_denormal(False) is False
    assert issubclass(nbtorch.OutOfMemoryError, RuntimeError)
    assert issubclass(nbtorch.AcceleratorError, RuntimeError)
    assert issubclass(nbtorch.FatalError, Exception)


def test_legacy_functions():
    torch = _torch()
    for m in (torch, nbtorch):
        with pytest.raises(RuntimeError, match="deprecated since version 1.9"):
            m.solve(m.eye(2), m.eye(2))
        with pytest.raises(RuntimeError, match="linalg.matrix_rank"):
            m.matrix_rank(m.eye(2))
    v = [2, -1, 3]
    assert nbtorch.vander(nbtorch.tensor(v)).tolist() == torch.vander(torch.tensor(v)).tolist()
    assert nbtorch.vander(nbtorch.tensor(v), 0).shape == (3, 0)
    x = nbtorch.arange(4.0)
    back = nbtorch.from_dlpack(nbtorch.to_dlpack(x))
    assert back.data_ptr() == x.data_ptr()


def test_slice_inverse():
    torch = _torch()
    for m in (torch, nbtorch):
        base = m.arange(12.0).reshape(3, 4)
        r = m.slice_inverse(base[:, 1:3], base, 1, 1, 3)
        assert r.data_ptr() == base.data_ptr() and r.tolist() == base.tolist()
        r = base[1:].slice_inverse(base, 0, 1)
        assert r.stride() == base.stride() and r.storage_offset() == 0
        with pytest.raises(RuntimeError):
            m.slice_inverse(m.zeros(4), m.arange(10.0), 0, 2, 6)


def test_from_file(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(5, dtype=np.float32).tofile(path)
    t = nbtorch.from_file(str(path), size=5)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    shared = nbtorch.from_file(str(path), True, 5)
    shared[0] = 7.0
    shared._array.flush() if hasattr(shared._array, "flush") else None
    assert np.fromfile(path, dtype=np.float32)[0] == 7.0
    with pytest.raises(RuntimeError, match="unexpected EOF"):
        nbtorch.from_file(str(path), size=9)


def test_small_modules():
    import nbtorch.functional as F
    import nbtorch.torch_version as tv
    import nbtorch.types as types
    import nbtorch.version as version
    assert F.einsum is nbtorch.einsum and "split" in F.__all__
    v = tv.TorchVersion("2.13.0+cpu")
    assert v > (2, 1) and v >= "2.13" and v < "2.14.0" and v == (2, 13, 0)
    assert version.__version__ == nbtorch.__version__ and version.cuda is None
    assert types.Number is not None and types.Storage is nbtorch.UntypedStorage


def test_anomaly_mode():
    torch = _torch()
    for m in (torch, nbtorch):
        assert not m.is_anomaly_enabled()
        x = m.tensor([0.0, 1.0], requires_grad=True)
        with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
            ctx = m.autograd.detect_anomaly()
        with ctx:
            assert m.is_anomaly_enabled() and m.is_anomaly_check_nan_enabled()
            y = (x / x).sum()
            with pytest.raises(RuntimeError, match="Function 'DivBackward0' returned nan "
                                                   "values in its 1th output."):
                y.backward()
        assert not m.is_anomaly_enabled()
        with m.autograd.set_detect_anomaly(True, check_nan=False):
            (x / x).sum().backward()                  # NaN not checked
            assert m.is_anomaly_enabled() and not m.is_anomaly_check_nan_enabled()
        m.set_anomaly_enabled(False)


def test_futures():
    torch = _torch()
    for m in (torch, nbtorch):
        F = m.futures
        f = F.Future()
        g = f.then(lambda fut: fut.wait() + 1)
        seen = []
        f.add_done_callback(lambda fut: seen.append(fut.value()))
        assert not f.done()
        f.set_result(1)
        assert g.wait() == 2 and f.value() == 1 and seen == [1]
        assert [x.wait() for x in F.collect_all([f, g]).wait()] == [1, 2]
        assert F.wait_all([f, g]) == [1, 2]
        with pytest.raises(RuntimeError, match="only be marked completed once"):
            f.set_result(2)
        h = F.Future()
        h.set_exception(ValueError("x"))
        with pytest.raises(ValueError):
            h.wait()
        with pytest.raises(RuntimeError, match="when running the callback: ValueError: x"):
            h.then(lambda fut: fut.wait()).wait()


def test_grad_dtype():
    torch = _torch()
    for m in (torch, nbtorch):
        x = m.ones(2, requires_grad=True)
        assert x.grad_dtype == m.float32
        x.grad_dtype = m.float64
        (x * 2).sum().backward()
        (x * 2).sum().backward()
        assert x.grad.dtype == m.float64 and x.grad.tolist() == [4.0, 4.0]
        with pytest.raises(RuntimeError, match="only be set on leaf tensors"):
            (x * 2).grad_dtype = m.float64
        with pytest.raises(RuntimeError, match="already a gradient with dtype 'double'"):
            x.grad_dtype = m.int64
        y = m.ones(2, dtype=m.bfloat16, requires_grad=True)
        y.grad_dtype = m.float32
        (y * 3).sum().backward()
        assert y.grad.dtype == m.float32
        y.grad_dtype = None
        assert y.grad_dtype is None
