"""Shared checks of the ONNX tests: export, onnx's full checker, onnxruntime vs nbtorch."""
import numpy as np
import pytest

import nbtorch as torch



def _flat(x, acc):
    if isinstance(x, (tuple, list)):
        for y in x:
            _flat(y, acc)
    elif x is not None:
        acc.append(x)
    return acc


def run_ort(proto_or_bytes, feeds):
    import onnxruntime as ort
    data = proto_or_bytes if isinstance(proto_or_bytes, bytes) else \
        proto_or_bytes.SerializeToString()
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def check_export(model, args, others=(), dynamic_batch=True, rtol=1e-4, atol=1e-5,
                 **export_kwargs):
    """Export `model` on `args`, check it fully, and compare onnxruntime with nbtorch on
    `args` and each input tuple in `others` (other batch sizes when dynamic)."""
    if hasattr(model, "eval"):
        model.eval()
    names = [f"in{i}" for i in range(len(args))]
    dyn = {n: {0: "batch"} for n in names} if dynamic_batch else None
    proto = torch.onnx.export(model, tuple(args), None, input_names=names,
                              dynamic_axes=dyn, **export_kwargs)
    for a in [tuple(args)] + [tuple(o) for o in others]:
        with torch.no_grad():
            want = _flat(model(*a), [])
        got = run_ort(proto, {n: t.numpy() for n, t in zip(names, a)})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            w = w.detach().numpy()
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    return proto


@pytest.fixture
def check():
    return check_export


@pytest.fixture
def ort_run():
    return run_ort
