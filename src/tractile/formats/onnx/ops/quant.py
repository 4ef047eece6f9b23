"""ONNX quantisation ops: (De)QuantizeLinear, DynamicQuantizeLinear, integer and QLinear products."""
from __future__ import annotations

from ....datum import DatumType
from ....ops.conv import check_group
from ....ops.qlinear import ConvInteger, MatMulInteger, QLinearConv, QLinearMatMul
from ....ops.qlinear_ms import QGemm, QLinearAveragePool, QLinearBinary, QLinearConcat, QLinearUnary
from ....ops.quant import DequantizeLinear, DynamicQuantizeLinear, QuantizeLinear
from ....ops.window import Window
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


# onnxruntime's contrib ops (QOperator models) ---------------------------------------------------
MS = "com.microsoft"


def _all_present(node: OnnxNode, count: int) -> None:
    missing = [index for index in range(count) if not node.present(index)]
    if missing:
        raise node.error(f"inputs {missing} (scales and zero points) must be given")


def _binary(kind: str):
    def translate(node: OnnxNode):
        _all_present(node, 8)
        return QLinearBinary(kind)
    return translate


onnx_op("QLinearAdd", domain=MS)(_binary("add"))
onnx_op("QLinearMul", domain=MS)(_binary("mul"))


def _pool_window(node: OnnxNode) -> Window:
    return Window.make(node.ints("kernel_shape"), node.ints("strides", None), None, node.ints("pads", None),
                       node.string("auto_pad", "NOTSET"), bool(node.int("ceil_mode", 0)))


@onnx_op("QLinearAveragePool", domain=MS)
def qlinear_average_pool(node: OnnxNode):
    _all_present(node, 5)
    return QLinearAveragePool(_pool_window(node), bool(node.int("count_include_pad", 0)),
                              bool(node.int("channels_last", 0)))


@onnx_op("QLinearGlobalAveragePool", domain=MS)
def qlinear_global_average_pool(node: OnnxNode):
    _all_present(node, 5)
    return QLinearAveragePool(None, False, bool(node.int("channels_last", 0)))


@onnx_op("QLinearConcat", domain=MS)
def qlinear_concat(node: OnnxNode):
    _all_present(node, len(node.inputs))
    return QLinearConcat(node.int("axis"))


@onnx_op("QLinearSigmoid", domain=MS)
def qlinear_sigmoid(node: OnnxNode):
    _all_present(node, 5)
    return QLinearUnary("sigmoid")


@onnx_op("QLinearLeakyRelu", domain=MS)
def qlinear_leaky_relu(node: OnnxNode):
    _all_present(node, 5)
    return QLinearUnary("leaky_relu", node.float("alpha", 0.01))


@onnx_op("QGemm", domain=MS)
def qgemm(node: OnnxNode):
    _all_present(node, 6)
    if node.float("alpha", 1.0) != 1.0 or node.int("transA", 0):
        raise node.error("QGemm with alpha other than 1 or a transposed A is not supported")
    if not (node.present(7) and node.present(8)):
        raise node.error("QGemm with a float output (no y_scale) is not supported")
    return QGemm(bool(node.int("transB", 0)), node.present(6))
