"""Streaming of sliding-window ops along time: Conv, MaxPool, AveragePool, LpPool (NCHW, time on
a spatial axis; NHWC, time on H or W: TFLite's convolutions and pools, quantized ones included).

Along the streamed axis a window op needs, for each push, the new frames plus
``extent - stride`` frames of the past: a :class:`~tractile.ops.stream.Delay` keeps them
(and delays the input further when the output frames must line up with the stride).
Padding along time leaves the op: left padding is the Delay buffer's initial fill (and
a :class:`~tractile.ops.stream.PulseMask` when the input is late, so its first frames are
not zeros), right padding adds delay and masks the frames after the stream's end. A quantized
convolution's padding is its input's zero point (a real zero), a max pool's the lowest value.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import AnalysisError
from ..fact import TypedFact
from ..graph import Node
from ..ops.conv import Conv
from ..ops.conv_nhwc import kernel_dims
from ..ops.pool import AveragePool, GlobalPool, LpPool, MaxPool
from ..ops.stream import EdgeAveragePool
from ..ops.window import Window
from .registry import pulsifier
from .stream import Stream, Wire
from .translate import PulseContext


@dataclass(frozen=True)
class TimeGeometry:
    """The window along the streamed axis: padding, extent, stride, and what the pulsed op
    needs to know to put its output frames in place."""

    begin: int
    end: int
    kernel: int
    dilation: int
    stride: int
    ceil_extra: bool

    @property
    def extent(self) -> int:
        return (self.kernel - 1) * self.dilation + 1


def _time_geometry(window: Window, geo: int) -> TimeGeometry:
    stride, extent = window.strides[geo], window.extent(geo)
    if window.auto_pad == "VALID":
        begin, end = 0, 0
    elif window.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if stride != 1:
            raise AnalysisError(f"{window.auto_pad} padding with stride {stride} along the streamed axis depends on "
                                "the stream's length; use explicit pads")
        small, large = (extent - 1) // 2, extent - 1 - (extent - 1) // 2
        begin, end = (small, large) if window.auto_pad == "SAME_UPPER" else (large, small)
    else:
        begin, end = window.explicit_pads(geo)
    return TimeGeometry(begin, end, window.kernel[geo], window.dilations[geo], stride,
                        window.ceil_mode and stride > 1)


def _window_without_time_padding(window: Window, geo: int, spatial: tuple) -> Window:
    """The window with explicit pads: none along time, the batch model's on the other axes."""
    probe = tuple(window.extent(geo) + window.strides[geo] if axis == geo else dim
                  for axis, dim in enumerate(spatial))
    begins, ends, _ = window.concrete_pads(probe)
    begins[geo] = ends[geo] = 0
    pads = tuple(begins + ends) if any(begins) or any(ends) else None
    return Window(window.kernel, window.strides, window.dilations, pads, "NOTSET", False)


def windowed_input(ctx: PulseContext, node: Node, x: Wire, geometry: TimeGeometry,
                   fill: float) -> tuple[Wire, int]:
    """The input of a window op, buffered so each push holds the frames its outputs need.

    Returns the buffered wire and the delay of the op's output.
    """
    stream = x.stream
    stride = geometry.stride
    if stream.pulse % stride:
        factor = ctx.pulse // stream.pulse if ctx.pulse % stream.pulse == 0 else 1
        raise AnalysisError(f"stride {stride} along the streamed axis needs a pulse that is a multiple of {stride} "
                            f"here, but this input gets {stream.pulse} frames per push: make the pulse a multiple "
                            f"of {factor * stride}")
    overlap = max(geometry.extent - stride, 0)
    lead = stream.delay - geometry.begin + overlap
    extra = 0 if lead >= 0 else -lead
    extra += (-(lead + extra)) % stride
    delay_out = (lead + extra) // stride
    right_padded = geometry.end > 0 or geometry.ceil_extra
    begin = stream.delay if geometry.begin > 0 and stream.delay > 0 else None
    end = stream.dim + stream.delay if right_padded else None
    wire = ctx.masked(x, begin, end, fill, f"{node.name}.mask")
    wire = ctx.delayed(wire, extra, f"{node.name}.delay", overlap=overlap, fill=fill)
    return wire, delay_out


def _check_layout(node: Node, stream: Stream, rank: int) -> int | None:
    """The spatial index of the streamed axis, or None when it is the batch axis."""
    if stream.axis == 0:
        return None
    nhwc = getattr(node.op, "data_format", "NCHW") == "NHWC"
    channels = rank - 1 if nhwc else 1
    if stream.axis == channels:
        raise AnalysisError(f"{node.op.name} mixes the channels of axis {channels}, the streamed axis; it can stream "
                            "along the batch axis or a spatial axis")
    return stream.axis - 1 if nhwc else stream.axis - 2


def _spatial(ctx: PulseContext, node: Node) -> tuple:
    shape = ctx.input_fact(node, 0).shape
    return tuple(shape[1:-1]) if getattr(node.op, "data_format", "NCHW") == "NHWC" else tuple(shape[2:])


def _weights_not_streamed(ctx: PulseContext, node: Node) -> list[Wire]:
    wires = ctx.inputs(node)
    for slot, wire in enumerate(wires[1:], start=1):
        if wire.streamed:
            raise AnalysisError(f"input {slot} (weights or bias) is streamed; only the data input can stream")
    return wires


