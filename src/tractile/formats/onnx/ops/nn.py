"""ONNX neural-network ops: Conv, pooling, Gemm, MatMul, BatchNormalization, Softmax, Dropout."""
from __future__ import annotations

from ....ops.cast import Dropout
from ....ops.conv import Conv, check_group
from ....ops.matmul import Gemm, MatMul
from ....ops.nn import LRN, BatchNorm, Softmax
from ....ops.pool import AveragePool, GlobalPool, MaxPool
from ....ops.window import Window
from ..registry import OnnxNode, Translated, onnx_op


def _window(node: OnnxNode, kernel_required: bool) -> Window:
    kernel = node.ints("kernel_shape", () if not kernel_required else node.ints("kernel_shape"))
    return Window.make(kernel, node.ints("strides", None), node.ints("dilations", None),
                       node.ints("pads", None), node.string("auto_pad", "NOTSET"),
                       bool(node.int("ceil_mode", 0)))


@onnx_op("Conv", since=1)
def conv(node: OnnxNode):
    return Conv(_window(node, kernel_required=False), check_group(node.int("group", 1)))


@onnx_op("MaxPool", since=1)
def max_pool(node: OnnxNode):
    if node.output_wanted(1):
        raise node.error("MaxPool's Indices output is not supported yet")
    if node.int("storage_order", 0):
        raise node.error("MaxPool storage_order=1 is not supported")
    return MaxPool(_window(node, kernel_required=True))


@onnx_op("AveragePool", since=1)
def average_pool(node: OnnxNode):
    return AveragePool(_window(node, kernel_required=True), bool(node.int("count_include_pad", 0)))


onnx_op("GlobalAveragePool", since=1)(lambda node: GlobalPool("avg"))
onnx_op("GlobalMaxPool", since=1)(lambda node: GlobalPool("max"))
onnx_op("MatMul", since=1)(lambda node: MatMul())


@onnx_op("Gemm", since=1)
def gemm(node: OnnxNode):
    return Gemm(node.float("alpha", 1.0), node.float("beta", 1.0),
                bool(node.int("transA", 0)), bool(node.int("transB", 0)))


@onnx_op("BatchNormalization", since=1)
def batch_norm(node: OnnxNode):
    if node.opset < 9 and node.int("spatial", 1) != 1:
        raise node.error("BatchNormalization with spatial=0 is not supported")
    if node.int("training_mode", 0) or any(node.output_wanted(i) for i in range(1, 5)):
        raise node.error("BatchNormalization in training mode is not supported (inference only)")
    return Translated(BatchNorm(node.float("epsilon", 1e-5)), [0, 1, 2, 3, 4])


@onnx_op("Softmax", since=1)
def softmax_legacy(node: OnnxNode):
    return Softmax(node.int("axis", 1), legacy=True)


@onnx_op("Softmax", since=13)
def softmax(node: OnnxNode):
    return Softmax(node.int("axis", -1))


@onnx_op("Dropout", since=1)
def dropout(node: OnnxNode):
    return Translated(Dropout(with_mask=node.output_wanted(1)), [0])


@onnx_op("LRN", since=1)
def lrn(node: OnnxNode):
    return LRN(node.int("size"), node.float("alpha", 1e-4), node.float("beta", 0.75), node.float("bias", 1.0))
