"""`SummaryWriter`: log scalars, histograms, images, text, hparams, graphs and
embeddings into TensorBoard event files (PyTorch's ``torch.utils.tensorboard``).

A `FileWriter` owns one event file (tensorboard's ``EventFileWriter``: a
queue and a thread that flushes every `flush_secs`); a `SummaryWriter` holds
the main one plus one per tag of `add_scalars`, and builds each summary with
`summary`. Inputs may be nbtorch tensors (any device, requiring grad or not),
NumPy arrays or Python numbers.

Example:
    >>> with SummaryWriter("runs/exp1") as writer:
    ...     for step in range(100):
    ...         writer.add_scalar("loss", 1.0 / (step + 1), step)
"""
import os
import socket
import time
from datetime import datetime

from tensorboard.compat import tf
from tensorboard.compat.proto.event_pb2 import Event, SessionLog, TaggedRunMetadata
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import summary as _summary
from ._convert import make_np

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes events to one event file in `log_dir`, asynchronously."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs,
                                            filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        """Stamp `event` with `walltime` (now by default) and `step`, then queue it."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None):
        """A (GraphDef, RunMetadata) pair: the graph event and its run metadata."""
        graph_def, stepstats = graph_profile
        self.add_event(Event(graph_def=graph_def.SerializeToString()), None, walltime)
        tagged = TaggedRunMetadata(tag="step1", run_metadata=stepstats.SerializeToString())
        self.add_event(Event(tagged_run_metadata=tagged), None, walltime)

    def add_onnx_graph(self, graph, walltime=None):
        self.add_event(Event(graph_def=graph.SerializeToString()), None, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


def _default_logdir(comment=""):
    """``runs/<Mon><DD>_<HH>-<MM>-<SS>_<hostname><comment>``, PyTorch's default."""
    stamp = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", stamp + "_" + socket.gethostname() + comment)


def _tensorflow_bins():
    """TensorFlow's default histogram edges: +-1e-12 growing by 10% up to 1e20, and 0."""
    edges, v = [], 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0] + edges


