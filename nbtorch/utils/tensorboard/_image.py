"""Image layouts for TensorBoard: any of N/C/H/W orders to one HWC picture.

A batch (4-D) is tiled into a grid of at most 8 columns, one channel is
repeated to RGB, and a 2-D array is treated as grey - PyTorch's rules, so
``dataformats`` strings mean the same thing here.
"""
import math

import numpy as np


def make_grid(images, ncols=8):
    """Tile `images` (N, 1 or 3, H, W) into one (3, H*rows, W*cols) canvas, row by row."""
    if not isinstance(images, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    count, _, height, width = images.shape
    ncols = min(count, ncols)
    nrows = math.ceil(count / ncols)
    canvas = np.zeros((3, height * nrows, width * ncols), dtype=images.dtype)
    for i in range(count):
        row, col = divmod(i, ncols)
        canvas[:, row * height:(row + 1) * height, col * width:(col + 1) * width] = images[i]
    return canvas


def convert_to_HWC(tensor, input_format):  # noqa: N802 (PyTorch's name)
    """`tensor` (a NumPy array laid out as `input_format`, e.g. "CHW") as HWC with 3 or 4
    channels."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. "
                             f"input_format: {input_format}")
    if tensor.ndim != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. "
                             f"tensor shape: {tensor.shape}, input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        nchw = tensor.transpose([input_format.find(c) for c in "NCHW"])
        return make_grid(nchw).transpose(1, 2, 0)
    if len(input_format) == 3:
        hwc = tensor.transpose([input_format.find(c) for c in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.concatenate([hwc, hwc, hwc], 2)
        return hwc
    hw = tensor.transpose([input_format.find(c) for c in "HW"])
    return np.stack([hw, hw, hw], 2)


def figure_to_image(figures, close=True):
    """Render a matplotlib figure (CHW uint8) or a list of them (NCHW) with the Agg canvas."""
    try:
        import matplotlib.pyplot as plt
        from matplotlib.backends.backend_agg import FigureCanvasAgg
    except ImportError as err:
        raise ImportError("add_figure requires matplotlib (pip install matplotlib)") from err

    def render(figure):
        canvas = FigureCanvasAgg(figure)
        canvas.draw()
        width, height = figure.canvas.get_width_height()
        rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(height, width, 4)
        if close:
            plt.close(figure)
        return np.moveaxis(rgba[:, :, :3], 2, 0)

    if isinstance(figures, list):
        return np.stack([render(f) for f in figures])
    return render(figures)


def prepare_video(video):
    """(N, T, C, H, W) clips to (T, H', W', C) frames: the batch padded to a power of two
    and tiled into a grid per frame; uint8 becomes float in [0, 1]."""
    count, frames, channels, height, width = video.shape
    if video.dtype == np.uint8:
        video = np.float32(video) / 255.0
    if count & (count - 1):                       # not a power of two: pad with black clips
        extra = 2 ** count.bit_length() - count
        video = np.concatenate([video, np.zeros((extra, frames, channels, height, width))], 0)
    nrows = 2 ** ((count.bit_length() - 1) // 2)
    ncols = video.shape[0] // nrows
    video = video.reshape(nrows, ncols, frames, channels, height, width)
    video = video.transpose(2, 0, 4, 1, 5, 3)
    return video.reshape(frames, nrows * height, ncols * width, channels)
