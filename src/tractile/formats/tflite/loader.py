"""A .tflite file to a :class:`~tractile.model.TypedModel` (TFLite loads straight to typed).

Every subgraph becomes a TypedModel: subgraph 0 is the model, the others are held by the
control-flow ops that reference them. Constant tensors become ``Const`` nodes carrying
their quantization; variable tensors (LSTM and SVDF states) become the state of the op
that updates them. Unsupported operators, custom ones included, are all reported at
once, before anything is built.
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np

from ...dim import symbol
from ...errors import AnalysisError, ModelFormatError, TractileError, UnsupportedOpError
from ...fact import TypedFact
from ...graph import OutletId
from ...model import TypedModel
from ...ops.array import Concat, Pad, Slice, Split, Transpose
from ...ops.control import Body
from ...ops.indexing import DynamicUpdateSlice, Gather, GatherND
from ...ops.io import Const
from ...ops.layout import DepthToSpace, Expand, SpaceToDepth, Tile
from ...ops.quantized.common import QUANTIZED
from ...ops.relabel import SetQuantization
from ...ops.resource import OWN_OUTPUTS, Program, VarHandle, effectful, real_outputs
from ...ops.shape import Reshape, Squeeze, Unsqueeze
from .reader import ACCESS_ERRORS, ModelInfo, buffer_value, read_model
from .registry import REGISTRY, Reshaped, TflNode, Translated, registry_key

FLAVOURS = ("reference", "micro")
#: the core ops that only move values
MOVES = (Concat, Pad, Slice, Split, Transpose, DynamicUpdateSlice, Gather, GatherND, DepthToSpace, Expand,
         SpaceToDepth, Tile, Reshape, Squeeze, Unsqueeze)


def load_tflite(source, flavour: str = "reference") -> TypedModel:
    """Load a .tflite file (path, bytes or file object) as a TypedModel.

    ``flavour`` picks the kernels to match where TFLite has two integer semantics:
    "reference" (TFLite's reference kernels, the interpreter's ``BUILTIN_REF`` resolver)
    or "micro" (TFLite Micro, whose fully connected layers requantize in fixed point).
    """
    if flavour not in FLAVOURS:
        raise TractileError(f"flavour must be one of {', '.join(FLAVOURS)}, got {flavour!r}")
    data = _read_bytes(source)
    info = read_model(data)
    check_supported(info)
    return TfliteLoader(info, flavour).main_model()


def _read_bytes(source) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except OSError as error:
            raise TractileError(f"cannot read {path}: {error.strerror}") from None
    if hasattr(source, "read"):
        return source.read()
    raise TractileError(f"cannot load a TFLite model from {type(source).__name__}")


def check_supported(info: ModelInfo) -> None:
    """Raise UnsupportedOpError listing every unsupported operator (custom ones by name)."""
    from . import ops  # noqa: F401  (registers the translations)

    missing: dict[tuple[str, int], list[str]] = {}
    for subgraph in info.subgraphs:
        for operator in subgraph.operators:
            name = registry_key(operator)
            if name in REGISTRY:
                continue
            key = (name, operator.version)
            names = [subgraph.tensors[t].name for t in operator.outputs if 0 <= t < len(subgraph.tensors)]
            missing.setdefault(key, []).append(names[0] if names else f"operator {operator.index}")
    if not missing:
        return
    custom = sorted({name.split(":", 1)[1] for name, _ in missing if name.startswith("CUSTOM:")})
    builtin = sorted({name for name, _ in missing if not name.startswith("CUSTOM:")})
    parts = []
    if custom:
        parts.append(f"custom ops {', '.join(custom)}")
    if builtin:
        parts.append(f"builtin ops {', '.join(builtin)}")
    supported = ", ".join(sorted(name for name in REGISTRY if not name.startswith("CUSTOM:")))
    customs = ", ".join(sorted(name.split(":", 1)[1] for name in REGISTRY if name.startswith("CUSTOM:")))
    raise UnsupportedOpError(
        f"the model uses unsupported {' and '.join(parts)} (tractile supports the builtin ops {supported} "
        f"and the custom ops {customs})",
        [("tflite", name, version, nodes) for (name, version), nodes in sorted(missing.items())])


class TfliteLoader:
    """Builds TypedModels from the subgraphs of a read file (each subgraph once)."""

    def __init__(self, info: ModelInfo, flavour: str = "reference"):
        self.info = info
        self.flavour = flavour
        self.models: dict[int, TypedModel] = {}
        self.building: list[int] = []
        self.constants: dict[tuple[int, int], np.ndarray | None] = {}
        #: per subgraph being built, the output of its last effectful op (resource variables)
        self.last_effect: dict[int, OutletId | None] = {}
        self.uses_resources = False

    def main_model(self) -> TypedModel:
        model = self.subgraph_model(0, "model")
        if self.uses_resources:
            model = program_model(model)
        model.properties["tflite_version"] = self.info.version
        if self.info.description:
            model.properties["tflite_description"] = self.info.description
        return model

    def constant(self, subgraph, tensor_index: int) -> np.ndarray | None:
        key = (subgraph.index, tensor_index)
        if key not in self.constants:
            tensor = subgraph.tensors[tensor_index]
            self.constants[key] = buffer_value(self.info, tensor, f"subgraph {subgraph.index} tensor "
                                                                  f"{tensor_index} ({tensor.name!r})")
        return self.constants[key]

    def subgraph_model(self, index: int, where: str) -> TypedModel:
        if not 0 <= index < len(self.info.subgraphs):
            raise ModelFormatError(f"{where}: subgraph index {index} is out of range "
                                   f"({len(self.info.subgraphs)} subgraphs)")
        if index in self.models:
            return self.models[index]
        if index in self.building:
            raise ModelFormatError(f"{where}: subgraph {index} calls itself (recursion through "
                                   f"{' -> '.join(map(str, self.building + [index]))})")
        self.building.append(index)
        try:
            model = self._build(self.info.subgraphs[index])
        finally:
            self.building.pop()
        self.models[index] = model
        return model

    def _input_fact(self, tensor) -> TypedFact:
        shape = []
        for axis, dim in enumerate(tensor.shape):
            if dim == -1:
                shape.append(symbol(f"{_symbol_name(tensor.name)}_{axis}"))
            else:
                shape.append(dim)
        return TypedFact(tensor.dtype, shape, qparams=tensor.quant)

    def _build(self, subgraph) -> TypedModel:
        model = TypedModel()
        model.properties["tflite_subgraph"] = subgraph.name
        outlets: dict[int, OutletId] = {}
        for tensor_index in subgraph.inputs:
            tensor = subgraph.tensors[tensor_index]
            if tensor_index in outlets:
                raise ModelFormatError(f"subgraph {subgraph.index}: tensor {tensor_index} is listed twice as input")
            outlets[tensor_index] = model.add_source(tensor.name, self._input_fact(tensor))
        self.last_effect[subgraph.index] = None
        for operator in subgraph.operators:
            self._wire_operator(model, subgraph, operator, outlets)
        outputs = []
        for tensor_index in subgraph.outputs:
            outputs.append(self._outlet(model, subgraph, tensor_index, outlets, f"subgraph {subgraph.index} output"))
        model.outputs = outputs
        model.set_output_names(subgraph.tensors[t].name for t in subgraph.outputs)
        last = self.last_effect.pop(subgraph.index)
        if last is not None:
            model.properties[OWN_OUTPUTS] = len(outputs)
            model.outputs = outputs + [last]
        return model

    def wire_input(self, node: TflNode, slot: int) -> OutletId:
        """The outlet of operator input ``slot`` (a constant tensor is wired on first use)."""
        if not node.present(slot):
            raise ModelFormatError(f"{node.where}: input {slot} is missing")
        return self._outlet(node.model, node.subgraph, node.inputs[slot], node.outlets, node.where)

    def previous_effect(self, node: TflNode) -> OutletId | None:
        """The output of the last effectful op wired before this operator in its subgraph."""
        return self.last_effect.get(node.subgraph.index)

    def _outlet(self, model, subgraph, tensor_index: int, outlets, where: str) -> OutletId:
        if tensor_index in outlets:
            return outlets[tensor_index]
        tensor = subgraph.tensors[tensor_index]
        value = self.constant(subgraph, tensor_index)
        if value is None:
            raise ModelFormatError(f"{where}: tensor {tensor_index} ({tensor.name!r}) is read before any "
                                   "operator writes it and has no constant value")
        outlet = model.wire_node(tensor.name, Const(value, tensor.quant), [])[0]
        outlets[tensor_index] = outlet
        return outlet

    def _reshaped(self, model, subgraph, tensor_index: int, shape: tuple, where: str) -> OutletId:
        tensor = subgraph.tensors[tensor_index]
        value = self.constant(subgraph, tensor_index)
        if value is None:
            raise ModelFormatError(f"{where}: tensor {tensor_index} ({tensor.name!r}) must be a constant")
        return model.wire_node(f"{tensor.name}.reshaped", Const(value.reshape(shape), tensor.quant), [])[0]

    def _wire_operator(self, model, subgraph, operator, outlets) -> None:
        node = TflNode(self, subgraph, operator, model, outlets)
        translate = REGISTRY[registry_key(operator)]
        op = activation = None
        via: dict = {}
        try:
            result = translate(node)
            if isinstance(result, list):
                produced = result
            else:
                op, slots = (result.op, result.slots) if isinstance(result, Translated) else (result, None)
                activation = result.activation if isinstance(result, Translated) else None
                via = result.inputs_via if isinstance(result, Translated) else {}
                if slots is None:
                    slots = [slot for slot, tensor in enumerate(operator.inputs) if tensor >= 0]
                inputs = [self._reshaped(model, subgraph, operator.inputs[slot.slot], slot.shape, node.where)
                          if isinstance(slot, Reshaped) else node.outlet(slot) for slot in slots]
        except ACCESS_ERRORS as error:
            raise ModelFormatError(f"{node.where}: damaged options ({type(error).__name__}: {error})") from None
        except AnalysisError as error:
            raise ModelFormatError(f"{node.where}: {error}") from None
        out_tensors = [subgraph.tensors[t] if t >= 0 else None for t in operator.outputs]
        effect = op is not None and effectful(op)
        if op is not None:
            if effect or isinstance(op, VarHandle):
                self.uses_resources = True
            last = self.last_effect[subgraph.index]
            if effect and last is not None and "ordered" in {f.name for f in dataclasses.fields(op)}:
                op = dataclasses.replace(op, ordered=True)
                inputs.append(last)
            try:
                for position, through in via.items():
                    if isinstance(through, np.ndarray):
                        inputs[position] = model.wire_node(f"{node.name}.input{position}", Const(through), [])[0]
                    else:
                        inputs[position] = model.wire_node(f"{node.name}.{through.name}", through,
                                                           [inputs[position]])[0]
                produced = op.wire_typed(model, node.name, inputs)
                if activation is not None:
                    produced = model.wire_node(f"{node.name}.{activation.name}", activation, produced)
            except AnalysisError as error:
                raise ModelFormatError(f"{node.where}: {error}") from None
        if effect:
            if produced:
                hidden = len(produced) > len(operator.outputs)
                self.last_effect[subgraph.index] = produced[-1] if hidden else produced[0]
                produced = produced[:len(operator.outputs)]
            if not operator.outputs:
                return
        if len(produced) != len(operator.outputs):
            raise ModelFormatError(f"{node.where}: the op gives {len(produced)} outputs, the file lists "
                                   f"{len(operator.outputs)}")
        for outlet, tensor_index, tensor in zip(produced, operator.outputs, out_tensors):
            if tensor is None:
                continue
            fact = model.outlet_fact(outlet)
            if fact.dtype != tensor.dtype:
                raise ModelFormatError(f"{node.where}: output {tensor.name!r} is {tensor.dtype} in the file but "
                                       f"the op computes {fact}")
            if fact.rank != len(tensor.shape) and tensor.shape:
                raise ModelFormatError(f"{node.where}: output {tensor.name!r} has shape {list(tensor.shape)} in "
                                       f"the file but the op computes {fact}")
            if tensor.quant is not None and tensor.dtype in QUANTIZED \
                    and fact.qparams != tensor.quant and _moves(model, outlet):
                outlet = model.wire_node(f"{tensor.name}.quantization", SetQuantization(tensor.quant), [outlet])[0]
                fact = model.outlet_fact(outlet)
            if tensor.quant is not None and tensor.dtype in QUANTIZED \
                    and fact.qparams != tensor.quant:
                raise ModelFormatError(f"{node.where}: output {tensor.name!r} is quantized as {tensor.quant} in "
                                       f"the file but the op computes {fact}")
            outlets[tensor_index] = outlet
            model.outlet_labels[outlet] = tensor.name


def _moves(model, outlet: OutletId) -> bool:
    """Whether ``outlet`` comes from an op that only moves values (TFLite's kernels copy them
    raw, whatever quantization the file gives the output)."""
    return isinstance(model.nodes[outlet.node].op, MOVES)


def program_model(body: TypedModel) -> TypedModel:
    """The model as a :class:`Program` over subgraph 0 (resource variables need a store per state)."""
    model = TypedModel()
    model.properties = {key: value for key, value in body.properties.items() if key != OWN_OUTPUTS}
    sources = [model.add_source(body.outlet_label(outlet), body.outlet_fact(outlet)) for outlet in body.inputs]
    model.outputs = model.wire_node("program", Program(body=Body(body, "the TFLite main subgraph")), sources)
    model.set_output_names(body.outlet_label(outlet) for outlet in body.outputs[:real_outputs(body)])
    return model


def _symbol_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() else "_" for c in name) or "d"
    return cleaned if not cleaned[0].isdigit() else "_" + cleaned
