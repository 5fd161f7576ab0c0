"""Summary protos, one builder per kind: scalar, tensor, histogram, image, audio,
video, text (PyTorch's ``torch.utils.tensorboard.summary``).

Each builder turns its input into NumPy (`make_np`) and returns a tensorboard
``Summary`` that `FileWriter.add_summary` wraps in an event. The plugin
summaries (hparams, custom scalars, PR curves, meshes) live in `_plugins` and
are re-exported here, so ``from torch.utils.tensorboard.summary import hparams``
keeps working.
"""
import io
import wave

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ._convert import make_np, tensor_to_np
from ._image import convert_to_HWC, prepare_video
from ._plugins import compute_curve, custom_scalars, hparams, mesh, pr_curve, pr_curve_raw
from ._png import encode_png, resize

__all__ = ["hparams", "scalar", "tensor_proto", "histogram_raw", "histogram", "make_histogram",
           "image", "image_boxes", "draw_boxes", "make_image", "video", "make_video", "audio",
           "custom_scalars", "text", "pr_curve_raw", "pr_curve", "compute_curve", "mesh"]


def scalar(name, tensor, collections=None, new_style=False, double_precision=False):
    """A one-number summary: ``simple_value`` (legacy), or with `new_style` a float32
    (float64 with `double_precision`) tensor for the scalars plugin."""
    array = make_np(tensor).squeeze()
    if array.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). "
                             f"Was given size: {array.size} and {array.ndim} dimensions.")
    value = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=value)])
    if double_precision:
        proto = TensorProto(double_val=[value], dtype="DT_DOUBLE")
    else:
        proto = TensorProto(float_val=[value], dtype="DT_FLOAT")
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=metadata)])


def _half_bits(array):
    """float16 values as their 16-bit patterns (TensorProto's ``half_val``)."""
    return array.astype(np.float16).view(np.uint16).ravel().tolist()


def _bfloat16_bits(array):
    """bfloat16 values (held exactly in float32) as their 16-bit patterns."""
    return (np.ascontiguousarray(array, np.float32).view(np.uint32) >> 16).ravel().tolist()


def _complex_parts(array):
    """Complex values as interleaved real and imaginary parts."""
    return np.stack([array.real, array.imag], -1).ravel().tolist()


def _plain(array):
    return array.ravel().tolist()


# dtype name -> (TensorProto dtype, value field, converter); names as str(nbtorch.dtype)
_TENSOR_TYPES = {
    "float16": ("DT_HALF", "half_val", _half_bits),
    "bfloat16": ("DT_BFLOAT16", "half_val", _bfloat16_bits),
    "float32": ("DT_FLOAT", "float_val", _plain),
    "float64": ("DT_DOUBLE", "double_val", _plain),
    "int8": ("DT_INT8", "int_val", _plain),
    "uint8": ("DT_UINT8", "int_val", _plain),
    "int16": ("DT_INT16", "int_val", _plain),
    "int32": ("DT_INT32", "int_val", _plain),
    "int64": ("DT_INT64", "int64_val", _plain),
    "bool": ("DT_BOOL", "bool_val", _plain),
    "complex64": ("DT_COMPLEX64", "scomplex_val", _complex_parts),
    "complex128": ("DT_COMPLEX128", "dcomplex_val", _complex_parts),
}


def tensor_proto(tag, tensor):
    """A summary holding a whole tensor or NumPy array (the ``tensor`` plugin); float16
    and bfloat16 are stored as their bit patterns (``half_val``), which tensorboard's
    ``make_ndarray`` decodes (PyTorch stores float32 bits there)."""
    array = tensor if isinstance(tensor, np.ndarray) else tensor_to_np(tensor)
    name = str(tensor.dtype).replace("torch.", "")
    if array.nbytes >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    if name not in _TENSOR_TYPES:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    dtype, field, convert = _TENSOR_TYPES[name]
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=s) for s in array.shape])
    proto = TensorProto(dtype=dtype, tensor_shape=shape, **{field: convert(array)})
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="tensor"))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata, tensor=proto)])


def histogram_raw(name, min, max, num, sum, sum_squares,  # noqa: A002 (PyTorch's names)
                  bucket_limits, bucket_counts):
    """A histogram from precomputed statistics; `bucket_limits` are right edges."""
    histo = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                           bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=histo)])


def histogram(name, values, bins, max_bins=None):
    """A histogram of `values` over `bins` (edges, a count or a NumPy rule name)."""
    histo = make_histogram(make_np(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=histo)])


