"""``v2.MixUp`` and ``v2.CutMix``: batch augmentations that blend each sample with its
neighbour in the batch (``images.roll(1, 0)``) and mix their one-hot labels alike.

Called on a batch after the DataLoader: ``images, labels = cutmix(images, labels)`` with
``images`` ``(N, C, H, W)`` and ``labels`` class indices ``(N,)`` (or ``(N, classes)``
probabilities). ``lam`` is drawn from ``Beta(alpha, alpha)`` with a NumPy generator seeded
from nbtorch's global one, so ``nbtorch.manual_seed`` replays it.
"""
import math

import nbtorch
import nbtorch.nn.functional as NF
from nbtorch.utils.data import _random
from nbtorch.vision.transforms._basic import Transform
from nbtorch.vision.transforms._kinds import is_pil

__all__ = ["MixUp", "CutMix"]


def _default_labels(inputs):
    """torchvision's heuristic: the second element of ``(images, labels, ...)``, or a dict
    entry named 'labels' / 'label' (any case)."""
    if isinstance(inputs, (tuple, list)) and len(inputs) >= 2:
        return inputs[1]
    if isinstance(inputs, dict):
        for key, value in inputs.items():
            if isinstance(key, str) and key.lower() in ("labels", "label"):
                return value
    raise ValueError("Could not infer where the labels are in the sample. Try passing a "
                     "callable as the labels_getter parameter?")


class _MixBase(Transform):
    def __init__(self, *, alpha=1.0, num_classes=None, labels_getter="default"):
        self.alpha = float(alpha)
        self.num_classes = num_classes
        if labels_getter == "default":
            labels_getter = _default_labels
        elif not callable(labels_getter):
            raise ValueError("labels_getter should either be 'default', a callable, or None, "
                             f"but got {labels_getter}.")
        self._labels_getter = labels_getter

    def _lam(self):
        return float(_random.numpy_rng().beta(self.alpha, self.alpha))

    def _check(self, inputs):
        labels = self._labels_getter(inputs)
        if not isinstance(labels, nbtorch.Tensor):
            raise ValueError(f"The labels must be a tensor, but got {type(labels)} instead.")
        if labels.dim() not in (1, 2):
            raise ValueError("labels should be index based with shape (batch_size,) or "
                             "probability based with shape (batch_size, num_classes), but got "
                             f"a tensor of shape {labels.shape} instead.")
        if labels.dim() == 2 and self.num_classes is not None and \
                labels.shape[-1] != self.num_classes:
            raise ValueError("When passing 2D labels, the number of elements in last dimension "
                             f"must match num_classes: {labels.shape[-1]} != "
                             f"{self.num_classes}. You can Leave num_classes to None.")
        if labels.dim() == 1 and self.num_classes is None:
            raise ValueError("num_classes must be passed if the labels are index-based (1D)")
        return labels

    def _check_images(self, images, batch_size):
        if images.dim() != 4:
            raise ValueError(f"Expected a batched input with 4 dims, but got {images.dim()} "
                             "dimensions instead.")
        if images.shape[0] != batch_size:
            raise ValueError("The batch size of the image or video does not match the batch "
                             f"size of the labels: {images.shape[0]} != {batch_size}.")

    def _mix_labels(self, labels, lam):
        if labels.dim() == 1:
            labels = NF.one_hot(labels, num_classes=self.num_classes)
        if not labels.is_floating_point():
            labels = labels.float()
        return labels.roll(1, 0).mul_(1.0 - lam).add_(labels.mul(lam))

    def __call__(self, *inputs):
        sample = inputs if len(inputs) > 1 else inputs[0]
        flat = sample if isinstance(sample, (tuple, list)) else list(sample.values()) \
            if isinstance(sample, dict) else [sample]
        if any(is_pil(item) for item in flat):
            raise ValueError(f"{type(self).__name__}() does not support PIL images, bounding "
                             "boxes and masks.")
        labels = self._check(sample)
        images = next(item for item in flat
                      if isinstance(item, nbtorch.Tensor) and item is not labels)
        self._check_images(images, labels.shape[0])
        mixed_images, mixed_labels = self._mix(images, labels)

        def swap(item):
            return mixed_images if item is images else mixed_labels if item is labels else item
        if isinstance(sample, dict):
            return {key: swap(value) for key, value in sample.items()}
        return type(sample)(swap(item) for item in sample)


class MixUp(_MixBase):
    """``lam * x + (1 - lam) * x.roll(1, 0)`` for the images and the one-hot labels
    (Zhang et al., mixup). Shuffle the batch (the DataLoader does) before using it."""

    def _mix(self, images, labels):
        lam = self._lam()
        mixed = images.roll(1, 0).mul_(1.0 - lam).add_(images.mul(lam))
        return mixed, self._mix_labels(labels, lam)


class CutMix(_MixBase):
    """Paste a random box of each image's neighbour into it (Yun et al., CutMix); labels
    mix by the pasted area's share."""

    def _mix(self, images, labels):
        lam = self._lam()
        height, width = images.shape[-2:]
        r_x = int(nbtorch.randint(width, size=(1,)).item())
        r_y = int(nbtorch.randint(height, size=(1,)).item())
        r = 0.5 * math.sqrt(1.0 - lam)
        r_w_half, r_h_half = int(r * width), int(r * height)
        x1, y1 = max(r_x - r_w_half, 0), max(r_y - r_h_half, 0)
        x2, y2 = min(r_x + r_w_half, width), min(r_y + r_h_half, height)
        lam_adjusted = float(1.0 - (x2 - x1) * (y2 - y1) / (width * height))
        output = images.clone()
        output[..., y1:y2, x1:x2] = images.roll(1, 0)[..., y1:y2, x1:x2]
        return output, self._mix_labels(labels, lam_adjusted)
