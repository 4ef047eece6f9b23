"""ONNX element-wise math and activations."""
from __future__ import annotations

import numpy as np

from ....ops import activations as act
from ....ops import binary, unary
from ....ops.expansion import VariadicChain
from ..registry import OnnxNode, onnx_op

for _name in ("Add", "Sub", "Mul", "Div"):
    onnx_op(_name, since=1)(lambda node, _op=getattr(binary, _name): _legacy_broadcast(node) or _op())
onnx_op("Pow", since=1)(lambda node: _legacy_broadcast(node) or binary.Pow())

for _name in ("Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil"):
    onnx_op(_name, since=1)(lambda node, _op=getattr(unary, _name): _op())

onnx_op("Relu", since=1)(lambda node: act.Relu())
onnx_op("Sigmoid", since=1)(lambda node: act.Sigmoid())
onnx_op("Tanh", since=1)(lambda node: act.Tanh())
onnx_op("LeakyRelu", since=1)(lambda node: act.LeakyRelu(node.float("alpha", 0.01)))


def _legacy_broadcast(node: OnnxNode):
    """Opset < 7 binary ops broadcast only with ``broadcast=1`` and an ``axis``: unsupported shapes raise."""
    if node.opset < 7 and node.int("broadcast", 0) and node.has("axis"):
        raise node.error("legacy broadcasting with an explicit axis (opset < 7) is not supported")
    return None


@onnx_op("Clip", since=1)
def clip_v1(node: OnnxNode):
    return act.Clip(node.float("min", None), node.float("max", None))


@onnx_op("Clip", since=11)
def clip_v11(node: OnnxNode):
    return act.Clip(dynamic_low=node.present(1), dynamic_high=node.present(2))


@onnx_op("Sum", since=1)
def sum_(node: OnnxNode):
    return VariadicChain(binary.Add())


_ = np
