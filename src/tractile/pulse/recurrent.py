"""Streaming of ops that carry a state along time: LSTM/GRU/RNN, Scan, CausalConvWithState.

Forward in time, they stream by keeping their state between pushes: each push runs the
op's own loop on the new frames, starting from the state the previous push ended in.
Frames that come before the stream start (a late input) are skipped, so the state starts
exactly at the first real frame. Final states (``Y_h``...) describe the end of the
sequence and are not available in a stream; a reverse direction needs the whole stream.
"""
from __future__ import annotations

import numpy as np

from ..errors import AnalysisError, TractileError
from ..graph import Node
from ..ops.causal_conv import CausalConvWithState
from ..ops.control_scan import Scan
from ..ops.recurrent import Recurrent
from ..ops.stream_carried import CarriedStateOp
from .registry import pulsifier
from .stream import Stream, Unavailable, Wire
from .translate import PulseContext


def _not_available(what: str) -> Unavailable:
    return Unavailable(AnalysisError(f"{what} describes the end of the sequence; a stream has no end"))


def _carried(ctx: PulseContext, node: Node, wires: list[Wire], source: int, axis: int,
             outputs: list[int], output_axes: list[int]) -> list:
    wires = ctx.aligned(wires, node.name)
    stream = wires[source].stream
    op = CarriedStateOp(node.op, source, axis, stream.delay, tuple(outputs), tuple(output_axes),
                        _final_state_bytes(ctx, node, outputs))
    outlets = ctx.wire_node(node.name, op, [w.outlet for w in wires])
    results: list = [_not_available(f"output {slot} of {node.op.name}") for slot in range(len(node.outputs))]
    for outlet, slot, out_axis in zip(outlets, outputs, output_axes):
        dim = ctx.output_dim(node, slot, out_axis, stream.dim)
        results[slot] = Wire(outlet, Stream(out_axis, dim, stream.delay, stream.pulse))
    return results


def _final_state_bytes(ctx: PulseContext, node: Node, streamed: list[int]) -> int:
    """Bytes of the outputs that are not streamed (the final states, which is what is carried),
    0 when a size is not known before the stream starts."""
    total = 0
    for slot in range(len(node.outputs)):
        if slot in streamed:
            continue
        fact = ctx.output_fact(node, slot)
        try:
            total += int(np.prod([int(d) for d in fact.shape])) * fact.dtype.np.itemsize
        except (TractileError, TypeError, ValueError):
            return 0
    return total


def _parameters_not_streamed(wires: list[Wire], data: set[int]) -> None:
    for slot, wire in enumerate(wires):
        if slot not in data and wire.streamed:
            raise AnalysisError(f"input {slot} (weights or an initial state) is streamed; only the sequence can stream")


@pulsifier(Recurrent)
def recurrent(ctx: PulseContext, node: Node) -> list:
    op = node.op
    wires = ctx.inputs(node)
    _parameters_not_streamed(wires, {0})
    time_axis, batch_axis = (1, 0) if op.layout else (0, 1)
    axis = wires[0].stream.axis
    if axis == batch_axis:
        y_batch, state_batch = (0, 0) if op.layout else (2, 1)
        return ctx.keep(node, wires, [y_batch] + [state_batch] * len(op.state_names))
    if axis != time_axis:
        raise AnalysisError(f"{op.name} sums over the features of axis {axis}, the streamed axis")
    if op.direction != "forward":
        raise AnalysisError(f"a {op.direction} {op.name} reads the sequence backwards: it needs the whole "
                            "stream")
    if "sequence_lens" in op.optional_inputs:
        raise AnalysisError(f"{op.name} with sequence_lens has no streaming translation (a stream has no length)")
    return _carried(ctx, node, wires, 0, time_axis, [0], [time_axis])


@pulsifier(CausalConvWithState)
def causal_conv(ctx: PulseContext, node: Node) -> list:
    wires = ctx.inputs(node)
    _parameters_not_streamed(wires, {0})
    axis = wires[0].stream.axis
    if axis == 0:
        return ctx.keep(node, wires, [0, 0])
    if axis != 2:
        raise AnalysisError(f"{node.op.name} mixes the channels of axis 1, the streamed axis")
    return _carried(ctx, node, wires, 0, 2, [0], [2])


@pulsifier(Scan)
def scan(ctx: PulseContext, node: Node) -> list:
    op = node.op
    wires = ctx.inputs(node)
    if op.batched or op.has_sequence_lens:
        raise AnalysisError("the batched Scan of opset 8 has no streaming translation")
    n, m = op.states, op.scan_inputs
    scan_slots = set(range(n, n + m))
    _parameters_not_streamed(wires, scan_slots)
    axes = []
    for index, slot in enumerate(sorted(scan_slots)):
        wire = wires[slot]
        rank = ctx.input_fact(node, slot).rank
        axis = op.input_axes[index] if index < len(op.input_axes) else 0
        axis = axis + rank if axis < 0 else axis
        if wire.stream is None or wire.stream.axis != axis:
            raise AnalysisError(f"Scan input {slot} is not streamed along its scan axis {axis}: every scan input "
                                "must be the stream")
        if index < len(op.input_directions) and op.input_directions[index]:
            raise AnalysisError(f"Scan input {slot} is scanned backwards: it needs the whole stream")
        axes.append(axis)
    if len(set(axes)) > 1:
        raise AnalysisError("Scan inputs are scanned along different axes")
    out_axes = []
    for k in range(op.scan_outputs):
        if k < len(op.output_directions) and op.output_directions[k]:
            raise AnalysisError(f"Scan output {n + k} is stacked backwards: it needs the whole stream")
        rank = ctx.output_fact(node, n + k).rank
        axis = op.output_axes[k] if k < len(op.output_axes) else 0
        out_axes.append(axis + rank if axis < 0 else axis)
    return _carried(ctx, node, wires, n, axes[0], list(range(n, n + op.scan_outputs)), out_axes)