def make_histogram(values, bins, max_bins=None):
    """A ``HistogramProto``: ``np.histogram`` counts, merged down to `max_bins`, trimmed to
    the non-empty range plus one empty bucket before it (bucket limits are right edges)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        if len(counts) % group:
            counts = np.pad(counts, (0, group - len(counts) % group))
        counts = counts.reshape(-1, group).sum(axis=-1)
        limits = np.append(limits[:-1:group], limits[-1])
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    first, last = int(nonzero[0]), int(nonzero[-1])
    if first > 0:
        counts = counts[first - 1:last + 1]
    else:
        counts = np.concatenate([[0], counts[:last + 1]])
    limits = limits[first:last + 2]
    return HistogramProto(min=values.min(), max=values.max(), num=len(values),
                          sum=values.sum(), sum_squares=values.dot(values),
                          bucket_limit=limits.tolist(), bucket=counts.tolist())


def _to_uint8(hwc):
    """uint8 kept as is; anything else is taken as [0, 1] and scaled by 255 (truncating)."""
    scale = 1 if hwc.dtype == np.uint8 else 255
    return (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    """An image summary; `tensor` is laid out as `dataformats` (see `convert_to_HWC`)."""
    hwc = _to_uint8(convert_to_HWC(make_np(tensor), dataformats))
    return Summary(value=[Summary.Value(tag=tag, image=make_image(hwc, rescale=rescale))])


def image_boxes(tag, tensor_image, tensor_boxes, rescale=1, dataformats="CHW", labels=None):
    """An image summary with boxes (x1, y1, x2, y2 rows) drawn in red (needs Pillow)."""
    hwc = _to_uint8(convert_to_HWC(make_np(tensor_image), dataformats))
    proto = make_image(hwc, rescale=rescale, rois=make_np(tensor_boxes), labels=labels)
    return Summary(value=[Summary.Value(tag=tag, image=proto)])


def draw_boxes(disp_image, boxes, labels=None):
    """Draw each box of `boxes` on the Pillow image `disp_image`, with its label if given."""
    from PIL import ImageDraw, ImageFont
    draw = ImageDraw.Draw(disp_image)
    font = ImageFont.load_default()
    for i, (left, top, right, bottom) in enumerate(np.asarray(boxes)[:, :4].tolist()):
        draw.line([(left, top), (left, bottom), (right, bottom), (right, top), (left, top)],
                  width=2, fill="Red")
        if labels is not None and labels[i]:
            x0, y0, x1, y1 = font.getbbox(labels[i])
            margin = np.ceil(0.05 * (y1 - y0))
            draw.rectangle([(left, bottom - (y1 - y0) - 2 * margin), (left + x1 - x0, bottom)],
                           fill="Red")
            draw.text((left + margin, bottom - (y1 - y0) - margin), labels[i], fill="black",
                      font=font)
    return disp_image


def make_image(tensor, rescale=1, rois=None, labels=None):
    """A ``Summary.Image`` (PNG) of an HWC uint8 array; boxes and rescaling use Pillow."""
    height, width, channels = tensor.shape
    if rois is not None:
        try:
            from PIL import Image
        except ImportError as err:
            raise ImportError("add_image_with_boxes requires Pillow (pip install pillow)") from err
        tensor = np.asarray(draw_boxes(Image.fromarray(tensor), rois, labels=labels))
    if rescale != 1:
        tensor = resize(tensor, int(height * rescale), int(width * rescale))
    return Summary.Image(height=height, width=width, colorspace=channels,
                         encoded_image_string=encode_png(tensor))


def video(tag, tensor, fps=4):
    """A GIF summary of (N, T, C, H, W) clips (needs moviepy, as in PyTorch)."""
    frames = _to_uint8(prepare_video(make_np(tensor)))
    return Summary(value=[Summary.Value(tag=tag, image=make_video(frames, fps))])


def make_video(tensor, fps):
    """A GIF ``Summary.Image`` of (T, H, W, C) uint8 frames, or None without moviepy."""
    try:
        from moviepy import editor as mpy
    except ImportError:
        print("add_video needs package moviepy")
        return None
    import tempfile
    _, height, width, channels = tensor.shape
    clip = mpy.ImageSequenceClip(list(tensor), fps=fps)
    with tempfile.NamedTemporaryFile(suffix=".gif") as f:
        clip.write_gif(f.name, logger=None)
        f.seek(0)
        return Summary.Image(height=height, width=width, colorspace=channels,
                             encoded_image_string=f.read())


def audio(tag, tensor, sample_rate=44100):
    """A mono 16-bit WAV summary of samples in [-1, 1] (clipped, with a warning)."""
    array = make_np(tensor).squeeze()
    if abs(array).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        array = array.clip(-1, 1)
    if array.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    samples = (array * np.iinfo(np.int16).max).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(sample_rate)
        wav.writeframes(samples.tobytes())
    proto = Summary.Audio(sample_rate=sample_rate, num_channels=1,
                          length_frames=samples.shape[-1],
                          encoded_audio_string=buffer.getvalue(), content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=proto)])


def text(tag, text):
    """A text summary (markdown in TensorBoard's Text tab) under ``<tag>/text_summary``."""
    content = TextPluginData(version=0).SerializeToString()
    metadata = SummaryMetadata(
        plugin_data=SummaryMetadata.PluginData(plugin_name="text", content=content))
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode("utf_8")],
                        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=metadata,
                                        tensor=proto)])
