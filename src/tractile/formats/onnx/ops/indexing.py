"""ONNX indexing ops: Gather*, Scatter*, TensorScatter, OneHot, Compress, NonZero, Unique."""
from __future__ import annotations

from ....ops.indexing import Compress, Gather, GatherElements, GatherND, OneHot
from ....ops.scatter import ScatterElements, ScatterND, TensorScatter
from ....ops.sort import NonZero, Unique
from ..registry import OnnxNode, onnx_op

onnx_op("Gather", since=1)(lambda node: Gather(node.int("axis", 0)))
onnx_op("GatherElements", since=11)(lambda node: GatherElements(node.int("axis", 0)))
onnx_op("GatherND", since=11)(lambda node: GatherND(node.int("batch_dims", 0)))
onnx_op("Scatter", since=9)(lambda node: ScatterElements(node.int("axis", 0)))
onnx_op("OneHot", since=9)(lambda node: OneHot(node.int("axis", -1)))
onnx_op("Compress", since=9)(lambda node: Compress(node.int("axis", None)))
onnx_op("NonZero", since=9)(lambda node: NonZero())
onnx_op("Unique", since=11)(lambda node: Unique(node.int("axis", None), bool(node.int("sorted", 1))))


@onnx_op("ScatterElements", since=11)
def scatter_elements(node: OnnxNode):
    return ScatterElements(node.int("axis", 0), node.string("reduction", "none"))


@onnx_op("ScatterND", since=11)
def scatter_nd(node: OnnxNode):
    return ScatterND(node.string("reduction", "none"))


@onnx_op("TensorScatter", since=24)
def tensor_scatter(node: OnnxNode):
    mode = node.string("mode", "linear")
    if mode not in ("linear", "circular"):
        raise node.error(f"mode must be linear or circular, got {mode!r}")
    return TensorScatter(node.int("axis", -2), mode == "circular")
