"""Streaming of ops that work along some axes: normalisations, softmax, reductions, MatMul/Gemm.

They stream unchanged when the axes they work along are not the streamed one, which
only moves when the op drops axes (reductions without keepdims, matrix products).
A reduction or normalisation over time needs the whole stream and is refused.
"""
from __future__ import annotations

from ..errors import AnalysisError
from ..graph import Node
from ..ops.matmul import Gemm, MatMul
from ..ops.nn import LRN, BatchNorm, Hardmax, Softmax, SwiGLU, normalize_axis
from ..ops.norm import GroupNorm, LayerNorm, LpNorm, MeanVarianceNorm, RmsNorm
from ..ops.quant import DequantizeLinear, QuantizeLinear
from ..ops.reduce import Reduce
from ..ops.sort import ArgReduce
from .elementwise import broadcast_axis
from .registry import pulsifier
from .stream import Wire
from .translate import PulseContext


def _needs_whole_stream(node: Node, what: str, axis: int) -> AnalysisError:
    return AnalysisError(f"{node.op.name} {what} axis {axis}, the streamed axis: it needs the whole stream")


def _params_not_streamed(wires: list[Wire]) -> None:
    for slot, wire in enumerate(wires[1:], start=1):
        if wire.streamed:
            raise AnalysisError(f"input {slot} (a parameter) is streamed; only the data input can stream")


@pulsifier(Softmax, Hardmax, LpNorm)
def along_axis(ctx: PulseContext, node: Node) -> list[Wire]:
    x = ctx.input(node, 0)
    rank = ctx.input_fact(node, 0).rank
    op = node.op
    axis = normalize_axis(op.axis, rank)
    axes = range(axis, rank) if getattr(op, "legacy", False) else (axis,)
    if x.stream.axis in axes:
        raise _needs_whole_stream(node, "normalises over", x.stream.axis)
    return ctx.keep(node, [x], x.stream.axis)


@pulsifier(MeanVarianceNorm)
def mean_variance_norm(ctx: PulseContext, node: Node) -> list[Wire]:
    x = ctx.input(node, 0)
    rank = ctx.input_fact(node, 0).rank
    if x.stream.axis in {normalize_axis(a, rank) for a in node.op.axes}:
        raise _needs_whole_stream(node, "normalises over", x.stream.axis)
    return ctx.keep(node, [x], x.stream.axis)


@pulsifier(LayerNorm, RmsNorm)
def layer_norm(ctx: PulseContext, node: Node) -> list[Wire]:
    wires = ctx.inputs(node)
    _params_not_streamed(wires)
    stream = wires[0].stream
    axis = normalize_axis(node.op.axis, ctx.input_fact(node, 0).rank)
    if stream.axis >= axis:
        raise _needs_whole_stream(node, "normalises over", stream.axis)
    for slot in range(1, len(wires)):
        fact = ctx.input_fact(node, slot)
        position = stream.axis - (ctx.input_fact(node, 0).rank - fact.rank)
        if position >= 0 and fact.shape[position] != 1:
            raise AnalysisError(f"parameter {slot} ({fact}) varies along the streamed axis")
    return ctx.keep(node, wires, stream.axis)


@pulsifier(BatchNorm, LRN)
def per_channel(ctx: PulseContext, node: Node) -> list[Wire]:
    wires = ctx.inputs(node)
    _params_not_streamed(wires)
    if wires[0].stream.axis == 1:
        raise AnalysisError(f"{node.op.name} works across the channels of axis 1, the streamed axis")
    return ctx.keep(node, wires, wires[0].stream.axis)


@pulsifier(QuantizeLinear, DequantizeLinear)
def quantization(ctx: PulseContext, node: Node) -> list[Wire]:
    """Per-tensor, per-axis or blocked (de)quantization, with parameters that do not vary in time."""
    wires = ctx.inputs(node)
    _params_not_streamed(wires)
    axis = wires[0].stream.axis
    per_element = any(ctx.input_fact(node, slot).volume != 1 for slot in range(1, len(wires)))
    if per_element and normalize_axis(node.op.axis, ctx.input_fact(node, 0).rank) == axis:
        raise AnalysisError(f"{node.op.name} has parameters along axis {axis}, the streamed axis")
    return ctx.keep(node, wires, axis)


@pulsifier(GroupNorm)
def group_norm(ctx: PulseContext, node: Node) -> list[Wire]:
    wires = ctx.inputs(node)
    _params_not_streamed(wires)
    axis = wires[0].stream.axis
    if axis != 0:
        raise _needs_whole_stream(node, "normalises over channels and spatial axes, including", axis)
    return ctx.keep(node, wires, 0)


