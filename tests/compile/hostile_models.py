"""Models whose every name slot holds hostile text (``tractile.tools.hostile_names``), in ONNX,
TFLite and TensorFlow, for the hostile-names test.

Each name ``s`` gets one branch ``y = relu(x + w)`` of shape 2x3: ``x`` and ``y`` are a model
input and output, ``w`` a constant. Value names must differ, so the slots of one name hold ``s``
itself or ``s`` with a few punctuation characters appended (``s*/``, ``s??/``), which sanitise
away: a C identifier made from ``s*/`` is the one made from ``s``, so every collision is still
tried. Every other name is the exact output name (the issue's exploit), the rest exact inputs.
"""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np

SHAPE = (2, 3)


@dataclasses.dataclass
class Slots:
    """The names one hostile-names model was built with, in port order."""

    inputs: list[str]
    outputs: list[str]
    exact: list[str]  # each hostile name once, as the input or output it is exactly


def slots(names: list[str], separator: str = "") -> Slots:
    """Input and output names: ``s`` exactly as the output for odd positions and the constructor
    payloads, as the input otherwise; the other port gets ``s`` plus a line feed."""
    inputs, outputs = [], []
    for index, name in enumerate(names):
        exact_output = index % 2 == 1 or "constructor" in name
        inputs.append(name + separator + "\n" if exact_output else name)
        outputs.append(name if exact_output else name + separator + "\n")
    every = inputs + outputs + [n + separator + "*/" for n in names] + [n + separator + "??/" for n in names]
    assert len(set(every)) == len(every), "hostile value names must stay distinct"
    return Slots(inputs, outputs, names)


def weights(count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(29)
    return [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(count)]


def onnx_model(names: list[str], graph_name: str) -> tuple[bytes, Slots]:
    """Inputs, outputs, initializers, intermediate value_info, node names, the graph's name, the
    producer, doc strings and metadata all hostile."""
    from onnx import TensorProto, helper, numpy_helper

    ports = slots(names)
    nodes, initializers, values = [], [], []
    for index, (name, w) in enumerate(zip(names, weights(len(names)))):
        x, y, constant, middle = ports.inputs[index], ports.outputs[index], name + "*/", name + "??/"
        initializers.append(numpy_helper.from_array(w, constant))
        nodes.append(helper.make_node("Add", [x, constant], [middle], name=name, doc_string=name))
        nodes.append(helper.make_node("Relu", [middle], [y], name=name + "/relu"))
        values.append(helper.make_tensor_value_info(middle, TensorProto.FLOAT, SHAPE))
    inputs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, SHAPE, doc_string=x) for x in ports.inputs]
    outputs = [helper.make_tensor_value_info(y, TensorProto.FLOAT, SHAPE) for y in ports.outputs]
    graph = helper.make_graph(nodes, graph_name, inputs, outputs, initializers, doc_string=graph_name,
                              value_info=values)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10,
                              producer_name=graph_name, doc_string=graph_name)
    helper.set_model_props(model, {name: name for name in names[:8]})
    return model.SerializeToString(), ports


def tflite_model(names: list[str], subgraph_name: str, signature_key: str) -> tuple[bytes, Slots]:
    """Tensor names (inputs, constants, outputs: operators are named after them), the subgraph's
    name, the description, and a signature whose key and tensor names are hostile."""
    from tests.tflite.builder import GraphBuilder
    from tractile.formats.tflite import writer

    ports = slots(names)
    graph = GraphBuilder(subgraph_name)
    outlets = []
    for index, (name, w) in enumerate(zip(names, weights(len(names)))):
        x = graph.input(ports.inputs[index], "f32", SHAPE)
        constant = graph.const(name + "*/", w)
        outlets.append(graph.binary(ports.outputs[index], "add", [x, constant], activation="RELU"))
    model = graph.outputs(*outlets)
    proxy = _SignatureSchema(writer._schema_module(), signature_key, ports)
    original = writer._schema_module
    writer._schema_module = lambda: proxy
    try:
        data = writer.write_model(model, description=subgraph_name)
    finally:
        writer._schema_module = original
    return data, ports


