"""Translations of the broadcasting binary operators (both directions), and the fused activation
code of a core activation (the activations themselves: ``activation.py``)."""
from __future__ import annotations

from ....errors import ModelFormatError
from ....ops import binary as core
from ....ops.activations import Clip, Relu, Tanh
from ....ops.quantized.common import activation_range, integer_limits
from ..registry import OpSpec, TflNode, Translated, activation_code, tflite_op, tflite_writer

#: builtin name -> (core op class, options table, whether the options carry a fused activation)
_BINARY = {
    "ADD": (core.Add, "AddOptions", True),
    "SUB": (core.Sub, "SubOptions", True),
    "MUL": (core.Mul, "MulOptions", True),
    "DIV": (core.Div, "DivOptions", True),
    "SQUARED_DIFFERENCE": (core.SquaredDifference, "SquaredDifferenceOptions", False),
    "MAXIMUM": (core.Max, "MaximumMinimumOptions", False),
    "MINIMUM": (core.Min, "MaximumMinimumOptions", False),
}
_BY_CLASS = {cls: name for name, (cls, _, _) in _BINARY.items()}


@tflite_op(*_BINARY)
def binary(node: TflNode):
    op_class, table, fused = _BINARY[node.opcode]
    options = node.options(table) if fused else None
    code = options.FusedActivationFunction() if options is not None else 0
    pot = bool(options.PotScaleInt16()) if options is not None and op_class in (core.Add, core.Sub) else True
    if node.tensor(0).dtype != node.tensor(1).dtype:
        raise ModelFormatError(f"{node.where}: inputs of different types ({node.tensor(0).dtype}, "
                               f"{node.tensor(1).dtype})")
    quant = node.output_quant() if node.tensor(0).quant is not None else None
    return Translated(op_class(quant=quant, pot_scale_int16=pot), activation=node.fused_activation(code))


def activation_code_of(activation, fact) -> int | None:
    """The TFLite fused activation code of a core activation on an output of ``fact`` (None when
    it is no TFLite fused activation)."""
    if activation is None:
        return activation_code("NONE")
    if fact.qparams is not None and type(activation) is Clip and fact.dtype.is_integer:
        bounds = (activation.low, activation.high)
        for name in ("RELU", "RELU6", "RELU_N1_TO_1"):
            if tuple(float(v) for v in activation_range(name, fact.qparams, fact.dtype)) == bounds:
                return activation_code(name)
        if bounds == tuple(float(v) for v in integer_limits(fact.dtype)):
            return activation_code("NONE")
        return None
    if type(activation) is Relu:
        return activation_code("RELU")
    if type(activation) is Tanh:
        return activation_code("TANH")
    if type(activation) is Clip and not (activation.dynamic_low or activation.dynamic_high):
        bounds = (activation.low, activation.high)
        return {(0.0, 6.0): activation_code("RELU6"), (-1.0, 1.0): activation_code("RELU_N1_TO_1")}.get(bounds)
    return None


@tflite_writer(*_BY_CLASS)
def write_binary(op: core.Arithmetic, ctx) -> OpSpec:
    name = _BY_CLASS[type(op)]
    _, table, fused = _BINARY[name]
    fields = {}
    code = activation_code_of(op.activation, ctx.output_fact(0))
    if code is None or (not fused and code != activation_code("NONE")):
        raise ModelFormatError(f"{name} cannot carry the fused {op.activation.name} of node {ctx.node.name!r}")
    if fused:
        fields["FusedActivationFunction"] = code
    if type(op) in (core.Add, core.Sub):
        fields["PotScaleInt16"] = op.pot_scale_int16
    return OpSpec(name, (table, fields))
