"""ONNX quantisation ops: (De)QuantizeLinear, DynamicQuantizeLinear, integer and QLinear products."""
from __future__ import annotations

from ....datum import DatumType
from ....ops.conv import check_group
from ....ops.qlinear import ConvInteger, MatMulInteger, QLinearConv, QLinearMatMul
from ....ops.quant import DequantizeLinear, DynamicQuantizeLinear, QuantizeLinear
from ..registry import OnnxNode, onnx_op
from .nn import conv_window


def _onnx_type(node: OnnxNode, name: str) -> DatumType | None:
    from ..types import datum_type

    code = node.int(name, 0)
    return datum_type(code, f"{node!r} attribute {name!r}") if code else None


@onnx_op("QuantizeLinear", since=10)
def quantize_linear(node: OnnxNode):
    return QuantizeLinear(_onnx_type(node, "output_dtype"), node.int("axis", 1), node.int("block_size", 0),
                          bool(node.int("saturate", 1)), _onnx_type(node, "precision"))


@onnx_op("DequantizeLinear", since=10)
def dequantize_linear(node: OnnxNode):
    return DequantizeLinear(_onnx_type(node, "output_dtype"), node.int("axis", 1), node.int("block_size", 0))


onnx_op("DynamicQuantizeLinear", since=11)(lambda node: DynamicQuantizeLinear())


@onnx_op("MatMulInteger", since=10)
def matmul_integer(node: OnnxNode):
    zero_points = ("a" if node.present(2) else "") + ("b" if node.present(3) else "")
    return MatMulInteger(zero_points)


@onnx_op("ConvInteger", since=10)
def conv_integer(node: OnnxNode):
    zero_points = ("x" if node.present(2) else "") + ("w" if node.present(3) else "")
    return ConvInteger(conv_window(node), check_group(node.int("group", 1)), zero_points)


onnx_op("QLinearMatMul", since=10)(lambda node: QLinearMatMul())


@onnx_op("QLinearConv", since=10)
def qlinear_conv(node: OnnxNode):
    return QLinearConv(conv_window(node), check_group(node.int("group", 1)))
