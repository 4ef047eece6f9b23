"""TensorFlow reductions (Mean, Sum, Max, Min, Prod, All, Any), ArgMax/ArgMin, TopKV2, Unique."""
from __future__ import annotations

import numpy as np

from ....datum import DatumType
from ....ops.cast import Cast
from ....ops.reduce import Reduce
from ....ops.shape import Reshape
from ....ops.sort import ArgReduce, TopK, Unique
from ..registry import TfNode, Translated, tf_op
from .array import as_int64, const_axis

_REDUCERS = {"Mean": "mean", "Sum": "sum", "Max": "max", "Min": "min", "Prod": "prod", "All": "min", "Any": "max",
             "EuclideanNorm": "l2"}


@tf_op(*_REDUCERS)
def reduce(node: TfNode):
    op = Reduce(_REDUCERS[node.op_type], None, node.bool("keep_dims", False), noop_with_empty_axes=True)
    axes = as_int64(node, 1, "reduction_indices", "axes")
    if isinstance(axes, np.ndarray):
        axes = axes.reshape(-1)
    if node.op_type in ("All", "Any"):  # bools reduce as integers
        as_int = node.wire("as_int", Cast(DatumType.I32), [0])
        reduced = node.wire("reduce", op, as_int + [axes])
        return Translated(Cast(DatumType.BOOL), reduced)
    return Translated(op, [0, axes])


@tf_op("ArgMax", "ArgMin")
def arg_reduce(node: TfNode):
    kind = "max" if node.op_type == "ArgMax" else "min"
    found = node.wire("arg", ArgReduce(kind, const_axis(node, 1, "dimension"), False), [0])
    dtype = node.type("output_type", DatumType.I64)
    return found if dtype == DatumType.I64 else Translated(Cast(dtype), found)


@tf_op("TopKV2")
def top_k(node: TfNode):
    k = as_int64(node, 1, "k", "k")
    k = k.reshape(1) if isinstance(k, np.ndarray) else node.wire("k1", Reshape(), [k, np.array([1], np.int64)])[0]
    values, indices = node.wire("topk", TopK(-1, True, node.bool("sorted", True)), [0, k])
    return [values] + node.wire("indices", Cast(DatumType.I32), [indices])


@tf_op("Unique")
def unique(node: TfNode):
    """Values in order of first occurrence, and each input entry's index among them."""
    values, _, inverse, _ = node.wire("unique", Unique(None, sorted=False), [0])
    dtype = node.type("out_idx", DatumType.I32)
    return [values] + (node.wire("idx", Cast(dtype), [inverse]) if dtype != DatumType.I64 else [inverse])
