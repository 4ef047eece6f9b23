"""ONNX reductions (Reduce*, ArgMax/ArgMin), scans (CumSum, CumProd), TopK and Einsum."""
from __future__ import annotations

import numpy as np

from ....ops.einsum import Einsum
from ....ops.reduce import Reduce
from ....ops.scan import CumScan
from ....ops.sort import ArgReduce, TopK
from ..registry import OnnxNode, Translated, onnx_op

#: ONNX op -> (reducer, first opset that reads the axes from an input)
_REDUCE_OPS = {
    "ReduceSum": ("sum", 13),
    "ReduceMean": ("mean", 18),
    "ReduceProd": ("prod", 18),
    "ReduceMax": ("max", 18),
    "ReduceMin": ("min", 18),
    "ReduceL1": ("l1", 18),
    "ReduceL2": ("l2", 18),
    "ReduceSumSquare": ("sum_square", 18),
    "ReduceLogSum": ("log_sum", 18),
    "ReduceLogSumExp": ("log_sum_exp", 18),
}


def _reduce_with_axes_attribute(reducer: str):
    def translate(node: OnnxNode):
        return Translated(Reduce(reducer, node.ints("axes", None), bool(node.int("keepdims", 1))), [0])

    return translate


def _reduce_with_axes_input(reducer: str):
    def translate(node: OnnxNode):
        return Reduce(reducer, None, bool(node.int("keepdims", 1)), bool(node.int("noop_with_empty_axes", 0)))

    return translate


for _op_type, (_reducer, _axes_input_since) in _REDUCE_OPS.items():
    onnx_op(_op_type, since=1)(_reduce_with_axes_attribute(_reducer))
    onnx_op(_op_type, since=_axes_input_since)(_reduce_with_axes_input(_reducer))


def _arg_reduce(kind: str):
    def translate(node: OnnxNode):
        return ArgReduce(kind, node.int("axis", 0), bool(node.int("keepdims", 1)),
                         bool(node.int("select_last_index", 0)))

    return translate


onnx_op("ArgMax", since=1)(_arg_reduce("max"))
onnx_op("ArgMin", since=1)(_arg_reduce("min"))


@onnx_op("CumSum", since=11)
def cum_sum(node: OnnxNode):
    return CumScan("sum", bool(node.int("exclusive", 0)), bool(node.int("reverse", 0)))


@onnx_op("CumProd", since=26)
def cum_prod(node: OnnxNode):
    return CumScan("prod", bool(node.int("exclusive", 0)), bool(node.int("reverse", 0)))


@onnx_op("TopK", since=1)
def top_k_v1(node: OnnxNode):
    return Translated(TopK(node.int("axis", -1)), [0, np.asarray([node.int("k")], dtype=np.int64)])


@onnx_op("TopK", since=10)
def top_k_v10(node: OnnxNode):
    return TopK(node.int("axis", -1))


@onnx_op("TopK", since=11)
def top_k(node: OnnxNode):
    return TopK(node.int("axis", -1), bool(node.int("largest", 1)), bool(node.int("sorted", 1)))


@onnx_op("Einsum", since=12)
def einsum(node: OnnxNode):
    return Einsum(node.string("equation"))
