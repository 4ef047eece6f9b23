"""ONNX reductions (Reduce*, ArgMax/ArgMin...) and scans (CumSum...)."""
from __future__ import annotations

from ....ops.reduce import Reduce
from ..registry import OnnxNode, onnx_op


@onnx_op("ReduceMean", since=1)
def reduce_mean_v1(node: OnnxNode):
    return Reduce("mean", node.ints("axes", None), bool(node.int("keepdims", 1)))


@onnx_op("ReduceMean", since=18)
def reduce_mean(node: OnnxNode):
    return Reduce("mean", None, bool(node.int("keepdims", 1)), bool(node.int("noop_with_empty_axes", 0)))
