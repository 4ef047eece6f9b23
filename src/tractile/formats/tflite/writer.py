"""A TypedModel of TFLite ops to a .tflite FlatBuffer (the inverse of the loader).

Each wire becomes a tensor (named after its outlet label, quantization from its fact),
each ``Const`` a tensor with a buffer, each op an operator through the writer registered
for its class. Subgraphs held by control-flow ops are written after the main one, once
each. Operator versions are the lowest the tensor types need (:mod:`.versions`).
"""
from __future__ import annotations

import os

import numpy as np

from ...datum import DatumType
from ...errors import TractileError
from ...fact import QParams, TypedFact
from ...graph import OutletId
from ...ops.io import Const, Source
from ...ops.resource import Program, real_outputs
from .reader import schema, tensor_type_code
from .registry import WRITERS, OpSpec
from .versions import Signature, operator_version


def save_tflite(model, path) -> None:
    """Write ``model`` (TFLite ops only) to ``path``."""
    data = write_model(model)
    with open(os.fspath(path), "wb") as handle:
        handle.write(data)


def write_model(model, description: str = "tractile") -> bytes:
    """The bytes of a .tflite file holding ``model`` and the subgraphs its ops reference."""
    from . import ops  # noqa: F401  (registers the writers)

    programs = [node.op for node in model.nodes if isinstance(node.op, Program)]
    if programs and len(programs) == 1 and all(model.nodes[o.node].op is programs[0] for o in model.outputs):
        model = programs[0].body.source
    return _ModelWriter(description).write(model)


class _Tensor:
    __slots__ = ("name", "dtype", "shape", "quant", "buffer", "is_variable", "type_name")

    def __init__(self, name, dtype, shape, quant, buffer=0, is_variable=False):
        self.name, self.dtype, self.shape, self.quant = name, dtype, shape, quant
        self.buffer, self.is_variable = buffer, is_variable
        self.type_name = None


class _Operator:
    __slots__ = ("opcode", "inputs", "outputs", "intermediates", "options", "version", "custom_options")

    def __init__(self, opcode, inputs, outputs, intermediates, options, version, custom_options=None):
        self.opcode, self.inputs, self.outputs = opcode, inputs, outputs
        self.intermediates, self.options, self.version = intermediates, options, version
        self.custom_options = custom_options


class TensorRef(int):
    """A tensor created by a writer (a constant or a variable), as opposed to an input index."""


class OpWriter:
    """What a registered writer sees: the op's input facts, and helpers to add tensors."""

    def __init__(self, graph_writer, node, model):
        self.graph = graph_writer
        self.node = node
        self.model = model

    def input_fact(self, index: int) -> TypedFact:
        return self.model.outlet_fact(self.node.inputs[index])

    def output_fact(self, index: int = 0) -> TypedFact:
        return self.model.outlet_fact(OutletId(self.node.id, index))

    def input_dtype(self, index: int) -> DatumType:
        return self.input_fact(index).dtype

    def input_count(self) -> int:
        return len(self.node.inputs)

    def tensor_type(self, dtype: DatumType) -> int:
        return tensor_type_code(dtype)

    def const(self, value: np.ndarray, suffix: str, quant: QParams | None = None) -> TensorRef:
        return TensorRef(self.graph.add_constant(f"{self.node.name}/{suffix}", np.asarray(value), quant))

    def variable(self, value: np.ndarray, suffix: str, quant: QParams | None = None) -> TensorRef:
        return TensorRef(self.graph.add_constant(f"{self.node.name}/{suffix}", np.asarray(value), quant,
                                                 variable=True))

    def scratch(self, suffix: str, dtype: DatumType, quant: QParams | None = None) -> TensorRef:
        """An empty tensor (LSTM intermediates): only its type and quantization matter."""
        tensors = self.graph.tensors
        tensors.append(_Tensor(f"{self.node.name}/{suffix}", dtype, (0,), quant))
        return TensorRef(len(tensors) - 1)

    def subgraph(self, model) -> int:
        """The index the given TypedModel gets as a subgraph of the file."""
        return self.graph.model_writer.subgraph_index(model)


