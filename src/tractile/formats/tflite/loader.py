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
from ...ops.io import Const
from ...ops.quantized.common import QUANTIZED
from ...ops.tfl.common import TflOp
from ...ops.tfl.control import If, While
from ...ops.tfl.resource import EFFECTS, Program, VarHandle, real_outputs
from .reader import ACCESS_ERRORS, ModelInfo, buffer_value, read_model
from .registry import REGISTRY, TflNode, Translated, registry_key

FLAVOURS = ("reference", "micro")


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
            model.properties["tflite_outputs"] = len(outputs)
            model.outputs = outputs + [last]
        return model

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

    def _wire_operator(self, model, subgraph, operator, outlets) -> None:
        node = TflNode(self, subgraph, operator)
        translate = REGISTRY[registry_key(operator)]
        try:
            result = translate(node)
        except ACCESS_ERRORS as error:
            raise ModelFormatError(f"{node.where}: damaged options ({type(error).__name__}: {error})") from None
        except AnalysisError as error:
            raise ModelFormatError(f"{node.where}: {error}") from None
        activation = None
        if isinstance(result, Translated):
            op, slots, activation = result.op, result.slots, result.activation
        else:
            op, slots = result, None
        if slots is None:
            slots = [slot for slot, tensor in enumerate(operator.inputs) if tensor >= 0]
        inputs = [self._outlet(model, subgraph, operator.inputs[slot], outlets, node.where) for slot in slots]
        out_tensors = [subgraph.tensors[t] if t >= 0 else None for t in operator.outputs]
        effect = isinstance(op, EFFECTS) or (isinstance(op, (If, While)) and any(
            "tflite_outputs" in model.properties for model in op.subgraphs().values()))
        if effect or isinstance(op, VarHandle):
            self.uses_resources = True
        if effect and self.last_effect[subgraph.index] is not None:
            op = dataclasses.replace(op, ordered=True)
            inputs.append(self.last_effect[subgraph.index])
        if isinstance(op, TflOp):
            op = dataclasses.replace(
                op,
                in_q=op.in_q or tuple(subgraph.tensors[operator.inputs[slot]].quant for slot in slots),
                out_q=op.out_q or tuple(t.quant if t is not None else None for t in out_tensors),
                out_dtypes=op.out_dtypes or tuple(t.dtype if t is not None else None for t in out_tensors),
                version=operator.version)
        name = out_tensors[0].name if out_tensors and out_tensors[0] is not None else f"op{operator.index}"
        try:
            produced = model.wire_node(name, op, inputs)
            if activation is not None:
                produced = model.wire_node(f"{name}.{activation.name}", activation, produced)
        except AnalysisError as error:
            raise ModelFormatError(f"{node.where}: {error}") from None
        if effect:
            if produced:
                self.last_effect[subgraph.index] = produced[0]
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
            if not isinstance(op, TflOp) and tensor.quant is not None and tensor.dtype in QUANTIZED \
                    and fact.qparams != tensor.quant:
                raise ModelFormatError(f"{node.where}: output {tensor.name!r} is quantized as {tensor.quant} in "
                                       f"the file but the op computes {fact}")
            outlets[tensor_index] = outlet
            model.outlet_labels[outlet] = tensor.name


def program_model(body: TypedModel) -> TypedModel:
    """The model as a :class:`Program` over subgraph 0 (resource variables need a store per state)."""
    model = TypedModel()
    model.properties = {key: value for key, value in body.properties.items() if key != "tflite_outputs"}
    sources = [model.add_source(body.outlet_label(outlet), body.outlet_fact(outlet)) for outlet in body.inputs]
    model.outputs = model.wire_node("program", Program(body=body), sources)
    model.set_output_names(body.outlet_label(outlet) for outlet in body.outputs[:real_outputs(body)])
    return model


def _symbol_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() else "_" for c in name) or "d"
    return cleaned if not cleaned[0].isdigit() else "_" + cleaned
