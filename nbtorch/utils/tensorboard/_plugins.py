"""Summaries for TensorBoard's plugins: hparams, custom scalars, PR curves, meshes.

Each returns a ``Summary`` whose metadata names the plugin and carries its
plugin data proto, laid out as PyTorch writes them so TensorBoard's
dashboards read them the same way.
"""
import json
import numbers

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

from nbtorch._tensor import Tensor

from ._convert import make_np


def _plugin_metadata(name, content=b""):
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=name,
                                                                  content=content))


def _hparam_value(value):
    """(field of a struct Value, data type name, value) for one hyperparameter.

    As in PyTorch, numbers are checked first, so a bool is logged as a number (1.0/0.0).
    """
    if isinstance(value, numbers.Real):
        return "number_value", "DATA_TYPE_FLOAT64", float(value)
    if isinstance(value, str):
        return "string_value", "DATA_TYPE_STRING", value
    if isinstance(value, Tensor):
        return "number_value", "DATA_TYPE_FLOAT64", float(make_np(value).reshape(-1)[0])
    raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")


def _check_hparam_args(hparam_dict, metric_dict, hparam_domain_discrete):
    for name, arg in (("hparam_dict", hparam_dict), ("metric_dict", metric_dict),
                      ("hparam_domain_discrete", hparam_domain_discrete)):
        if not isinstance(arg, dict):
            raise TypeError(f"parameter: {name} should be a dictionary, nothing logged.")
    for key, domain in hparam_domain_discrete.items():
        if (key not in hparam_dict or not isinstance(domain, list)
                or not all(isinstance(d, type(hparam_dict[key])) for d in domain)):
            raise TypeError(f"parameter: hparam_domain_discrete[{key}] should be a list of "
                            f"same type as hparam_dict[{key}].")


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The three hparams-plugin summaries (experiment, session start, session end) of one
    run: hyperparameter values and domains, and the metric tags to show beside them."""
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams.api_pb2 import (DataType, Experiment, HParamInfo,
                                                     MetricInfo, MetricName, Status)
    from tensorboard.plugins.hparams.plugin_data_pb2 import (HParamsPluginData,
                                                             SessionEndInfo, SessionStartInfo)
    hparam_domain_discrete = hparam_domain_discrete or {}
    _check_hparam_args(hparam_dict, metric_dict, hparam_domain_discrete)
    infos = []
    start = SessionStartInfo()
    for key, value in hparam_dict.items():
        if value is None:
            continue
        field, data_type, value = _hparam_value(value)
        setattr(start.hparams[key], field, value)
        domain = None
        if key in hparam_domain_discrete and not isinstance(hparam_dict[key], Tensor):
            domain = struct_pb2.ListValue(values=[
                struct_pb2.Value(**{field: float(d) if field == "number_value" else d})
                for d in hparam_domain_discrete[key]])
        infos.append(HParamInfo(name=key, type=DataType.Value(data_type),
                                domain_discrete=domain))
    experiment = Experiment(hparam_infos=infos,
                            metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    end = SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))

    def summary(tag, **data):
        content = HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **data)
        smd = _plugin_metadata(metadata.PLUGIN_NAME, content.SerializeToString())
        return Summary(value=[Summary.Value(tag=tag, metadata=smd)])

    return (summary(metadata.EXPERIMENT_TAG, experiment=experiment),
            summary(metadata.SESSION_START_INFO_TAG, session_start_info=start),
            summary(metadata.SESSION_END_INFO_TAG, session_end_info=end))


def custom_scalars(layout):
    """The Custom Scalars dashboard layout: {category: {chart title: [kind, tags]}}, kind
    "Multiline" (any tags) or "Margin" (value, lower, upper)."""
    from tensorboard.plugins.custom_scalar import layout_pb2
    categories = []
    for category, charts in layout.items():
        protos = []
        for title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError("len(tags) != 3")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1],
                                                              upper=tags[2])
                protos.append(layout_pb2.Chart(
                    title=title, margin=layout_pb2.MarginChartContent(series=[series])))
            else:
                protos.append(layout_pb2.Chart(
                    title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)))
        categories.append(layout_pb2.Category(title=category, chart=protos))
    proto = TensorProto(dtype="DT_STRING",
                        string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
                        tensor_shape=TensorShapeProto())
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=proto,
                                        metadata=_plugin_metadata("custom_scalars"))])


def _pr_summary(tag, data, num_thresholds):
    """A pr_curves summary of the (6, num_thresholds) table tp, fp, tn, fn, precision,
    recall."""
    from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=data.shape[0]),
                                  TensorShapeProto.Dim(size=data.shape[1])])
    proto = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(),
                        tensor_shape=shape)
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin_metadata("pr_curves", content),
                                        tensor=proto)])


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127, weights=None):
    """A PR curve from precomputed counts (thresholds capped at 127, as in PyTorch)."""
    data = np.stack([make_np(a) if not isinstance(a, (list, tuple)) else np.asarray(a)
                     for a in (tp, fp, tn, fn, precision, recall)])
    return _pr_summary(tag, data, min(num_thresholds, 127))


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    """A PR curve of binary `labels` against `predictions` in [0, 1]."""
    num_thresholds = min(num_thresholds, 127)
    data = compute_curve(make_np(labels), make_np(predictions), num_thresholds, weights)
    return _pr_summary(tag, data, num_thresholds)


def compute_curve(labels, predictions, num_thresholds=None, weights=None):
    """tp, fp, tn, fn, precision, recall at `num_thresholds` evenly spaced thresholds:
    predictions are bucketed by floor(p * (n - 1)) and counted from the top bucket down."""
    weights = 1.0 if weights is None else weights
    buckets = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)
    bins = dict(bins=num_thresholds, range=(0, num_thresholds - 1))
    tp_buckets, _ = np.histogram(buckets, weights=positive * weights, **bins)
    fp_buckets, _ = np.histogram(buckets, weights=(1.0 - positive) * weights, **bins)
    tp = np.cumsum(tp_buckets[::-1])[::-1]
    fp = np.cumsum(fp_buckets[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def mesh(tag, vertices, colors, faces, config_dict, display_name=None, description=None):
    """A 3-D mesh (the mesh plugin): vertices (B, N, 3), optional faces (B, F, 3) and
    colors (B, N, 3), one tensor summary each, plus a JSON scene config."""
    from tensorboard.plugins.mesh import metadata
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData
    json_config = json.dumps(config_dict, sort_keys=True) if config_dict is not None else "{}"
    parts = [(t, kind) for t, kind in ((vertices, MeshPluginData.VERTEX),
                                       (faces, MeshPluginData.FACE),
                                       (colors, MeshPluginData.COLOR)) if t is not None]
    components = metadata.get_components_bitmask([kind for _, kind in parts])
    values = []
    for tensor, kind in parts:
        array = make_np(tensor)
        smd = metadata.create_summary_metadata(tag, display_name, kind, components,
                                               list(array.shape), description,
                                               json_config=json_config)
        shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=s) for s in array.shape])
        proto = TensorProto(dtype="DT_FLOAT", float_val=array.reshape(-1).tolist(),
                            tensor_shape=shape)
        values.append(Summary.Value(tag=metadata.get_instance_name(tag, kind), tensor=proto,
                                    metadata=smd))
    return Summary(value=values)