def _output(ctx: PulseContext, node: Node, outlet, stream: Stream, delay: int, geometry: TimeGeometry) -> Wire:
    span = stream.dim + geometry.begin + geometry.end - geometry.extent
    reckoned = (span + geometry.stride - 1 if geometry.ceil_extra else span) // geometry.stride + 1
    dim = ctx.output_dim(node, 0, stream.axis, reckoned)
    return Wire(outlet, Stream(stream.axis, dim, delay, stream.pulse // geometry.stride))


@pulsifier(Conv)
def conv(ctx: PulseContext, node: Node) -> list[Wire]:
    wires = _weights_not_streamed(ctx, node)
    x = wires[0]
    geo = _check_layout(node, x.stream, ctx.input_fact(node, 0).rank)
    if geo is None:
        return ctx.keep(node, wires, 0)
    op: Conv = node.op
    if op.is_hybrid([ctx.input_fact(node, i) for i in range(len(node.inputs))]):
        raise AnalysisError(f"{node.name}: a hybrid convolution quantizes each whole image, so it cannot stream")
    w_shape = ctx.input_fact(node, 1).shape
    kernel = kernel_dims(w_shape, op.kernel_format)[2:] if op.data_format == "NHWC" else w_shape[2:]
    window = op.window.for_kernel(kernel)
    geometry = _time_geometry(window, geo)
    x_q = ctx.input_fact(node, 0).qparams
    fill = float(x_q.zero_point[0]) if op.quant is not None and x_q is not None else 0.0
    buffered, delay = windowed_input(ctx, node, x, geometry, fill)
    op = replace(op, window=_window_without_time_padding(window, geo, _spatial(ctx, node)))
    outlet = ctx.wire_node(node.name, op, [buffered.outlet] + [w.outlet for w in wires[1:]])[0]
    return [_output(ctx, node, outlet, x.stream, delay, geometry)]


def _lowest(fact: TypedFact) -> float:
    dtype = fact.dtype.np
    return float(np.iinfo(dtype).min) if dtype.kind in "iu" else -np.inf


@pulsifier(MaxPool, LpPool)
def pool(ctx: PulseContext, node: Node) -> list[Wire]:
    x = ctx.input(node, 0)
    geo = _check_layout(node, x.stream, ctx.input_fact(node, 0).rank)
    if geo is None:
        return ctx.keep(node, [x], 0)
    window = node.op.window
    geometry = _time_geometry(window, geo)
    if getattr(node.op, "mean", False) and (geometry.begin or geometry.end or geometry.ceil_extra):
        raise AnalysisError("an averaged LpPool (TFLite's L2 pooling) padded along the streamed axis has no "
                            "streaming translation")
    fill = _lowest(ctx.input_fact(node, 0)) if isinstance(node.op, MaxPool) else 0.0
    buffered, delay = windowed_input(ctx, node, x, geometry, fill)
    op = replace(node.op, window=_window_without_time_padding(window, geo, _spatial(ctx, node)))
    outlet = ctx.wire_node(node.name, op, [buffered.outlet])[0]
    return [_output(ctx, node, outlet, x.stream, delay, geometry)]


@pulsifier(AveragePool)
def average_pool(ctx: PulseContext, node: Node) -> list[Wire]:
    x = ctx.input(node, 0)
    geo = _check_layout(node, x.stream, ctx.input_fact(node, 0).rank)
    if geo is None:
        return ctx.keep(node, [x], 0)
    op: AveragePool = node.op
    window = op.window
    geometry = _time_geometry(window, geo)
    spatial = _spatial(ctx, node)
    if op.count_include_pad and window.ceil_mode and any(
            s > 1 for axis, s in enumerate(window.strides) if axis != geo):
        raise AnalysisError("AveragePool with count_include_pad and ceil_mode on other axes than the streamed one "
                            "has no streaming translation")
    buffered, delay = windowed_input(ctx, node, x, geometry, 0.0)
    inner = replace(op, window=_window_without_time_padding(window, geo, spatial))
    uneven = (geometry.ceil_extra if op.count_include_pad
              else geometry.begin > 0 or geometry.end > 0 or geometry.ceil_extra)
    if uneven and (op.quant is not None or op.activation is not None):
        raise AnalysisError("a quantized AveragePool (or one with a fused activation) padded along the streamed "
                            "axis has no streaming translation")
    if uneven:
        counted_from = 0 if op.count_include_pad else geometry.begin
        counted_after = geometry.end if op.count_include_pad else 0
        inner = EdgeAveragePool(inner, x.stream.axis, geometry.kernel, geometry.dilation, geometry.stride,
                                counted_from, geometry.begin + counted_after, x.stream.dim, delay)
    outlet = ctx.wire_node(node.name, inner, [buffered.outlet])[0]
    return [_output(ctx, node, outlet, x.stream, delay, geometry)]


@pulsifier(GlobalPool)
def global_pool(ctx: PulseContext, node: Node) -> list[Wire]:
    x = ctx.input(node, 0)
    if x.stream.axis == 0:
        return ctx.keep(node, [x], 0)
    raise AnalysisError(f"global {node.op.mode} pooling over axis {x.stream.axis}, the streamed axis, needs the "
                        "whole stream")