class _GraphWriter:
    def __init__(self, model_writer, model):
        self.model_writer = model_writer
        self.model = model
        self.tensors: list[_Tensor] = []
        self.operators: list[_Operator] = []
        self.by_outlet: dict[OutletId, int] = {}
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def add_constant(self, name: str, value: np.ndarray, quant: QParams | None, variable: bool = False) -> int:
        dtype = DatumType.from_numpy(value.dtype)
        buffer = 0
        if not variable or np.any(value != 0):
            buffer = self.model_writer.add_buffer(np.ascontiguousarray(value).tobytes())
        self.tensors.append(_Tensor(name, dtype, tuple(value.shape), quant, buffer, variable))
        return len(self.tensors) - 1

    def tensor_of(self, outlet: OutletId) -> int:
        if outlet in self.by_outlet:
            return self.by_outlet[outlet]
        fact = self.model.outlet_fact(outlet)
        node = self.model.nodes[outlet.node]
        name = self.model.outlet_label(outlet)
        if isinstance(node.op, Const):
            quant = node.op.qparams or fact.qparams or self._consumer_quantization(outlet)
            index = self.add_constant(name, node.op.value, quant)
        else:
            shape = fact.concrete_shape()
            if shape is None:
                shape = tuple(d if isinstance(d, int) else 1 for d in fact.shape)
            self.tensors.append(_Tensor(name, fact.dtype, tuple(shape), fact.qparams))
            index = len(self.tensors) - 1
        self.by_outlet[outlet] = index
        return index

    def _consumer_quantization(self, outlet: OutletId) -> QParams | None:
        """The quantization a TFLite op expects on a constant that lost it (a folded one)."""
        for inlet in self.model.outlet_successors(outlet):
            expected = getattr(self.model.nodes[inlet.node].op, "in_q", ())
            if inlet.slot < len(expected) and expected[inlet.slot] is not None:
                return expected[inlet.slot]
        return None

    def _written_nodes(self) -> list[int]:
        """The nodes to write, in order: those the outputs need through written inputs (a writer's
        ``unwritten_inputs`` are inputs the operator does not list)."""
        model = self.model
        order = model.eval_order()
        live = set(model.outputs)
        written = []
        for node_id in reversed(order):
            node = model.nodes[node_id]
            if not any(OutletId(node_id, slot) in live for slot in range(len(node.outputs))):
                continue
            written.append(node_id)
            skipped = getattr(WRITERS.get(type(node.op)), "unwritten_inputs", ())
            live.update(outlet for slot, outlet in enumerate(node.inputs) if slot not in skipped)
        return written[::-1]

    def write(self) -> None:
        model = self.model
        for outlet in model.inputs:
            self.inputs.append(self.tensor_of(outlet))
        for node_id in self._written_nodes():
            node = model.nodes[node_id]
            if isinstance(node.op, (Source, Const)):
                continue
            writer = WRITERS.get(type(node.op))
            if writer is None:
                raise TractileError(f'cannot write node "{node.name}" ({node.op.name}) to TFLite: it has no TFLite '
                                    f"operator (ops with one: {', '.join(sorted(t.__name__ for t in WRITERS))})")
            spec: OpSpec = writer(node.op, OpWriter(self, node, model))
            wires = list(range(len(node.inputs))) if spec.inputs is None else spec.inputs
            inputs = []
            for wire in wires:
                if wire is None:
                    inputs.append(-1)
                elif isinstance(wire, TensorRef):
                    inputs.append(int(wire))
                else:
                    inputs.append(self.tensor_of(node.inputs[wire]))
            slots = range(len(node.outputs)) if spec.outputs is None else spec.outputs
            outputs = [self.tensor_of(OutletId(node_id, slot)) for slot in slots]
            for slot, type_name in spec.output_types.items():
                self.tensors[self.tensor_of(OutletId(node_id, slot))].type_name = type_name
            version = getattr(node.op, "version", None) or spec.version or operator_version(Signature(
                spec.opcode, [(self.tensors[i].dtype, len(self.tensors[i].shape)) if i >= 0 else None for i in inputs],
                [(self.tensors[i].dtype, len(self.tensors[i].shape)) for i in outputs],
                spec.options[1] if spec.options else {}))
            self.operators.append(_Operator(spec.opcode, inputs, outputs, [int(i) for i in spec.intermediates],
                                            spec.options, version, spec.custom_options))
        for outlet in model.outputs[:real_outputs(model)]:
            self.outputs.append(self.tensor_of(outlet))


