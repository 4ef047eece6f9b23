"""TensorFlow element-wise math, comparisons, logic, activations, Cast, Select, AddN, ClipByValue,
DivNoNan, Cumsum/Cumprod and Einsum."""
from __future__ import annotations

import numpy as np

from ....ops import activations as act
from ....ops import binary, logic, smooth, unary
from ....ops.array import Concat
from ....ops.cast import Cast
from ....ops.einsum import Einsum
from ....ops.layout import Expand
from ....ops.nn import Softmax
from ....ops.scan import CumScan
from ....ops.shape import Reshape, Shape, Size, Unsqueeze
from ..registry import TfNode, Translated, tf_op

_BINARY = {
    "Add": binary.Add, "AddV2": binary.Add, "Sub": binary.Sub, "Mul": binary.Mul, "RealDiv": binary.Div,
    "Maximum": binary.Max, "Minimum": binary.Min, "Pow": binary.Pow,
    "Less": logic.Less, "LessEqual": logic.LessOrEqual, "Greater": logic.Greater,
    "GreaterEqual": logic.GreaterOrEqual, "Equal": logic.Equal, "LogicalAnd": logic.And,
    "LogicalOr": logic.Or, "BitwiseAnd": logic.BitwiseAnd, "BitwiseOr": logic.BitwiseOr,
    "BitwiseXor": logic.BitwiseXor,
}
for _name, _op in _BINARY.items():
    tf_op(_name)(lambda node, _op=_op: _op())

_UNARY = {
    "Abs": unary.Abs, "Neg": unary.Neg, "Sign": unary.Sign, "Exp": unary.Exp, "Log": unary.Log, "Sqrt": unary.Sqrt,
    "Reciprocal": unary.Reciprocal, "Inv": unary.Reciprocal, "Floor": unary.Floor, "Ceil": unary.Ceil,
    "Rint": unary.Round, "Round": unary.Round, "Sin": unary.Sin, "Cos": unary.Cos, "Tan": unary.Tan,
    "Asin": unary.Asin, "Acos": unary.Acos, "Atan": unary.Atan, "Sinh": unary.Sinh, "Cosh": unary.Cosh,
    "Asinh": unary.Asinh, "Acosh": unary.Acosh, "Atanh": unary.Atanh, "Erf": unary.Erf,
    "Relu": act.Relu, "Sigmoid": act.Sigmoid, "Tanh": act.Tanh, "Softplus": smooth.Softplus,
    "Softsign": smooth.Softsign, "Selu": smooth.Selu, "Elu": smooth.Elu, "LogicalNot": logic.Not,
    "IsNan": logic.IsNaN, "Invert": logic.BitwiseNot,
}
for _name, _op in _UNARY.items():
    tf_op(_name)(lambda node, _op=_op: _op())

tf_op("Relu6")(lambda node: act.Clip(0.0, 6.0))
tf_op("LeakyRelu")(lambda node: act.LeakyRelu(node.float("alpha", 0.2)))
tf_op("Softmax")(lambda node: Softmax(-1))
tf_op("LogSoftmax")(lambda node: Softmax(-1, log=True))
tf_op("Cast")(lambda node: Cast(node.type("DstT")))


@tf_op("IsInf")
def is_inf(node: TfNode):
    return logic.IsInf(True, True)


@tf_op("NotEqual")
def not_equal(node: TfNode):
    equal = node.wire("equal", logic.Equal(), [0, 1])
    return Translated(logic.Not(), equal)


@tf_op("Erfc")
def erfc(node: TfNode):
    one = np.ones((), dtype=node.type("T").np)
    return Translated(binary.Sub(), [one] + node.wire("erf", unary.Erf(), [0]))


@tf_op("Rsqrt")
def rsqrt(node: TfNode):
    return Translated(unary.Reciprocal(), node.wire("sqrt", unary.Sqrt(), [0]))


@tf_op("Square")
def square(node: TfNode):
    return Translated(binary.Mul(), [0, 0])


