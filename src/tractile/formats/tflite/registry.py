"""The explicit registries of TFLite translations: reading (``@tflite_op``) and writing (``@tflite_writer``).

A reading translation receives a :class:`TflNode` and returns an op (wired to every
present input in order), a :class:`Translated` naming the inputs to wire (operator input
slots, outlets wired by :meth:`TflNode.wire`, or constant arrays), or the list of outlets
that are the operator's outputs (a translation that wired several core ops itself).

A writer receives the op and a :class:`~tractile.formats.tflite.writer.OpWriter` context
and returns an :class:`OpSpec`: the builtin operator name, its options and the inputs as
the TFLite operator lists them.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import ModelFormatError
from ...ops.activations import Clip, Relu, Tanh
from ...ops.quantized.common import QUANTIZED, activation_range, integer_limits
from .reader import OperatorInfo, TensorInfo, buffer_value, schema

REGISTRY: dict[str, Callable] = {}
WRITERS: dict[type, Callable] = {}


def tflite_op(*names: str):
    """Register a translation for the named builtin operators (``CUSTOM:code`` for custom ones)."""
    def register(function):
        for name in names:
            REGISTRY[name] = function
        return function
    return register


def registry_key(operator: OperatorInfo) -> str:
    """The name a translation is registered under: the builtin's, or ``CUSTOM:code``."""
    if operator.opcode == "CUSTOM":
        return f"CUSTOM:{operator.custom_code or '?'}"
    return operator.opcode


def tflite_writer(*op_types: type):
    """Register how ops of the given classes are written as TFLite operators."""
    def register(function):
        for op_type in op_types:
            WRITERS[op_type] = function
        return function
    return register


@dataclass
class Translated:
    """An op and the operator input slots to wire to it (in order); ``None`` slots: all present.
    A slot may be a :class:`Reshaped` constant, or an outlet :meth:`TflNode.wire` returned.

    ``activation``: a core activation op wired after ``op`` (a TFLite fused activation; the
    optimizer fuses it back), whose output is the operator's output tensor.
    ``inputs_via``: per position in the wired inputs, a one-input op wired between that input
    and ``op`` (FULLY_CONNECTED's flattening), or an array wired as a constant in its place.
    """

    op: Any
    slots: list | None = None
    activation: Any = None
    inputs_via: dict = field(default_factory=dict)


@dataclass
class Reshaped:
    """A slot of :class:`Translated` wiring a constant input reshaped at load time (same values,
    same quantization): TFLite's depthwise weights [1, KH, KW, C*M] seen as [KH, KW, 1, C*M]."""

    slot: int
    shape: tuple


@dataclass
class OpSpec:
    """How to write one op: builtin name (``CUSTOM:code`` for a custom operator), options (class
    name, fields) or custom options (a dict, written as a FlexBuffers map), input wires (None: absent)."""

    opcode: str
    options: tuple[str, dict] | None = None
    inputs: list | None = None
    intermediates: list = field(default_factory=list)
    subgraphs: dict = field(default_factory=dict)
    #: the output slots the operator lists (None: all; ordering tokens are not written)
    outputs: list | None = None
    #: tensor type names overriding the outputs' datum types (``{0: "RESOURCE"}``)
    output_types: dict = field(default_factory=dict)
    #: the operator version (None: the lowest the tensor types need, see ``versions.py``)
    version: int | None = None
    custom_options: dict | None = None


