"""Box operations of ``torchvision.ops`` that detection code calls: areas, IoU, format
conversion, clipping, non-maximum suppression and the sigmoid focal loss (and, from
`_ops_layers`, the layers model code builds with: StochasticDepth, FrozenBatchNorm2d...).

Boxes are (N, 4) tensors in (x1, y1, x2, y2) unless a function says otherwise. Everything
is written with tensor ops (so it differentiates where torchvision's does), except the greedy
NMS loop, which runs over the sorted boxes on the host as torchvision's CPU kernel does.

Example:
    >>> boxes = nbtorch.tensor([[0., 0., 2., 2.], [1., 1., 3., 3.], [5., 5., 6., 6.]])
    >>> nms(boxes, nbtorch.tensor([0.9, 0.8, 0.7]), 0.1)
    tensor([0, 2])
"""
import numpy as np

import nbtorch
from nbtorch.vision._ops_layers import (MLP, Conv2dNormActivation, FrozenBatchNorm2d,
                                        SqueezeExcitation, StochasticDepth, stochastic_depth)

__all__ = ["box_area", "box_iou", "generalized_box_iou", "box_convert", "clip_boxes_to_image",
           "remove_small_boxes", "nms", "batched_nms", "sigmoid_focal_loss", "stochastic_depth",
           "StochasticDepth", "FrozenBatchNorm2d", "Conv2dNormActivation", "SqueezeExcitation",
           "MLP"]


def box_area(boxes):
    """Area of each (x1, y1, x2, y2) box: shape (N,)."""
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _inter_union(boxes1, boxes2):
    area1, area2 = box_area(boxes1), box_area(boxes2)
    lt = nbtorch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = nbtorch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter, area1[:, None] + area2 - inter


def box_iou(boxes1, boxes2):
    """Intersection over union of every pair: shape (N, M)."""
    inter, union = _inter_union(boxes1, boxes2)
    return inter / union


def generalized_box_iou(boxes1, boxes2):
    """GIoU of every pair: IoU minus the part of the enclosing box neither box covers."""
    inter, union = _inter_union(boxes1, boxes2)
    iou = inter / union
    lt = nbtorch.min(boxes1[:, None, :2], boxes2[:, :2])
    rb = nbtorch.max(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    area = wh[:, :, 0] * wh[:, :, 1]
    return iou - (area - union) / area


def box_convert(boxes, in_fmt, out_fmt):
    """Convert between 'xyxy', 'xywh' (corner and size) and 'cxcywh' (centre and size)."""
    allowed = ("xyxy", "xywh", "cxcywh")
    if in_fmt not in allowed or out_fmt not in allowed:
        raise ValueError("Unsupported Bounding Box Conversions for given in_fmt and out_fmt")
    if in_fmt == out_fmt:
        return boxes.clone()
    a, b, c, d = boxes.unbind(-1)
    if in_fmt == "xywh":
        a, b, c, d = a, b, a + c, b + d
    elif in_fmt == "cxcywh":
        a, b, c, d = a - 0.5 * c, b - 0.5 * d, a + 0.5 * c, b + 0.5 * d
    if out_fmt == "xywh":
        a, b, c, d = a, b, c - a, d - b
    elif out_fmt == "cxcywh":
        a, b, c, d = (a + c) / 2, (b + d) / 2, c - a, d - b
    return nbtorch.stack((a, b, c, d), dim=-1)


def clip_boxes_to_image(boxes, size):
    """Boxes clamped inside an image of ``size = (height, width)``."""
    height, width = size
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return nbtorch.stack((x, y), dim=-1).reshape(boxes.shape)


def remove_small_boxes(boxes, min_size):
    """Indices of the boxes at least ``min_size`` wide and high."""
    ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    return nbtorch.where((ws >= min_size) & (hs >= min_size))[0]


def nms(boxes, scores, iou_threshold):
    """Greedy non-maximum suppression: the indices of the kept boxes, by decreasing score;
    a box is dropped when its IoU with a kept, higher-scoring box exceeds the threshold."""
    if boxes.dim() != 2 or boxes.shape[-1] != 4:
        raise RuntimeError(f"boxes should have 2 dimensions and 4 columns, got "
                           f"{list(boxes.shape)}")
    if scores.dim() != 1 or scores.shape[0] != boxes.shape[0]:
        raise RuntimeError("boxes and scores should have the same number of elements in "
                           f"dimension 0, got {boxes.shape[0]} and {scores.shape[0]}")
    b = boxes.detach().cpu().numpy().astype(np.float64)
    order = np.argsort(-scores.detach().cpu().numpy(), kind="stable")
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    suppressed = np.zeros(len(b), dtype=bool)
    keep = []
    for pos, i in enumerate(order):
        if suppressed[i]:
            continue
        keep.append(i)
        rest = order[pos + 1:]
        w = np.clip(np.minimum(b[i, 2], b[rest, 2]) - np.maximum(b[i, 0], b[rest, 0]), 0, None)
        h = np.clip(np.minimum(b[i, 3], b[rest, 3]) - np.maximum(b[i, 1], b[rest, 1]), 0, None)
        inter = w * h
        iou = inter / (area[i] + area[rest] - inter)
        suppressed[rest[iou > iou_threshold]] = True
    return nbtorch.tensor(np.asarray(keep, dtype=np.int64), device=boxes.device)


def batched_nms(boxes, scores, idxs, iou_threshold):
    """NMS within each category of ``idxs`` (boxes of different categories never suppress
    each other): torchvision's coordinate-offset trick, then one `nms`."""
    if boxes.numel() == 0:
        return nbtorch.empty((0,), dtype=nbtorch.int64, device=boxes.device)
    offsets = idxs.to(boxes.dtype) * (boxes.max() + 1)
    return nms(boxes + offsets[:, None], scores, iou_threshold)


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2.0, reduction="none"):
    """Focal loss of RetinaNet on logits: cross-entropy scaled by ``(1 - p_t) ** gamma`` and
    weighted by ``alpha`` for positives (no weighting when alpha < 0)."""
    p = nbtorch.sigmoid(inputs)
    ce = nbtorch.nn.functional.binary_cross_entropy_with_logits(inputs, targets,
                                                                reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce * ((1 - p_t) ** gamma)
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"Invalid Value for arg 'reduction': '{reduction} \n Supported reduction "
                     "modes: 'none', 'mean', 'sum'")