@tf_op("SquaredDifference")
def squared_difference(node: TfNode):
    difference = node.wire("difference", binary.Sub(), [0, 1])
    return Translated(binary.Mul(), difference + difference)


@tf_op("Log1p", "Expm1")
def log1p_expm1(node: TfNode):
    one = np.ones((), dtype=node.type("T").np)
    if node.op_type == "Log1p":
        return Translated(unary.Log(), node.wire("plus_one", binary.Add(), [0, one]))
    return Translated(binary.Sub(), node.wire("exp", unary.Exp(), [0]) + [one])


@tf_op("FloorDiv")
def floor_div(node: TfNode):
    if node.type("T").is_float:
        return Translated(unary.Floor(), node.wire("divide", binary.Div(), [0, 1]))
    remainder = node.wire("remainder", binary.Mod(False), [0, 1])
    exact = node.wire("exact", binary.Sub(), [0] + remainder)
    return Translated(binary.Div(), exact + [1])


@tf_op("Div")
def div(node: TfNode):
    return floor_div(node) if node.type("T").is_integer else binary.Div()


tf_op("FloorMod", "Mod")(lambda node: binary.Mod(False))
tf_op("TruncateMod")(lambda node: binary.Mod(True))
tf_op("TruncateDiv")(lambda node: binary.Div())


@tf_op("AddN")
def add_n(node: TfNode):
    total = [node.input(0)]
    for index in range(1, len(node.inputs) - 1):
        total = node.wire(f"sum{index}", binary.Add(), total + [index])
    if len(node.inputs) == 1:
        return total
    return Translated(binary.Add(), total + [len(node.inputs) - 1])


@tf_op("Select", "SelectV2")
def select(node: TfNode):
    """SelectV2 broadcasts; v1 Select takes a condition of the inputs' shape, a scalar, or a vector
    picking rows (trailing axes of size 1 are added to it, at run time when ranks are unknown)."""
    if node.op_type == "SelectV2":
        return logic.Where()
    cond_rank, data_rank = node.input_fact(0).rank, node.input_fact(1).rank
    if cond_rank is not None and data_rank is not None:
        if cond_rank == 1 and data_rank > 1:
            axes = np.arange(1, data_rank, dtype=np.int64)
            return Translated(logic.Where(), node.wire("rows", Unsqueeze(), [0, axes]) + [1, 2])
        return logic.Where()
    cond_shape = node.wire("cond_shape", Shape(), [0])
    missing = node.wire("missing_axes", binary.Sub(), node.wire("data_rank", Size(), node.wire(
        "data_shape", Shape(), [1])) + node.wire("cond_rank", Size(), cond_shape))
    count = node.wire("missing_count", Unsqueeze(), missing + [np.array([0], np.int64)])
    ones = node.wire("ones", Expand(), [np.array([1], np.int64)] + count)
    target = node.wire("cond_target", Concat(0), cond_shape + ones)
    return Translated(logic.Where(), node.wire("cond", Reshape(), [0] + target) + [1, 2])


@tf_op("ClipByValue")
def clip_by_value(node: TfNode):
    low = node.wire("low", binary.Max(), [0, 1])
    return Translated(binary.Min(), low + [2])


@tf_op("DivNoNan")
def div_no_nan(node: TfNode):
    """x / y, and 0 where y is 0."""
    zero = np.zeros((), dtype=node.type("T").np)
    quotient = node.wire("divide", binary.Div(), [0, 1])
    is_zero = node.wire("y_is_zero", logic.Equal(), [1, zero])
    return Translated(logic.Where(), is_zero + [zero] + quotient)


@tf_op("Cumsum", "Cumprod")
def cumulative(node: TfNode):
    kind = "sum" if node.op_type == "Cumsum" else "prod"
    return CumScan(kind, node.bool("exclusive", False), node.bool("reverse", False))


tf_op("Einsum")(lambda node: Einsum(node.string("equation")))