class SummaryWriter:
    """Log data for TensorBoard into event files under `log_dir`.

    Args:
        log_dir: directory of the event files; default ``runs/<datetime>_<host><comment>``.
        comment: suffix of the default `log_dir` (ignored when `log_dir` is given).
        purge_step: on a restarted run, TensorBoard hides the old events at steps
            >= `purge_step` (a START session log is written at that step).
        max_queue: events queued before a write to disk is forced.
        flush_secs: seconds between flushes to disk.
        filename_suffix: suffix of the event file names.

    Example:
        >>> writer = SummaryWriter(comment="_lr0.1")      # runs/Dec06_16-10-00_host_lr0.1
        >>> writer.add_scalar("loss/train", loss.item(), epoch)
        >>> writer.add_graph(model, images)
        >>> writer.close()
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10,
                 flush_secs=120, filename_suffix=""):
        self.log_dir = log_dir if log_dir else _default_logdir(comment)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = _tensorflow_bins()

    def _get_file_writer(self):
        """The main FileWriter, (re)opened on first use and after `close`."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step, session_log=SessionLog(
                    status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        """The directory the event files are written to."""
        return self.log_dir

    def _add(self, summary, global_step=None, walltime=None):
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None,
                    run_name=None, global_step=None):
        """Log a run's hyperparameters and final metrics for the HParams dashboard, into the
        sub-run `run_name` (the current time by default) of this log dir."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = _summary.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        logdir = os.path.join(self._get_file_writer().get_logdir(),
                              run_name or str(time.time()))
        with SummaryWriter(log_dir=logdir) as w_hp:
            for s in (exp, ssi, sei):
                w_hp.file_writer.add_summary(s, global_step)
            for key, value in metric_dict.items():
                w_hp.add_scalar(key, value, global_step)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None,
                   new_style=False, double_precision=False):
        """Log one number; `new_style` stores a tensor (float64 with `double_precision`)
        for the scalars plugin instead of the legacy ``simple_value``."""
        self._add(_summary.scalar(tag, scalar_value, new_style=new_style,
                                  double_precision=double_precision), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Log several numbers in one chart: each goes to the sub-run
        ``<log_dir>/<main_tag>_<tag>`` under the tag `main_tag`."""
        walltime = time.time() if walltime is None else walltime
        logdir = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            fw_tag = logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            writer = self.all_writers.get(fw_tag)
            if writer is None:
                writer = FileWriter(fw_tag, self.max_queue, self.flush_secs,
                                    self.filename_suffix)
                self.all_writers[fw_tag] = writer
            writer.add_summary(_summary.scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        """Log a whole tensor (read back with tensorboard's ``make_ndarray``)."""
        self._add(_summary.tensor_proto(tag, tensor), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        """Log a histogram of `values`; `bins` is "tensorflow" (exponential edges), a NumPy
        rule name ("auto", "fd", ...), a count or the edges."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._add(_summary.histogram(tag, values, bins, max_bins=max_bins), global_step,
                  walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares,  # noqa: A002
                          bucket_limits, bucket_counts, global_step=None, walltime=None):
        """Log a histogram from precomputed statistics (`bucket_limits`: right edges)."""
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._add(_summary.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                         bucket_counts), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """Log an image: float in [0, 1] or uint8, laid out as `dataformats` (CHW, HWC,
        HW ...); one channel is shown as grey."""
        self._add(_summary.image(tag, img_tensor, dataformats=dataformats), global_step,
                  walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None,
                   dataformats="NCHW"):
        """Log a batch of images, tiled into one grid of up to 8 columns."""
        self._add(_summary.image(tag, img_tensor, dataformats=dataformats), global_step,
                  walltime)

    def add_image_with_boxes(self, tag, img_tensor, box_tensor, global_step=None,
                             walltime=None, rescale=1, dataformats="CHW", labels=None):
        """Log an image with boxes (N, 4: x1, y1, x2, y2) drawn on it (needs Pillow)."""
        if labels is not None:
            labels = [labels] if isinstance(labels, str) else labels
            if len(labels) != box_tensor.shape[0]:
                labels = None
        self._add(_summary.image_boxes(tag, img_tensor, box_tensor, rescale=rescale,
                                       dataformats=dataformats, labels=labels),
                  global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """Log a matplotlib figure (or a list of them, as a grid) as an image."""
        from ._image import figure_to_image
        formats = "NCHW" if isinstance(figure, list) else "CHW"
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                       dataformats=formats)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        """Log (N, T, C, H, W) clips as a GIF (needs moviepy)."""
        self._add(_summary.video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        """Log mono audio (samples in [-1, 1]) as WAV."""
        self._add(_summary.audio(tag, snd_tensor, sample_rate=sample_rate), global_step,
                  walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Log a string (markdown) for the Text dashboard."""
        self._add(_summary.text(tag, text_string), global_step, walltime)

    def add_onnx_graph(self, prototxt):
        """Log the graph of an ONNX model file (needs onnx)."""
        from ._onnx_graph import load_onnx_graph
        self._get_file_writer().add_onnx_graph(load_onnx_graph(prototxt))

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Log the graph of `model` traced by `nbtorch.jit.trace` on `input_to_model` (a
        tensor or a tuple of them) for the Graphs dashboard."""
        from ._graph import graph
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose,
                                                use_strict_trace))

    @staticmethod
    def _encode(rawstr):
        """Escape "%", "/" and "\\" so a tag is one directory name."""
        return "".join(f"%{ord(c):02x}" if c in "%/\\" else c for c in rawstr)

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None,
                      tag="default", metadata_header=None):
        """Save an (N, D) embedding with optional labels and (N, C, H, W) thumbnails for
        the Projector, under ``<log_dir>/<step:05d>/<tag>``."""
        from . import _embedding
        mat = make_np(mat)
        global_step = 0 if global_step is None else global_step
        subdir = f"{str(global_step).zfill(5)}/{self._encode(tag)}"
        save_path = os.path.join(self._get_file_writer().get_logdir(), subdir)
        fs = tf.io.gfile
        if fs.exists(save_path):
            if not fs.isdir(save_path):
                raise NotADirectoryError(
                    f"Path: `{save_path}` exists, but is a file. Cannot proceed.")
            print("warning: Embedding dir exists, did you set global_step for "
                  "add_embedding()?")
        else:
            fs.makedirs(save_path)
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            _embedding.make_tsv(metadata, save_path, metadata_header=metadata_header)
        if label_img is not None:
            if mat.shape[0] != label_img.shape[0]:
                raise AssertionError("#images should equal with #data points")
            _embedding.make_sprite(label_img, save_path)
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data "
                                 "points")
        _embedding.make_mat(mat, save_path)
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.extend([_embedding.get_embedding_info(
            metadata, label_img, subdir, global_step, tag)])
        from google.protobuf import text_format
        _embedding.write_pbtxt(self._get_file_writer().get_logdir(),
                               text_format.MessageToString(self._projector_config))

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127,
                     weights=None, walltime=None):
        """Log a precision-recall curve of binary `labels` against `predictions` in
        [0, 1]."""
        self._add(_summary.pr_curve(tag, make_np(labels), make_np(predictions),
                                    num_thresholds, weights), global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall,
                         global_step=None, num_thresholds=127, weights=None, walltime=None):
        """Log a precision-recall curve from precomputed counts."""
        self._add(_summary.pr_curve_raw(tag, true_positive_counts, false_positive_counts,
                                        true_negative_counts, false_negative_counts,
                                        precision, recall, num_thresholds, weights),
                  global_step, walltime)

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        """One Custom Scalars chart plotting several scalar tags together."""
        self._add(_summary.custom_scalars({category: {title: ["Multiline", tags]}}))

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        """One Custom Scalars chart of a value tag between a lower and an upper tag."""
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self._add(_summary.custom_scalars({category: {title: ["Margin", tags]}}))

    def add_custom_scalars(self, layout):
        """The Custom Scalars layout: {category: {title: ["Multiline" | "Margin", tags]}}."""
        self._add(_summary.custom_scalars(layout))

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None,
                 global_step=None, walltime=None):
        """Log a 3-D mesh or point cloud: vertices (B, N, 3), colors (B, N, 3) in 0..255,
        faces (B, F, 3) vertex indices."""
        self._add(_summary.mesh(tag, vertices, colors, faces, config_dict), global_step,
                  walltime)

    def flush(self):
        """Write every pending event of every file to disk."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self):
        """Flush and close every event file (a second close does nothing)."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