class _SignatureSchema(SimpleNamespace):
    """The ``tflite`` schema module, adding a SignatureDef to the Model table the writer builds
    (its key and the names of its tensor maps hostile): created before the operator codes
    vector, which the writer builds before the Model table, and added with the buffers."""

    def __init__(self, schema, key: str, ports: Slots):
        super().__init__()
        self._schema, self._key, self._ports, self._offset = schema, key, ports, None

    def __getattr__(self, name):
        return getattr(self._schema, name)

    def _maps(self, b, names: list[str], first: int) -> int:
        tfl = self._schema
        offsets = []
        for index, name in enumerate(names):
            text = b.CreateString(name)
            tfl.TensorMapStart(b)
            tfl.TensorMapAddName(b, text)
            tfl.TensorMapAddTensorIndex(b, first + index)
            offsets.append(tfl.TensorMapEnd(b))
        b.StartVector(4, len(offsets), 4)
        for offset in reversed(offsets):
            b.PrependUOffsetTRelative(offset)
        return b.EndVector()

    def ModelStartOperatorCodesVector(self, b, count):  # noqa: N802 (the schema's spelling)
        tfl = self._schema
        inputs = self._maps(b, self._ports.inputs, 0)
        outputs = self._maps(b, self._ports.outputs, 0)
        key = b.CreateString(self._key)
        tfl.SignatureDefStart(b)
        tfl.SignatureDefAddInputs(b, inputs)
        tfl.SignatureDefAddOutputs(b, outputs)
        tfl.SignatureDefAddSignatureKey(b, key)
        tfl.SignatureDefAddSubgraphIndex(b, 0)
        signature = tfl.SignatureDefEnd(b)
        b.StartVector(4, 1, 4)
        b.PrependUOffsetTRelative(signature)
        self._offset = b.EndVector()
        return tfl.ModelStartOperatorCodesVector(b, count)

    def ModelAddBuffers(self, b, buffers):  # noqa: N802
        self._schema.ModelAddBuffers(b, buffers)
        self._schema.ModelAddSignatureDefs(b, self._offset)


def tf_names(names: list[str]) -> list[str]:
    """GraphDef node names are also references (``name:1``, ``^name``): no colon, no leading caret."""
    return [name.replace(":", "|") for name in names]


def tf_graph(names: list[str]) -> tuple[bytes, Slots]:
    """A frozen GraphDef whose Placeholder, Const, AddV2 and Relu node names are hostile; the Relu
    nodes are the outputs."""
    from tensorboard.compat.proto import graph_pb2, tensor_pb2, types_pb2

    ports = slots(names)
    graph = graph_pb2.GraphDef()
    graph.versions.producer = 1700

    def add(op: str, name: str, inputs=(), **attrs):
        node = graph.node.add(op=op, name=name)
        node.input.extend(inputs)
        for key, value in attrs.items():
            node.attr[key].CopyFrom(value)
        return node

    from tensorboard.compat.proto import attr_value_pb2, tensor_shape_pb2

    float_type = attr_value_pb2.AttrValue(type=types_pb2.DT_FLOAT)
    shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in SHAPE])
    for index, (name, w) in enumerate(zip(names, weights(len(names)))):
        x, y, constant, middle = ports.inputs[index], ports.outputs[index], name + "*/", name + "??/"
        add("Placeholder", x, dtype=float_type, shape=attr_value_pb2.AttrValue(shape=shape))
        tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, tensor_shape=shape, tensor_content=w.tobytes())
        add("Const", constant, dtype=float_type, value=attr_value_pb2.AttrValue(tensor=tensor))
        add("AddV2", middle, [x, constant], T=float_type)
        add("Relu", y, [middle], T=float_type)
    return graph.SerializeToString(), ports
