"""Learned and random augmentation policies: AutoAugment (Cubuk et al. 2018), RandAugment
(Cubuk et al. 2019) and TrivialAugmentWide (Müller & Hutter 2021), with torchvision's
magnitude tables and draws. Tensors should be uint8 with 1 or 3 channels (posterize and
equalize need bytes); PIL images 'L' or 'RGB'."""
import enum
import math

import numpy as np

import nbtorch
from nbtorch.vision.transforms import _color, _geometry
from nbtorch.vision.transforms._basic import Transform
from nbtorch.vision.transforms._kinds import (InterpolationMode, get_image_num_channels,
                                              get_image_size, interpolation_mode, is_tensor)

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide"]


def _apply_op(img, op_name, magnitude, interpolation, fill):
    """One named augmentation at ``magnitude`` (shears are tangents, turned into degrees)."""
    affine = _geometry.affine
    if op_name == "ShearX":
        return affine(img, 0.0, [0, 0], 1.0, [math.degrees(math.atan(magnitude)), 0.0],
                      interpolation=interpolation, fill=fill, center=[0, 0])
    if op_name == "ShearY":
        return affine(img, 0.0, [0, 0], 1.0, [0.0, math.degrees(math.atan(magnitude))],
                      interpolation=interpolation, fill=fill, center=[0, 0])
    if op_name == "TranslateX":
        return affine(img, 0.0, [int(magnitude), 0], 1.0, [0.0, 0.0],
                      interpolation=interpolation, fill=fill)
    if op_name == "TranslateY":
        return affine(img, 0.0, [0, int(magnitude)], 1.0, [0.0, 0.0],
                      interpolation=interpolation, fill=fill)
    if op_name == "Rotate":
        return _geometry.rotate(img, magnitude, interpolation=interpolation, fill=fill)
    enhance = {"Brightness": _color.adjust_brightness, "Color": _color.adjust_saturation,
               "Contrast": _color.adjust_contrast, "Sharpness": _color.adjust_sharpness}
    if op_name in enhance:
        return enhance[op_name](img, 1.0 + magnitude)
    if op_name == "Posterize":
        return _color.posterize(img, int(magnitude))
    if op_name == "Solarize":
        return _color.solarize(img, magnitude)
    plain = {"AutoContrast": _color.autocontrast, "Equalize": _color.equalize,
             "Invert": _color.invert, "Identity": lambda x: x}
    if op_name in plain:
        return plain[op_name](img)
    raise ValueError(f"The provided operator {op_name} is not recognized.")


def _space(num_bins, shear, translate_x, translate_y, rotate, enhance, posterize_span,
           identity):
    """op name -> (magnitudes, signed): the magnitude bins of each op."""
    space = {"Identity": (np.array(0.0), False)} if identity else {}
    space.update({
        "ShearX": (np.linspace(0.0, shear, num_bins), True),
        "ShearY": (np.linspace(0.0, shear, num_bins), True),
        "TranslateX": (np.linspace(0.0, translate_x, num_bins), True),
        "TranslateY": (np.linspace(0.0, translate_y, num_bins), True),
        "Rotate": (np.linspace(0.0, rotate, num_bins), True),
        "Brightness": (np.linspace(0.0, enhance, num_bins), True),
        "Color": (np.linspace(0.0, enhance, num_bins), True),
        "Contrast": (np.linspace(0.0, enhance, num_bins), True),
        "Sharpness": (np.linspace(0.0, enhance, num_bins), True),
        # round half to even, as torch.round
        "Posterize": (8 - np.round(np.arange(num_bins) / ((num_bins - 1) / posterize_span))
                      .astype(np.int64), False),
        "Solarize": (np.linspace(255.0, 0.0, num_bins), False),
        "AutoContrast": (np.array(0.0), False),
        "Equalize": (np.array(0.0), False),
    })
    if not identity:                      # AutoAugment's space: no Identity, but Invert
        space["Invert"] = (np.array(0.0), False)
    return space


def _fill_for(img, fill):
    if not is_tensor(img):
        return fill
    if isinstance(fill, (int, float)):
        return [float(fill)] * get_image_num_channels(img)
    return None if fill is None else [float(f) for f in fill]