@pulsifier(SwiGLU)
def same_shape_pair(ctx: PulseContext, node: Node) -> list[Wire]:
    wires = ctx.inputs(node)
    if not all(w.streamed for w in wires):
        raise AnalysisError(f"{node.op.name} needs both inputs streamed (they have one shape)")
    return ctx.keep(node, wires, broadcast_axis(ctx, node, wires))


@pulsifier(Reduce)
def reduce(ctx: PulseContext, node: Node) -> list[Wire]:
    wires = ctx.inputs(node)
    x = wires[0]
    if len(wires) > 1 and wires[1].streamed:
        raise AnalysisError("the reduction's axes are streamed")
    facts = [ctx.input_fact(node, slot) for slot in range(len(node.inputs))]
    axes = node.op._axes(facts[0].rank, facts)
    if axes is None:
        return ctx.keep(node, wires, x.stream.axis)
    if x.stream.axis in axes:
        raise _needs_whole_stream(node, "reduces over", x.stream.axis)
    axis = x.stream.axis if node.op.keepdims else x.stream.axis - sum(a < x.stream.axis for a in axes)
    return ctx.keep(node, wires, axis)


@pulsifier(ArgReduce)
def arg_reduce(ctx: PulseContext, node: Node) -> list[Wire]:
    x = ctx.input(node, 0)
    axis = normalize_axis(node.op.axis, ctx.input_fact(node, 0).rank)
    if axis == x.stream.axis:
        raise _needs_whole_stream(node, "reduces over", axis)
    moved = x.stream.axis if node.op.keepdims or axis > x.stream.axis else x.stream.axis - 1
    return ctx.keep(node, [x], moved)


def _product_axis(node: Node, slot: int, axis: int, rank: int, out_rank: int) -> int:
    """Where streamed axis ``axis`` of operand ``slot`` (of rank ``rank``) lands in ``a @ b``
    (operands transposed as the op says)."""
    rows_or_cols = rank - 2 if slot == 0 else rank - 1
    contracted = rank - 1 if slot == 0 else rank - 2
    if getattr(node.op, "transpose_a" if slot == 0 else "transpose_b", False):
        rows_or_cols, contracted = contracted, rows_or_cols
    if rank == 1 or axis == contracted:
        raise AnalysisError(f"{node.op.name} sums over axis {axis} of input {slot}, the streamed axis: it needs the "
                            "whole stream")
    if axis == rows_or_cols:
        return out_rank - 2 if slot == 0 else out_rank - 1
    return axis + out_rank - rank


@pulsifier(MatMul)
def matmul(ctx: PulseContext, node: Node) -> list[Wire]:
    wires = ctx.inputs(node)
    out_rank = ctx.output_fact(node).rank
    axes = {_product_axis(node, slot, w.stream.axis, ctx.input_fact(node, slot).rank, out_rank)
            for slot, w in enumerate(wires[:2]) if w.streamed}
    if len(axes) != 1:
        raise AnalysisError(f"{node.op.name}'s operands are streamed along axes that do not meet in the product")
    axis = axes.pop()
    if len(wires) > 2:
        broadcast_axis_of_bias(ctx, node, wires, axis)
    return ctx.keep(node, wires, axis)


def broadcast_axis_of_bias(ctx: PulseContext, node: Node, wires: list[Wire], axis: int) -> None:
    bias = wires[2]
    fact = ctx.input_fact(node, 2)
    out_rank = ctx.output_fact(node).rank
    if bias.streamed:
        if bias.stream.axis + out_rank - fact.rank != axis:
            raise AnalysisError("the bias is streamed along another axis than the product")
        return
    position = axis - (out_rank - fact.rank)
    if position >= 0 and fact.shape[position] != 1:
        raise AnalysisError(f"the bias ({fact}) is not streamed but varies along the streamed axis")


@pulsifier(Gemm)
def gemm(ctx: PulseContext, node: Node) -> list[Wire]:
    wires = ctx.inputs(node)
    op: Gemm = node.op
    axes = set()
    for slot, wire in enumerate(wires[:2]):
        if not wire.streamed:
            continue
        axis = wire.stream.axis
        if slot == 0:
            axis = 1 - axis if op.trans_a else axis
        else:
            axis = 1 - axis if op.trans_b else axis
        axes.add(_product_axis(node, slot, axis, 2, 2))
    if len(axes) != 1:
        raise AnalysisError("Gemm's operands are streamed along axes that do not meet in the product")
    axis = axes.pop()
    if len(wires) > 2:
        broadcast_axis_of_bias(ctx, node, wires, axis)
    return ctx.keep(node, wires, axis)
