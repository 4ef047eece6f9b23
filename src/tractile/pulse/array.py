"""Streaming of ops that move data: Transpose, reshapes, Slice, Pad, Concat, Split, Gather.

Most follow the streamed axis to its new position. Slicing along time only shifts the
stream (frames before ``start`` become delay); padding along time is done by buffers
and masks, as for convolutions.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..dim import TDim, dim_symbols, volume
from ..errors import AnalysisError
from ..graph import Node
from ..ops.array import Concat, Pad, Slice, Split, Transpose
from ..ops.indexing import Gather
from ..ops.nn import normalize_axis
from ..ops.shape import Flatten, Reshape, Shape, Size, Squeeze, Unsqueeze
from ..ops.stream import Delay
from .registry import pulsifier
from .stream import Stream, Unavailable, Wire
from .translate import PulseContext

#: Slice ends from here on mean "to the end" (exporters write INT32_MAX or INT64_MAX)
_TO_THE_END = (1 << 31) - 1


def _shape_text(shape) -> str:
    return "(" + ",".join(map(str, shape)) + ")"


@pulsifier(Transpose)
def transpose(ctx: PulseContext, node: Node) -> list[Wire]:
    x = ctx.input(node, 0)
    rank = ctx.input_fact(node, 0).rank
    perm = node.op._perm(rank)
    return ctx.keep(node, [x], perm.index(x.stream.axis))


@pulsifier(Reshape, Flatten, Squeeze, Unsqueeze)
def reshape(ctx: PulseContext, node: Node) -> list[Wire]:
    """Any op whose output is its input reshaped: find where the streamed axis lands."""
    x = ctx.input(node, 0)
    stream = x.stream
    before, after = ctx.input_fact(node, 0).shape, ctx.output_fact(node).shape
    leading = volume(before[:stream.axis])
    landing = None
    for axis, dim in enumerate(after):
        if dim == before[stream.axis] and volume(after[:axis]) == leading:
            landing = axis
            break
    if landing is None:
        raise AnalysisError(f"reshaping {_shape_text(before)} to {_shape_text(after)} mixes the streamed axis "
                            f"{stream.axis} with other axes")
    target = []
    for axis, dim in enumerate(after):
        if axis == landing:
            target.append(stream.pulse)
        elif isinstance(dim, int):
            target.append(dim)
        elif ctx.symbol in dim_symbols([dim]) or -1 in target:
            raise AnalysisError(f"reshaping {_shape_text(before)} to {_shape_text(after)}: the other dims must not "
                                f"depend on the stream")
        else:
            target.append(-1)
    shape = ctx.const(f"{node.name}.shape", np.asarray(target, dtype=np.int64))
    outlet = ctx.wire_node(node.name, Reshape(allowzero=0 in target and -1 not in target), [x.outlet, shape])[0]
    return [Wire(outlet, stream.moved(landing))]


@pulsifier(Shape, Size)
def shape_of_stream(ctx: PulseContext, node: Node) -> list:
    """The chunk's shape: right on every axis but the streamed one, whose batch length a
    stream does not know. What is computed from the other axes only stays usable."""
    x = ctx.input(node, 0)
    outlet = ctx.wire_node(node.name, node.op, [x.outlet])[0]
    return [Unavailable(AnalysisError("the shape of a streamed tensor along its streamed axis is the stream's "
                                      "length, which a stream does not know"), outlet)]


def _int_items(value: np.ndarray) -> list:
    return [v if isinstance(v, TDim) else int(v) for v in np.asarray(value).ravel().tolist()]


@pulsifier(Slice)
def slice_(ctx: PulseContext, node: Node) -> list[Wire]:
    x = ctx.input(node, 0)
    stream = x.stream
    rank = ctx.input_fact(node, 0).rank
    starts = _int_items(ctx.known_value(node, 1, "Slice's starts"))
    ends = _int_items(ctx.known_value(node, 2, "Slice's ends"))
    axes = _int_items(ctx.known_value(node, 3, "Slice's axes")) if len(node.inputs) > 3 else list(range(len(starts)))
    steps = _int_items(ctx.known_value(node, 4, "Slice's steps")) if len(node.inputs) > 4 else [1] * len(starts)
    kept = []
    shift = 0
    reckoned = stream.dim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if isinstance(axis, TDim):
            raise AnalysisError("Slice's axes depend on the stream")
        axis = normalize_axis(axis, rank, "Slice axis")
        if axis != stream.axis:
            kept.append((start, end, axis, step))
            continue
        if step != 1:
            raise AnalysisError(f"Slice with step {step} along the streamed axis has no streaming translation")
        if isinstance(start, TDim) or start < 0:
            raise AnalysisError(f"Slice starting at {start} along the streamed axis counts from the stream's end, "
                                "which a stream does not know")
        shift = start
        if isinstance(end, TDim):
            reckoned = end - start
        else:
            reckoned = stream.dim - start + (end if end < 0 else 0) if end < 0 or end >= _TO_THE_END \
                else end - start
    for start, end, _axis, step in kept:
        if any(isinstance(v, TDim) for v in (start, end, step)):
            raise AnalysisError("Slice's bounds on a non-streamed axis depend on the stream")
    wire = x.outlet
    if kept:
        columns = list(zip(*kept))
        inputs = [x.outlet] + [ctx.const(f"{node.name}.{what}", np.asarray(values, dtype=np.int64))
                               for what, values in zip(("starts", "ends", "axes", "steps"), columns)]
        wire = ctx.wire_node(node.name, Slice(), inputs)[0]
    dim = ctx.output_dim(node, 0, stream.axis, reckoned)
    return [Wire(wire, Stream(stream.axis, dim, stream.delay + shift, stream.pulse))]


@pulsifier(Pad)
def pad(ctx: PulseContext, node: Node) -> list[Wire]:
    x = ctx.input(node, 0)
    stream = x.stream
    rank = ctx.input_fact(node, 0).rank
    for slot in range(1, len(node.inputs)):
        if ctx.input(node, slot).streamed:
            raise AnalysisError(f"Pad's input {slot} is streamed")
    pads = _int_items(ctx.known_value(node, 1, "Pad's pads"))
    axes = _int_items(ctx.known_value(node, 3, "Pad's axes")) if len(node.inputs) > 3 else list(range(rank))
    axes = [normalize_axis(a, rank, "Pad axis") for a in axes]
    count = len(axes)
    begins = dict(zip(axes, pads[:count]))
    ends = dict(zip(axes, pads[count:]))
    begin, end = begins.pop(stream.axis, 0), ends.pop(stream.axis, 0)
    value = 0.0
    if len(node.inputs) > 2:
        constant = ctx.input_fact(node, 2).konst
        if constant is None:
            raise AnalysisError("Pad's value is only known at run time")
        value = float(constant.reshape(-1)[0]) if constant.size else 0.0
    if (begin or end) and node.op.mode != "constant":
        raise AnalysisError(f"{node.op.mode} padding along the streamed axis has no streaming translation; "
                            "only constant padding streams")
    wire = x
    if any(begins.values()) or any(ends.values()):
        other = [begins.get(a, 0) for a in range(rank)] + [ends.get(a, 0) for a in range(rank)]
        inputs = [x.outlet, ctx.const(f"{node.name}.pads", np.asarray(other, dtype=np.int64))]
        inputs += [ctx.input(node, slot).outlet for slot in range(2, min(len(node.inputs), 3))]
        wire = Wire(ctx.wire_node(node.name, Pad(node.op.mode), inputs)[0], stream)
    delay = stream.delay
    cropped = max(-begin, 0)
    begin = max(begin, 0)
    if begin > 0 or end > 0:
        mask_begin = stream.delay if begin > 0 and stream.delay > 0 else None
        mask_end = stream.dim + stream.delay if end > 0 else None
        wire = ctx.masked(wire, mask_begin, mask_end, value, f"{node.name}.mask")
        extra = max(begin - stream.delay, 0)
        wire = ctx.delayed(wire, extra, f"{node.name}.delay", fill=value)
        delay = stream.delay + extra - begin
    dim = ctx.output_dim(node, 0, stream.axis, stream.dim + max(begin, 0) + end - cropped)
    return [Wire(wire.outlet, Stream(stream.axis, dim, delay + cropped, stream.pulse))]


@pulsifier(Concat)
def concat(ctx: PulseContext, node: Node) -> list[Wire]:
    wires = ctx.inputs(node)
    rank = ctx.input_fact(node, 0).rank
    axis = normalize_axis(node.op.axis, rank, "Concat axis")
    stream = next(w.stream for w in wires if w.streamed)
    for slot, wire in enumerate(wires):
        if wire.stream is None:
            where = "along the streamed axis" if axis == stream.axis else f"along axis {axis}"
            raise AnalysisError(f"Concat {where} joins input {slot}, which is not streamed, to a stream; "
                                "every input must be streamed, along another axis than the concatenation's")
        if wire.stream.axis != stream.axis:
            raise AnalysisError(f"Concat inputs are streamed along different axes ({stream.axis} and "
                                f"{wire.stream.axis})")
    if axis == stream.axis:
        raise AnalysisError("Concat of streams along the streamed axis has no streaming translation")
    return ctx.keep(node, wires, stream.axis)


@pulsifier(Split)
def split(ctx: PulseContext, node: Node) -> list[Wire]:
    wires = ctx.inputs(node)
    stream = wires[0].stream
    if stream is None or (len(wires) > 1 and wires[1].streamed):
        raise AnalysisError("Split's sizes are streamed")
    axis = normalize_axis(node.op.axis, ctx.input_fact(node, 0).rank, "Split axis")
    if axis == stream.axis:
        raise AnalysisError("Split along the streamed axis has no streaming translation")
    return ctx.keep(node, wires, stream.axis)


@pulsifier(Gather)
def gather(ctx: PulseContext, node: Node) -> list[Wire]:
    data, indices = ctx.inputs(node)
    axis = normalize_axis(node.op.axis, ctx.input_fact(node, 0).rank, "Gather axis")
    if indices.streamed and data.streamed:
        raise AnalysisError("Gather's data and indices are both streamed: a stream of tables has no "
                            "streaming translation")
    if indices.streamed:
        # a lookup (an embedding of streamed token ids): each index picks its row on its own
        return ctx.keep(node, [data, indices], axis + indices.stream.axis)
    stream = data.stream
    if axis == stream.axis:
        raise AnalysisError("Gather along the streamed axis has no streaming translation")
    moved = stream.axis if stream.axis < axis else stream.axis + ctx.input_fact(node, 1).rank - 1
    return ctx.keep(node, [data, indices], moved)


@pulsifier(Delay)
def delay(ctx: PulseContext, node: Node) -> list[Wire]:
    """A Delay of the batch model (a lag along time) streams as itself, on a masked input."""
    x = ctx.input(node, 0)
    op: Delay = node.op
    if op.axis != x.stream.axis:
        return ctx.keep(node, [x], x.stream.axis)
    if op.overlap:
        raise AnalysisError("a Delay with overlap in a batch model has no streaming translation")
    wire = ctx.masked(x, x.stream.delay if x.stream.delay > 0 and op.delay > 0 else None, None, op.fill,
                      f"{node.name}.mask")
    return ctx.keep(node, [wire], x.stream.axis, op=replace(op, shape=None, dtype=None))
