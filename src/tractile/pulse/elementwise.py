"""Streaming of element-wise ops: every op that declares ``elementwise`` (unary math,
activations, broadcasting binary ops, casts, Where...).

They work frame by frame, so they stream as they are: streamed inputs are realigned to
the latest of their delays, and inputs that are not streamed (weights, constants) must
broadcast along the streamed axis (size 1 there, or not reaching it). An op that neither
declares itself element-wise nor has a pulsifier of its own is refused, whatever its class.
"""
from __future__ import annotations

from ..errors import AnalysisError
from ..graph import Node
from ..ops.base import Op
from .registry import pulsifier
from .stream import Wire
from .translate import PulseContext


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


@pulsifier(Op)
def pulsify_elementwise(ctx: PulseContext, node: Node) -> list[Wire]:
    """Keep an op declared element-wise: realign its streamed inputs, check the others broadcast."""
    op = node.op
    wires = ctx.inputs(node)
    if not op.elementwise:
        stream = next(w.stream for w in wires if isinstance(w, Wire) and w.streamed)
        raise AnalysisError(f"{op.name} has no streaming translation (its input is streamed along axis "
                            f"{stream.axis}): it is not declared element-wise (Op.elementwise) and no "
                            "pulsifier is registered for it")
    return ctx.keep(node, wires, broadcast_axis(ctx, node, wires))