def _draw(n):
    return int(nbtorch.randint(n, (1,)).item())


class AutoAugmentPolicy(enum.Enum):
    """The policies learned on ImageNet, CIFAR-10 and SVHN."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# Each sub-policy: two (op, probability, magnitude bin) steps (the AutoAugment paper's tables)
_POLICIES = {
    AutoAugmentPolicy.IMAGENET: [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
        (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)),
        (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)),
        (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)),
        (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)),
        (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)),
        (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)),
        (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)),
        (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ],
    AutoAugmentPolicy.CIFAR10: [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)),
        (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)),
        (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)),
        (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)),
        (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)),
        (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)),
        (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)),
        (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)),
        (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)),
        (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)),
        (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)),
        (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)),
        (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ],
    AutoAugmentPolicy.SVHN: [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)),
        (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)),
        (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)),
        (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)),
        (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)),
        (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)),
        (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)),
        (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)),
        (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ],
}


class AutoAugment(Transform):
    """Pick one learned sub-policy at random and apply each of its two ops with its
    probability (signed magnitudes get a random sign)."""

    _repr_keys = ("policy", "fill")

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        if policy not in _POLICIES:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self.policy = policy
        self.interpolation = interpolation_mode(interpolation)
        self.fill = fill
        self.policies = _POLICIES[policy]

    @staticmethod
    def get_params(transform_num):
        """``(policy_id, probs, signs)``: the sub-policy and each step's two draws."""
        policy_id = _draw(transform_num)
        return policy_id, nbtorch.rand((2,)), nbtorch.randint(2, (2,))

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        transform_id, probs, signs = self.get_params(len(self.policies))
        width, height = get_image_size(img)
        for i, (op_name, p, magnitude_id) in enumerate(self.policies[transform_id]):
            if float(probs[i]) <= p:
                magnitudes, signed = _space(10, 0.3, 150.0 / 331.0 * width,
                                            150.0 / 331.0 * height, 30.0, 0.9, 4, False)[op_name]
                magnitude = 0.0 if magnitude_id is None else float(magnitudes[magnitude_id])
                if signed and int(signs[i]) == 0:
                    magnitude *= -1.0
                img = _apply_op(img, op_name, magnitude, self.interpolation, fill)
        return img


class RandAugment(Transform):
    """Apply ``num_ops`` ops drawn uniformly, all at bin ``magnitude`` of
    ``num_magnitude_bins``, each signed op with a random sign."""

    _repr_keys = ("num_ops", "magnitude", "num_magnitude_bins", "interpolation", "fill")

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.num_magnitude_bins = num_magnitude_bins
        self.interpolation = interpolation_mode(interpolation)
        self.fill = fill

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        for _ in range(self.num_ops):
            width, height = get_image_size(img)
            space = _space(self.num_magnitude_bins, 0.3, 150.0 / 331.0 * width,
                           150.0 / 331.0 * height, 30.0, 0.9, 4, True)
            op_name = list(space)[_draw(len(space))]
            magnitudes, signed = space[op_name]
            magnitude = float(magnitudes[self.magnitude]) if magnitudes.ndim > 0 else 0.0
            if signed and _draw(2):
                magnitude *= -1.0
            img = _apply_op(img, op_name, magnitude, self.interpolation, fill)
        return img


class TrivialAugmentWide(Transform):
    """Apply one op drawn uniformly at a magnitude drawn uniformly from its wide range."""

    _repr_keys = ("num_magnitude_bins", "interpolation", "fill")

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None):
        self.num_magnitude_bins = num_magnitude_bins
        self.interpolation = interpolation_mode(interpolation)
        self.fill = fill

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        space = _space(self.num_magnitude_bins, 0.99, 32.0, 32.0, 135.0, 0.99, 6, True)
        op_name = list(space)[_draw(len(space))]
        magnitudes, signed = space[op_name]
        magnitude = float(magnitudes[_draw(len(magnitudes))]) if magnitudes.ndim > 0 else 0.0
        if signed and _draw(2):
            magnitude *= -1.0
        return _apply_op(img, op_name, magnitude, self.interpolation, fill)
