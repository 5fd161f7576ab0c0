"""``add_onnx_graph``: an ONNX model file as a TensorBoard GraphDef (needs onnx).

Graph inputs and weights (initializers) become ``Variable``/``Const`` nodes,
each ONNX node is named by its first output, and graph outputs get
``output/<name>`` sink nodes; edges follow tensor names, so every input
names an existing node.
"""
from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef


def load_onnx_graph(fname):
    """The GraphDef of the ONNX model saved at `fname`."""
    try:
        import onnx
    except ImportError as err:
        raise ImportError("add_onnx_graph requires onnx (pip install 'nbtorch[onnx]')") from err
    return parse(onnx.load(fname).graph)


def _shape(dims):
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in dims])


def parse(graph):
    """NodeDefs of an ONNX ``GraphProto``."""
    nodes, producer = [], {}
    weights = {init.name for init in graph.initializer}
    for init in graph.initializer:
        producer[init.name] = init.name
        nodes.append(NodeDef(name=init.name, op="Const", attr={
            "dtype": AttrValue(type=init.data_type), "shape": AttrValue(shape=_shape(init.dims))}))
    for value in graph.input:
        if value.name in weights:               # older exporters list weights as inputs too
            continue
        tensor_type = value.type.tensor_type
        producer[value.name] = value.name
        nodes.append(NodeDef(name=value.name, op="Variable", attr={
            "dtype": AttrValue(type=tensor_type.elem_type),
            "shape": AttrValue(shape=_shape(d.dim_value for d in tensor_type.shape.dim))}))
    for node in graph.node:
        for out in node.output:
            producer[out] = node.output[0]
    for node in graph.node:
        params = ", ".join(" = ".join(str(f[1]) for f in a.ListFields()) for a in node.attribute)
        nodes.append(NodeDef(name=node.output[0], op=node.op_type,
                             input=[producer[i] for i in node.input if i in producer],
                             attr={"parameters": AttrValue(s=params.encode("utf_8"))}))
    for value in graph.output:
        nodes.append(NodeDef(name=f"output/{value.name}", op="Variable",
                             input=[producer[value.name]] if value.name in producer else []))
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
