"""Streaming of element-wise ops: unary math, activations, broadcasting binary ops, casts.

They work frame by frame, so they stream as they are: streamed inputs are realigned to
the latest of their delays, and inputs that are not streamed (weights, constants) must
broadcast along the streamed axis (size 1 there, or not reaching it).
"""
from __future__ import annotations

import dataclasses

from ..errors import AnalysisError
from ..graph import Node
from ..ops.binary import BinaryOp
from ..ops.cast import Cast, Dropout, Identity
from ..ops.logic import Where
from ..ops.unary import UnaryOp
from .registry import pulsifier
from .stream import Wire
from .translate import PulseContext

#: attribute names that mean an op works along axes rather than element by element
_AXIS_FIELDS = ("axis", "axes")


def broadcast_axis(ctx: PulseContext, node: Node, wires: list[Wire]) -> int:
    """The output axis the streamed inputs map to under NumPy broadcasting (checks the others)."""
    out_rank = ctx.output_fact(node).rank
    axes = set()
    for slot, wire in enumerate(wires):
        if wire.stream is not None:
            axes.add(wire.stream.axis + out_rank - ctx.input_fact(node, slot).rank)
    if len(axes) != 1:
        raise AnalysisError(f"inputs are streamed along different axes of the output ({sorted(axes)})")
    axis = axes.pop()
    for slot, wire in enumerate(wires):
        if wire.stream is not None:
            continue
        fact = ctx.input_fact(node, slot)
        position = axis - (out_rank - fact.rank)
        if position >= 0 and fact.shape[position] != 1:
            raise AnalysisError(f"input {slot} ({fact}) is not streamed but has {fact.shape[position]} entries "
                                f"along the streamed axis; only size 1 broadcasts over a stream")
    return axis


def pulsify_elementwise(ctx: PulseContext, node: Node) -> list[Wire]:
    """Keep a frame-wise op: realign its streamed inputs, check the others broadcast."""
    op = node.op
    if dataclasses.is_dataclass(op) and any(f.name in _AXIS_FIELDS for f in dataclasses.fields(op)):
        raise AnalysisError(f"{op.name} works along an axis and has no streaming translation")
    wires = ctx.inputs(node)
    return ctx.keep(node, wires, broadcast_axis(ctx, node, wires))


pulsifier(UnaryOp, BinaryOp, Where, Cast, Identity, Dropout)(pulsify_elementwise)