class TflNode:
    """What a translation sees of one operator: its tensors, constants, options."""

    def __init__(self, loader, subgraph, operator: OperatorInfo, model=None, outlets=None):
        self.loader = loader
        self.subgraph = subgraph
        self.operator = operator
        self.where = f"subgraph {subgraph.index} operator {operator.index} ({operator.opcode})"
        #: the model being built and its outlet of each tensor already wired (for :meth:`wire`)
        self.model = model
        self.outlets = outlets if outlets is not None else {}

    @property
    def name(self) -> str:
        """The node name the operator's first output gives."""
        outputs = [t for t in self.outputs if t >= 0]
        return self.subgraph.tensors[outputs[0]].name if outputs else f"op{self.operator.index}"

    def outlet(self, item):
        """The outlet of an input: an operator input slot (int), an outlet, or a constant array
        (wired as a Const; a ``(array, qparams)`` pair for a quantized one)."""
        from ...graph import OutletId
        from ...ops.io import Const

        if isinstance(item, OutletId):
            return item
        if isinstance(item, (int, np.integer)):
            return self.loader.wire_input(self, int(item))
        value, quant = item if isinstance(item, tuple) else (item, None)
        self.constants = getattr(self, "constants", 0) + 1
        return self.model.wire_node(f"{self.name}.c{self.constants}", Const(np.asarray(value), quant), [])[0]

    def wire(self, suffix: str | None, op, inputs: list) -> list:
        """Wire a core op of this operator's translation (inputs as :meth:`outlet` takes them),
        named after the operator (``suffix`` None: the op giving its output)."""
        name = self.name if suffix is None else f"{self.name}.{suffix}"
        return op.wire_typed(self.model, name, [self.outlet(i) for i in inputs])

    def fact(self, slot: int):
        """The fact of input ``slot`` in the model being built."""
        return self.model.outlet_fact(self.outlet(slot))

    @property
    def opcode(self) -> str:
        return self.operator.opcode

    @property
    def flavour(self) -> str:
        return self.loader.flavour

    @property
    def inputs(self) -> list[int]:
        return self.operator.inputs

    @property
    def outputs(self) -> list[int]:
        return self.operator.outputs

    def present(self, slot: int) -> bool:
        return slot < len(self.inputs) and self.inputs[slot] >= 0

    def tensor(self, slot: int) -> TensorInfo:
        if not self.present(slot):
            raise ModelFormatError(f"{self.where}: input {slot} is missing")
        return self.subgraph.tensors[self.inputs[slot]]

    def output(self, slot: int = 0) -> TensorInfo:
        if slot >= len(self.outputs) or self.outputs[slot] < 0:
            raise ModelFormatError(f"{self.where}: output {slot} is missing")
        return self.subgraph.tensors[self.outputs[slot]]

    def const(self, slot: int) -> np.ndarray | None:
        """The value of input ``slot`` when it is a constant (None otherwise)."""
        if not self.present(slot):
            return None
        return self.loader.constant(self.subgraph, self.inputs[slot])

    def require_const(self, slot: int, what: str) -> np.ndarray:
        value = self.const(slot)
        if value is None:
            raise ModelFormatError(f"{self.where}: {what} (input {slot}) must be a constant")
        return value

    def variable_value(self, slot: int) -> np.ndarray:
        """The initial value of a variable (state) input: its buffer, or zeros."""
        tensor = self.tensor(slot)
        value = buffer_value(self.loader.info, tensor, self.where)
        if value is None:
            value = np.zeros(tuple(max(d, 1) for d in tensor.shape), dtype=tensor.dtype.np)
        return value

    def options(self, name: str):
        """The builtin options table decoded as ``name`` (e.g. "Conv2DOptions"), or None."""
        table = self.operator.options
        if table is None:
            return None
        options = schema(name)()
        options.Init(table.Bytes, table.Pos)
        return options

    def custom_options(self) -> dict:
        """A custom operator's options (its FlexBuffers map) as a dict; empty when absent."""
        data = self.operator.custom_options
        if not data:
            return {}
        from flatbuffers import flexbuffers

        try:
            options = flexbuffers.Loads(data)
        except Exception as error:  # a damaged buffer raises anything from struct to recursion errors
            raise ModelFormatError(f"{self.where}: damaged custom options ({type(error).__name__}: {error})") from None
        if not isinstance(options, dict):
            raise ModelFormatError(f"{self.where}: custom options should be a map, got {type(options).__name__}")
        return options

    def output_quant(self, slot: int = 0):
        """The quantization of output ``slot`` when it is a quantized (8- or 16-bit) tensor, else None."""
        tensor = self.output(slot)
        return tensor.quant if tensor.quant is not None and tensor.dtype in QUANTIZED else None

    def fused_activation(self, code: int, slot: int = 0):
        """The core op of TFLite fused activation ``code`` on output ``slot`` (None for NONE):
        on a quantized output a Clip between the activation's bounds in the output's integers
        (TFLite's CalculateActivationRangeQuantized), else Relu, Clip or Tanh."""
        name = activation_name(code)
        if name == "NONE":
            return None
        tensor = self.output(slot)
        quant = self.output_quant(slot)
        if quant is not None:
            low, high = activation_range(name, quant, tensor.dtype)
            if (low, high) == integer_limits(tensor.dtype):
                return None
            return Clip(float(low), float(high))
        floats = {"RELU": Relu(), "RELU6": Clip(0.0, 6.0), "RELU_N1_TO_1": Clip(-1.0, 1.0), "TANH": Tanh()}
        if name not in floats or (name == "TANH" and not tensor.dtype.is_float):
            raise ModelFormatError(f"{self.where}: fused activation {name} is not supported on {tensor.dtype}")
        return floats[name]

    def subgraph_model(self, index: int):
        """The TypedModel of another subgraph (for control flow)."""
        return self.loader.subgraph_model(index, self.where)


def activation_name(code: int) -> str:
    names = {v: k for k, v in vars(schema("ActivationFunctionType")).items() if not k.startswith("_")}
    if code not in names:
        raise ModelFormatError(f"unknown fused activation code {code}")
    return names[code]


def activation_code(name: str) -> int:
    return getattr(schema("ActivationFunctionType"), name)


def padding_name(code: int) -> str:
    return {0: "SAME", 1: "VALID"}.get(code, f"padding code {code}")


def padding_code(name: str) -> int:
    return {"SAME": 0, "VALID": 1}[name]
