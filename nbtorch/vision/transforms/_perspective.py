"""Perspective warps: ``perspective`` (four corners moved to four new points) and
``RandomPerspective``, with torchvision's coefficient solve and sampling grid."""
import numbers

import numpy as np

import nbtorch
from nbtorch.vision.transforms._basic import Transform
from nbtorch.vision.transforms._geometric import _tensor_fill
from nbtorch.vision.transforms._geometry import _PIL_RESAMPLE, _pil_fill, _warp_tensor
from nbtorch.vision.transforms._kinds import (InterpolationMode, apply, get_dimensions,
                                              interpolation_mode, is_pil)

__all__ = ["perspective", "RandomPerspective"]


def _get_perspective_coeffs(startpoints, endpoints):
    """The 8 coefficients mapping output points (``endpoints``) back to input points
    (``startpoints``): ``x = (c0 X + c1 Y + c2) / (c6 X + c7 Y + 1)``, ``y`` alike with
    c3..c5; least squares over the four pairs, rounded to float32 as torchvision does."""
    a_matrix = np.zeros((2 * len(startpoints), 8))
    for i, ((x, y), (u, v)) in enumerate(zip(endpoints, startpoints)):
        a_matrix[2 * i] = [x, y, 1, 0, 0, 0, -u * x, -u * y]
        a_matrix[2 * i + 1] = [0, 0, 0, x, y, 1, -v * x, -v * y]
    b_matrix = np.asarray(startpoints, dtype=np.float64).reshape(8)
    solution = np.linalg.lstsq(a_matrix, b_matrix, rcond=None)[0]
    return solution.astype(np.float32).astype(np.float64).tolist()


def _perspective_grid(coeffs, out_width, out_height):
    """grid_sample coordinates: the projective map applied to output pixel centres,
    normalised by the output's half-size."""
    xs = np.linspace(0.5, out_width - 0.5, out_width)
    ys = np.linspace(0.5, out_height - 0.5, out_height)
    x, y = np.meshgrid(xs, ys)
    denominator = coeffs[6] * x + coeffs[7] * y + 1.0
    grid_x = (coeffs[0] * x + coeffs[1] * y + coeffs[2]) / (0.5 * out_width) / denominator - 1.0
    grid_y = (coeffs[3] * x + coeffs[4] * y + coeffs[5]) / (0.5 * out_height) / denominator - 1.0
    return np.stack([grid_x, grid_y], axis=-1)[None]


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR,
                fill=None):
    """Warp so that the four ``startpoints`` ``[[x, y], ...]`` (top-left, top-right,
    bottom-right, bottom-left) land on ``endpoints``; outside pixels take ``fill``."""
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(f"Please provide exactly four corners, got {len(startpoints)} and "
                         f"{len(endpoints)}")
    coeffs = _get_perspective_coeffs(startpoints, endpoints)
    mode = interpolation_mode(interpolation)
    if is_pil(img):
        return img.transform(img.size, 2, coeffs, _PIL_RESAMPLE[mode],      # Image.PERSPECTIVE
                             fillcolor=_pil_fill(fill, img))
    _, height, width = get_dimensions(img)
    grid = _perspective_grid(coeffs, width, height)
    return apply(img, lambda t: _warp_tensor(t, None, mode, fill, grid=grid))


class RandomPerspective(Transform):
    """With probability ``p``, move each corner inwards by up to ``distortion_scale`` of
    the half-size and warp the image accordingly."""

    _repr_keys = ("p",)

    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR,
                 fill=0):
        self.p = p
        self.interpolation = interpolation_mode(interpolation)
        self.distortion_scale = distortion_scale
        if fill is None:
            fill = 0
        elif not isinstance(fill, (list, tuple, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill

    @staticmethod
    def get_params(width, height, distortion_scale):
        """``(startpoints, endpoints)``: the image corners and their random new places."""
        half_height, half_width = height // 2, width // 2
        dx, dy = int(distortion_scale * half_width), int(distortion_scale * half_height)

        def draw(low, high):
            return int(nbtorch.randint(low, high, size=(1,)).item())
        topleft = [draw(0, dx + 1), draw(0, dy + 1)]
        topright = [draw(width - dx - 1, width), draw(0, dy + 1)]
        botright = [draw(width - dx - 1, width), draw(height - dy - 1, height)]
        botleft = [draw(0, dx + 1), draw(height - dy - 1, height)]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return startpoints, [topleft, topright, botright, botleft]

    def forward(self, img):
        fill = _tensor_fill(self.fill, img)
        _, height, width = get_dimensions(img)
        if float(nbtorch.rand(1)) < self.p:
            startpoints, endpoints = self.get_params(width, height, self.distortion_scale)
            return perspective(img, startpoints, endpoints, self.interpolation, fill)
        return img
