"""ONNX comparisons, logical and bitwise ops, Where, IsNaN and IsInf."""
from __future__ import annotations

from ....ops import logic
from ..registry import OnnxNode, onnx_op
from .math import legacy_binary

_BINARY_SINCE = {
    "Equal": 1, "Less": 1, "Greater": 1, "LessOrEqual": 12, "GreaterOrEqual": 12,
    "And": 1, "Or": 1, "Xor": 1, "BitwiseAnd": 18, "BitwiseOr": 18, "BitwiseXor": 18,
}
for _name, _since in _BINARY_SINCE.items():
    onnx_op(_name, since=_since)(lambda node, _op=getattr(logic, _name): legacy_binary(node, _op()))

onnx_op("Not", since=1)(lambda node: logic.Not())
onnx_op("BitwiseNot", since=18)(lambda node: logic.BitwiseNot())
onnx_op("Where", since=9)(lambda node: logic.Where())
onnx_op("IsNaN", since=9)(lambda node: logic.IsNaN())


@onnx_op("IsInf", since=10)
def is_inf(node: OnnxNode):
    return logic.IsInf(bool(node.int("detect_positive", 1)), bool(node.int("detect_negative", 1)))
