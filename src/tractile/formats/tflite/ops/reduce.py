"""Translations of the reductions over constant axes (both directions): MEAN, SUM, REDUCE_MAX,
REDUCE_MIN, REDUCE_PROD, REDUCE_ANY, REDUCE_ALL, onto the core Reduce (a quantized MEAN or SUM
carries the output's quantization; max and min select values and keep the input's)."""
from __future__ import annotations

import numpy as np

from ....errors import ModelFormatError
from ....ops.reduce import Reduce
from ..registry import OpSpec, TflNode, Translated, tflite_op, tflite_writer
from .activation import input_quantized, output_quant

_REDUCERS = {"MEAN": "mean", "SUM": "sum", "REDUCE_MAX": "max", "REDUCE_MIN": "min", "REDUCE_PROD": "prod",
             "REDUCE_ANY": "any", "REDUCE_ALL": "all"}


@tflite_op(*_REDUCERS)
def reduce(node: TflNode):
    options = node.options("ReducerOptions")
    keep = bool(options.KeepDims()) if options is not None else False
    axes = tuple(int(v) for v in node.require_const(1, "the axes").reshape(-1))
    reducer = _REDUCERS[node.opcode]
    quant = None
    if input_quantized(node) and reducer not in ("max", "min"):
        if reducer not in ("mean", "sum"):
            raise ModelFormatError(f"{node.where}: quantized {node.opcode} is not supported")
        quant = output_quant(node)
    op = Reduce(reducer, axes, keepdims=keep, noop_with_empty_axes=True, quant=quant)
    return Translated(op, [0])


@tflite_writer(Reduce)
def write_reduce(op: Reduce, ctx) -> OpSpec:
    names = {kind: builtin for builtin, kind in _REDUCERS.items()}
    if op.reducer not in names or op.axes is None or ctx.input_count() != 1:
        raise ModelFormatError(f"node {ctx.node.name!r} ({op}) has no TFLite operator (constant axes needed)")
    if not op.axes and not op.noop_with_empty_axes:
        axes = np.arange(ctx.input_fact(0).rank, dtype=np.int32)
    else:
        axes = np.asarray(op.axes, dtype=np.int32)
    return OpSpec(names[op.reducer], ("ReducerOptions", {"KeepDims": op.keepdims}), [0, ctx.const(axes, "axes")])
