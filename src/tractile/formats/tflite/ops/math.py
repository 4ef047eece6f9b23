"""Translations of the element-wise math operators (both directions): ABS, NEG, EXP, LOG, SQRT,
RSQRT, SQUARE, SIN, COS, FLOOR, CEIL, ROUND, SIGN; the comparisons (EQUAL, NOT_EQUAL, LESS,
LESS_EQUAL, GREATER, GREATER_EQUAL: quantized 8-bit inputs compare as reals, by the core
comparison's recipe); LOGICAL_AND/OR/NOT; SELECT and SELECT_V2; FLOOR_DIV, FLOOR_MOD, ADD_N.
"""
from __future__ import annotations

from ....datum import DatumType
from ....errors import ModelFormatError
from ....ops import binary, logic, unary
from ....ops.add_n import AddN
from ..registry import OpSpec, TflNode, Translated, tflite_op, tflite_writer
from .activation import input_quantized, output_quant

_UNARY = {"ABS": unary.Abs, "NEG": unary.Neg, "EXP": unary.Exp, "LOG": unary.Log, "SQRT": unary.Sqrt,
          "RSQRT": unary.Rsqrt, "SIN": unary.Sin, "COS": unary.Cos, "FLOOR": unary.Floor, "CEIL": unary.Ceil,
          "ROUND": unary.Round, "SIGN": unary.Sign}
#: the unary ops with a quantized form in TFLite
_QUANTIZED_UNARY = ("ABS", "RSQRT")
_BINARY = {"EQUAL": logic.Equal, "NOT_EQUAL": logic.NotEqual, "LESS": logic.Less, "LESS_EQUAL": logic.LessOrEqual,
           "GREATER": logic.Greater, "GREATER_EQUAL": logic.GreaterOrEqual, "LOGICAL_AND": logic.And,
           "LOGICAL_OR": logic.Or, "FLOOR_MOD": binary.Mod}


@tflite_op(*_UNARY)
def unary_op(node: TflNode):
    op_class = _UNARY[node.opcode]
    if input_quantized(node):
        if node.opcode not in _QUANTIZED_UNARY:
            raise ModelFormatError(f"{node.where}: quantized {node.opcode} is not supported (float32 only)")
        return op_class(quant=output_quant(node))
    return op_class()


@tflite_writer(*(cls for cls in _UNARY.values()))
def write_unary(op, ctx) -> OpSpec:
    return OpSpec(next(name for name, cls in _UNARY.items() if type(op) is cls))


@tflite_op("SQUARE")
def square(node: TflNode):
    if input_quantized(node):
        raise ModelFormatError(f"{node.where}: quantized SQUARE is not supported (float32 only)")
    return Translated(binary.Mul(), [0, 0])


@tflite_op(*_BINARY)
def binary_op(node: TflNode):
    if node.opcode == "FLOOR_MOD":
        if input_quantized(node):
            raise ModelFormatError(f"{node.where}: quantized FLOOR_MOD is not supported")
        return binary.Mod(False)
    return _BINARY[node.opcode]()


_WRITTEN = {cls: name for name, cls in _BINARY.items() if name != "FLOOR_MOD"}


@tflite_writer(*_WRITTEN)
def write_binary(op, ctx) -> OpSpec:
    return OpSpec(_WRITTEN[type(op)])


@tflite_writer(binary.Mod)
def write_mod(op: binary.Mod, ctx) -> OpSpec:
    if op.fmod:
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite has no truncating modulo (FLOOR_MOD floors)")
    return OpSpec("FLOOR_MOD")


@tflite_op("LOGICAL_NOT")
def logical_not(node: TflNode):
    return logic.Not()


@tflite_writer(logic.Not)
def write_logical_not(op, ctx) -> OpSpec:
    return OpSpec("LOGICAL_NOT")


@tflite_op("SELECT", "SELECT_V2")
def select(node: TflNode):
    """SELECT_V2 broadcasts its three inputs; SELECT (v1) takes a condition of the inputs' shape
    (or a scalar with scalars)."""
    if node.opcode == "SELECT":
        condition, data = node.tensor(0).shape, node.tensor(1).shape
        if len(condition) != len(data) and condition:
            raise ModelFormatError(f"{node.where}: a SELECT condition of rank {len(condition)} picking parts of "
                                   f"rank-{len(data)} inputs is not supported (SELECT_V2 broadcasts)")
    return logic.Where()


@tflite_writer(logic.Where)
def write_select(op, ctx) -> OpSpec:
    return OpSpec("SELECT_V2")


@tflite_op("FLOOR_DIV")
def floor_div(node: TflNode):
    if input_quantized(node):
        raise ModelFormatError(f"{node.where}: quantized FLOOR_DIV is not supported")
    if node.tensor(0).dtype.is_float:
        return Translated(unary.Floor(), node.wire("divide", binary.Div(), [0, 1]))
    remainder = node.wire("remainder", binary.Mod(False), [0, 1])
    exact = node.wire("exact", binary.Sub(), [0] + remainder)
    return Translated(binary.Div(), exact + [1])


@tflite_op("ADD_N")
def add_n(node: TflNode):
    """A float or int32 ADD_N is a chain of core Adds; an int8 one the core AddN (TFLite Micro's
    recipe: LiteRT has no quantized ADD_N)."""
    count = len(node.inputs)
    if count < 2:
        raise ModelFormatError(f"{node.where}: ADD_N needs at least 2 inputs, got {count}")
    if input_quantized(node):
        if node.tensor(0).dtype != DatumType.I8:
            raise ModelFormatError(f"{node.where}: quantized ADD_N is int8 only (as TFLite Micro's), got "
                                   f"{node.tensor(0).dtype}")
        return AddN(quant=output_quant(node))
    total: list = [0]
    for index in range(1, count - 1):
        total = node.wire(f"sum{index}", binary.Add(), total + [index])
    return Translated(binary.Add(), total + [count - 1])


@tflite_writer(AddN)
def write_add_n(op: AddN, ctx) -> OpSpec:
    return OpSpec("ADD_N")
