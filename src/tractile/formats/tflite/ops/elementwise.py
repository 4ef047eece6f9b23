"""Translations of the broadcasting binary operators and the activations (both directions)."""
from __future__ import annotations

from ....ops.tfl.activation import Activation, Prelu
from ....ops.tfl.binary import Binary
from ..registry import OpSpec, TflNode, activation_code, activation_name, tflite_op, tflite_writer

#: builtin name -> (kind, options table, whether the options carry a fused activation)
_BINARY = {
    "ADD": ("add", "AddOptions", True),
    "SUB": ("sub", "SubOptions", True),
    "MUL": ("mul", "MulOptions", True),
    "DIV": ("div", "DivOptions", True),
    "SQUARED_DIFFERENCE": ("squared_difference", "SquaredDifferenceOptions", False),
    "MAXIMUM": ("maximum", "MaximumMinimumOptions", False),
    "MINIMUM": ("minimum", "MaximumMinimumOptions", False),
}
_BY_KIND = {kind: name for name, (kind, _, _) in _BINARY.items()}


@tflite_op(*_BINARY)
def binary(node: TflNode):
    kind, table, fused = _BINARY[node.opcode]
    options = node.options(table) if fused else None
    activation = activation_name(options.FusedActivationFunction()) if options is not None else "NONE"
    pot = bool(options.PotScaleInt16()) if options is not None and kind in ("add", "sub") else True
    return Binary(kind=kind, activation=activation, pot_scale_int16=pot)


@tflite_writer(Binary)
def write_binary(op: Binary, ctx) -> OpSpec:
    name = _BY_KIND[op.kind]
    _, table, fused = _BINARY[name]
    fields = {}
    if fused:
        fields["FusedActivationFunction"] = activation_code(op.activation)
    if op.kind in ("add", "sub"):
        fields["PotScaleInt16"] = op.pot_scale_int16
    return OpSpec(name, (table, fields))


_ACTIVATIONS = {"RELU": "relu", "RELU6": "relu6", "RELU_N1_TO_1": "relu_n1_to_1", "RELU_0_TO_1": "relu_0_to_1",
                "LOGISTIC": "logistic", "TANH": "tanh", "LEAKY_RELU": "leaky_relu", "HARD_SWISH": "hard_swish"}
_ACTIVATION_OPTIONS = {"leaky_relu": "LeakyReluOptions", "hard_swish": "HardSwishOptions"}


@tflite_op(*_ACTIVATIONS)
def activation(node: TflNode):
    kind = _ACTIVATIONS[node.opcode]
    alpha = 0.0
    if kind == "leaky_relu":
        options = node.options("LeakyReluOptions")
        alpha = float(options.Alpha()) if options is not None else 0.0
    return Activation(kind=kind, alpha=alpha)


@tflite_writer(Activation)
def write_activation(op: Activation, ctx) -> OpSpec:
    name = {kind: builtin for builtin, kind in _ACTIVATIONS.items()}[op.kind]
    table = _ACTIVATION_OPTIONS.get(op.kind)
    if table is None:
        return OpSpec(name)
    return OpSpec(name, (table, {"Alpha": op.alpha} if op.kind == "leaky_relu" else {}))


@tflite_op("PRELU")
def prelu(node: TflNode):
    return Prelu()


@tflite_writer(Prelu)
def write_prelu(op: Prelu, ctx) -> OpSpec:
    return OpSpec("PRELU")