class _ModelWriter:
    def __init__(self, description: str):
        self.description = description
        self.buffers: list[bytes] = [b""]
        self.graphs: list[_GraphWriter] = []
        self.indices: dict[int, int] = {}
        self.pending: list = []

    def add_buffer(self, data: bytes) -> int:
        self.buffers.append(data)
        return len(self.buffers) - 1

    def subgraph_index(self, model) -> int:
        key = id(model)
        if key not in self.indices:
            self.indices[key] = len(self.indices)
            self.pending.append(model)
        return self.indices[key]

    def write(self, model) -> bytes:
        self.subgraph_index(model)
        while len(self.graphs) < len(self.pending):
            graph = _GraphWriter(self, self.pending[len(self.graphs)])
            self.graphs.append(graph)
            graph.write()
        return self._serialize()

    # FlatBuffers ---------------------------------------------------------------------------
    def _serialize(self) -> bytes:
        import flatbuffers

        tfl = _schema_module()
        b = flatbuffers.Builder(1024 + sum(len(x) for x in self.buffers))
        opcodes: list[tuple[str, int]] = []
        subgraph_offsets = [self._subgraph(b, tfl, graph, opcodes) for graph in self.graphs]
        opcode_offsets = []
        for name, version in opcodes:
            custom = b.CreateString(name.split(":", 1)[1]) if name.startswith("CUSTOM:") else None
            code = tfl.BuiltinOperator.CUSTOM if custom is not None else getattr(tfl.BuiltinOperator, name)
            tfl.OperatorCodeStart(b)
            if custom is not None:
                tfl.OperatorCodeAddCustomCode(b, custom)
            tfl.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            tfl.OperatorCodeAddBuiltinCode(b, code)
            tfl.OperatorCodeAddVersion(b, version)
            opcode_offsets.append(tfl.OperatorCodeEnd(b))
        buffer_offsets = []
        for data in self.buffers:
            vector = None
            if data:
                b.StartVector(1, len(data), 16)
                b.head = b.head - len(data)
                b.Bytes[b.head:b.head + len(data)] = data
                b.vectorNumElems = len(data)
                vector = b.EndVector()
            tfl.BufferStart(b)
            if vector is not None:
                tfl.BufferAddData(b, vector)
            buffer_offsets.append(tfl.BufferEnd(b))
        description = b.CreateString(self.description)
        opcodes_vector = _offsets_vector(b, tfl.ModelStartOperatorCodesVector, opcode_offsets)
        subgraphs_vector = _offsets_vector(b, tfl.ModelStartSubgraphsVector, subgraph_offsets)
        buffers_vector = _offsets_vector(b, tfl.ModelStartBuffersVector, buffer_offsets)
        tfl.ModelStart(b)
        tfl.ModelAddVersion(b, 3)
        tfl.ModelAddOperatorCodes(b, opcodes_vector)
        tfl.ModelAddSubgraphs(b, subgraphs_vector)
        tfl.ModelAddDescription(b, description)
        tfl.ModelAddBuffers(b, buffers_vector)
        b.Finish(tfl.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    def _subgraph(self, b, tfl, graph: _GraphWriter, opcodes: list) -> int:
        tensor_offsets = [self._tensor(b, tfl, tensor) for tensor in graph.tensors]
        operator_offsets = []
        for op in graph.operators:
            key = (op.opcode, op.version)
            if key not in opcodes:
                opcodes.append(key)
            operator_offsets.append(self._operator(b, tfl, op, opcodes.index(key)))
        tensors = _offsets_vector(b, tfl.SubGraphStartTensorsVector, tensor_offsets)
        inputs = _int_vector(b, tfl.SubGraphStartInputsVector, graph.inputs)
        outputs = _int_vector(b, tfl.SubGraphStartOutputsVector, graph.outputs)
        operators = _offsets_vector(b, tfl.SubGraphStartOperatorsVector, operator_offsets)
        name = b.CreateString(graph.model.properties.get("tflite_subgraph", "main"))
        tfl.SubGraphStart(b)
        tfl.SubGraphAddTensors(b, tensors)
        tfl.SubGraphAddInputs(b, inputs)
        tfl.SubGraphAddOutputs(b, outputs)
        tfl.SubGraphAddOperators(b, operators)
        tfl.SubGraphAddName(b, name)
        return tfl.SubGraphEnd(b)

    def _tensor(self, b, tfl, tensor: _Tensor) -> int:
        shape = _int_vector(b, tfl.TensorStartShapeVector, list(tensor.shape))
        name = b.CreateString(tensor.name)
        quant = None
        if tensor.quant is not None:
            scales = b.CreateNumpyVector(np.asarray(tensor.quant.scale, dtype=np.float32))
            zeros = b.CreateNumpyVector(np.asarray(tensor.quant.zero_point, dtype=np.int64))
            tfl.QuantizationParametersStart(b)
            tfl.QuantizationParametersAddScale(b, scales)
            tfl.QuantizationParametersAddZeroPoint(b, zeros)
            tfl.QuantizationParametersAddQuantizedDimension(b, tensor.quant.axis or 0)
            quant = tfl.QuantizationParametersEnd(b)
        tfl.TensorStart(b)
        tfl.TensorAddShape(b, shape)
        type_code = getattr(tfl.TensorType, tensor.type_name) if tensor.type_name else tensor_type_code(tensor.dtype)
        tfl.TensorAddType(b, type_code)
        tfl.TensorAddBuffer(b, tensor.buffer)
        tfl.TensorAddName(b, name)
        if quant is not None:
            tfl.TensorAddQuantization(b, quant)
        if tensor.is_variable:
            tfl.TensorAddIsVariable(b, True)
        return tfl.TensorEnd(b)

    def _operator(self, b, tfl, op: _Operator, opcode_index: int) -> int:
        options_offset, options_type = None, 0
        if op.options is not None:
            options_name, fields = op.options
            options_offset = _options(b, tfl, options_name, fields)
            options_type = getattr(tfl.BuiltinOptions, options_name)
        inputs = _int_vector(b, tfl.OperatorStartInputsVector, op.inputs)
        outputs = _int_vector(b, tfl.OperatorStartOutputsVector, op.outputs)
        intermediates = _int_vector(b, tfl.OperatorStartIntermediatesVector, op.intermediates) \
            if op.intermediates else None
        custom = None
        if op.custom_options is not None:
            from flatbuffers import flexbuffers

            custom = b.CreateNumpyVector(np.frombuffer(flexbuffers.Dumps(op.custom_options), dtype=np.uint8))
        tfl.OperatorStart(b)
        tfl.OperatorAddOpcodeIndex(b, opcode_index)
        tfl.OperatorAddInputs(b, inputs)
        tfl.OperatorAddOutputs(b, outputs)
        if intermediates is not None:
            tfl.OperatorAddIntermediates(b, intermediates)
        if options_offset is not None:
            tfl.OperatorAddBuiltinOptionsType(b, options_type)
            tfl.OperatorAddBuiltinOptions(b, options_offset)
        if custom is not None:
            tfl.OperatorAddCustomOptions(b, custom)
        return tfl.OperatorEnd(b)


def _schema_module():
    try:
        import tflite
    except ImportError:
        raise TractileError("writing TFLite models needs the tflite package: pip install 'tractile[tflite]'") from None
    schema("Model")
    return tflite


def _int_vector(b, start, values: list) -> int:
    start(b, len(values))
    for value in reversed(values):
        b.PrependInt32(int(value))
    return b.EndVector()


def _offsets_vector(b, start, offsets: list) -> int:
    start(b, len(offsets))
    for offset in reversed(offsets):
        b.PrependUOffsetTRelative(offset)
    return b.EndVector()


def _options(b, tfl, name: str, fields: dict) -> int:
    vectors = {}
    for field, value in fields.items():
        if isinstance(value, (list, tuple)):
            vectors[field] = _int_vector(b, getattr(tfl, f"{name}Start{field}Vector"), list(value))
        elif isinstance(value, str):
            vectors[field] = b.CreateString(value)
    getattr(tfl, f"{name}Start")(b)
    for field, value in fields.items():
        adder = getattr(tfl, f"{name}Add{field}")
        adder(b, vectors[field] if field in vectors else value)
    return getattr(tfl, f"{name}End")(b)
