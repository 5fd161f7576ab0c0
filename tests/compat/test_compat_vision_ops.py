"""nbtorch.vision.ops (torchvision.ops' box functions, NMS, focal loss) against brute-force
NumPy references."""
import numpy as np

import nbtorch
from nbtorch.vision import ops


def _boxes(n, seed):
    rs = np.random.RandomState(seed)
    xy = rs.rand(n, 2) * 20
    return np.concatenate([xy, xy + rs.rand(n, 2) * 10 + 0.5], 1)


def _iou(a, b):
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def test_iou_giou_and_conversions():
    a, b = _boxes(5, 0), _boxes(4, 1)
    ta, tb = nbtorch.tensor(a), nbtorch.tensor(b)
    want = np.array([[_iou(x, y) for y in b] for x in a])
    np.testing.assert_allclose(ops.box_iou(ta, tb), want, rtol=1e-12)
    g = ops.generalized_box_iou(ta, tb).numpy()
    assert g.shape == (5, 4) and (g <= want + 1e-12).all() and (g >= -1).all()
    np.testing.assert_allclose(ops.generalized_box_iou(ta, ta).diagonal(), np.ones(5))
    for fmt in ("xywh", "cxcywh"):
        back = ops.box_convert(ops.box_convert(ta, "xyxy", fmt), fmt, "xyxy")
        np.testing.assert_allclose(back, a, rtol=1e-12)
    np.testing.assert_allclose(ops.box_convert(ta, "xyxy", "xywh")[:, 2:], a[:, 2:] - a[:, :2])
    c = ops.clip_boxes_to_image(ta, (10, 15)).numpy()
    assert (c[:, 0::2] <= 15).all() and (c[:, 1::2] <= 10).all() and (c >= 0).all()
    keep = ops.remove_small_boxes(ta, 5.0).tolist()
    assert keep == [i for i in range(5) if (a[i, 2:] - a[i, :2] >= 5).all()]


def _nms_ref(b, s, thr):
    order, keep = list(np.argsort(-s, kind="stable")), []
    while order:
        i = order.pop(0)
        keep.append(i)
        order = [j for j in order if _iou(b[i], b[j]) <= thr]
    return keep


def test_nms_batched_nms_and_focal_loss():
    b = _boxes(40, 2)
    s = np.random.RandomState(3).rand(40)
    tb, ts = nbtorch.tensor(b, dtype=nbtorch.float32), nbtorch.tensor(s, dtype=nbtorch.float32)
    for thr in (0.1, 0.3, 0.7):
        assert ops.nms(tb, ts, thr).tolist() == _nms_ref(b.astype(np.float32), s, thr)
    cls = np.arange(40) % 3
    got = ops.batched_nms(tb, ts, nbtorch.tensor(cls), 0.2).tolist()
    want = sorted((i for c in range(3) for i in np.flatnonzero(cls == c)[
        _nms_ref(b[cls == c].astype(np.float32), s[cls == c], 0.2)]), key=lambda i: -s[i])
    assert got == want
    assert ops.nms(tb[:0], ts[:0], 0.5).tolist() == []
    x = nbtorch.tensor([[-1.0, 2.0], [0.5, -0.3]], requires_grad=True)
    t = nbtorch.tensor([[0.0, 1.0], [1.0, 0.0]])
    p = 1 / (1 + np.exp(-x.detach().numpy()))
    pt = p * t.numpy() + (1 - p) * (1 - t.numpy())
    want = -np.log(pt) * (1 - pt) ** 2 * (0.25 * t.numpy() + 0.75 * (1 - t.numpy()))
    loss = ops.sigmoid_focal_loss(x, t, reduction="sum")
    np.testing.assert_allclose(loss.item(), want.sum(), rtol=1e-6)
    loss.backward()
    assert x.grad.shape == (2, 2)


def test_model_building_layers():
    nbtorch.manual_seed(0)
    x = nbtorch.ones(64, 3, 2, 2)
    y = ops.stochastic_depth(x, 0.5, "row")
    rows = y[:, 0, 0, 0]
    assert set(rows.tolist()) <= {0.0, 2.0} and (y == rows.view(-1, 1, 1, 1)).all()
    assert ops.StochasticDepth(0.5, "batch").eval()(x) is x
    bn = nbtorch.nn.BatchNorm2d(3).eval()
    bn.running_mean.fill_(0.5)
    bn.running_var.fill_(2.0)
    frozen = ops.FrozenBatchNorm2d(3)
    frozen.load_state_dict(bn.state_dict())         # num_batches_tracked is dropped
    np.testing.assert_allclose(frozen(x), bn(x).detach(), atol=1e-6)
    assert not list(frozen.parameters())
    block = ops.Conv2dNormActivation(3, 8, 3, stride=2)
    assert block(x).shape == (64, 8, 1, 1) and block[0].bias is None
    assert ops.SqueezeExcitation(3, 2)(x).shape == x.shape
    mlp = ops.MLP(4, [8, 2], norm_layer=nbtorch.nn.LayerNorm, dropout=0.1)
    assert [type(m).__name__ for m in mlp] == ["Linear", "LayerNorm", "ReLU", "Dropout",
                                                "Linear", "Dropout"]
