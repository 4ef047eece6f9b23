"""Pulsing: translate a batch model, node by node, into a model that runs chunk by chunk.

The translator walks the batch model in evaluation order. Nodes that read no streamed
wire are copied as they are (weights, shape computations on fixed dims). The others go
to the pulsifier registered for their op class (:mod:`tractile.pulse.registry`), which
wires their streaming form into the pulsed model through a :class:`PulseContext`.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..dim import Dim, TDim, dim_symbols, is_fresh
from ..errors import AnalysisError, TractileError, with_node_context
from ..fact import TypedFact
from ..graph import Node, OutletId
from ..model import TypedModel
from ..ops.io import Const, Source
from ..ops.stream import Delay, PulseMask
from .registry import find_pulsifier
from .stream import Stream, Unavailable, Wire


class PulseContext:
    """The translation in progress: the batch model, the pulsed model being built, and for
    every batch wire the pulsed wire standing for it (with its :class:`Stream`)."""

    def __init__(self, source: TypedModel, symbol: str, pulse: int):
        self.source = source
        self.symbol = symbol
        self.pulse = pulse
        self.target = TypedModel()
        self.target.symbols = source.symbols
        self.mapping: dict[OutletId, Wire | Unavailable] = {}

    # the batch model ------------------------------------------------------------------------
    def input_fact(self, node: Node, slot: int) -> TypedFact:
        return self.source.outlet_fact(node.inputs[slot])

    def output_fact(self, node: Node, slot: int = 0) -> TypedFact:
        return self.source.outlet_fact(OutletId(node.id, slot))

    def known_value(self, node: Node, slot: int, what: str) -> np.ndarray:
        """The value of input ``slot`` when analysis knows it (ints or TDims), else an error."""
        fact = self.input_fact(node, slot)
        value = fact.known_value()
        if value is None:
            raise AnalysisError(f"{what} is only known at run time, so the streamed axis cannot be followed")
        return value

    # pulsed wires ---------------------------------------------------------------------------
    def input(self, node: Node, slot: int) -> Wire:
        """The pulsed wire standing for input ``slot`` of ``node``."""
        found = self.mapping[node.inputs[slot]]
        if isinstance(found, Unavailable):
            raise found.error
        return found

    def inputs(self, node: Node) -> list[Wire]:
        return [self.input(node, slot) for slot in range(len(node.inputs))]

    def stream_of(self, node: Node, slot: int = 0) -> Stream:
        """The stream of input ``slot``, which must be streamed."""
        wire = self.input(node, slot)
        if wire.stream is None:
            raise AnalysisError(f"input {slot} is not streamed")
        return wire.stream

    def target_fact(self, wire: Wire) -> TypedFact:
        return self.target.outlet_fact(wire.outlet)

    # building --------------------------------------------------------------------------------
    def wire_node(self, name: str, op, outlets: Sequence[OutletId]) -> list[OutletId]:
        return self.target.wire_node(name, op, list(outlets))

    def const(self, name: str, value) -> OutletId:
        return self.target.add_const(name, np.asarray(value))

    def delayed(self, wire: Wire, frames: int, name: str, overlap: int = 0, fill: float = 0.0) -> Wire:
        """``wire`` delayed by ``frames`` with ``overlap`` frames of its past prepended."""
        if frames == 0 and overlap == 0:
            return wire
        stream = wire.stream
        fact = self.target_fact(wire)
        shape = fact.concrete_shape()
        op = Delay(stream.axis, frames, overlap, _fill_for(fill, fact), shape, str(fact.dtype.np) if shape else None)
        outlet = self.wire_node(name, op, [wire.outlet])[0]
        return Wire(outlet, stream.delayed(frames))

    def masked(self, wire: Wire, begin: int | None, end, value: float, name: str) -> Wire:
        """``wire`` with frames before position ``begin`` and from ``end`` on set to ``value``."""
        if begin is None and end is None:
            return wire
        op = PulseMask(wire.stream.axis, begin, end, _fill_for(value, self.target_fact(wire)))
        return Wire(self.wire_node(name, op, [wire.outlet])[0], wire.stream)

    def aligned(self, wires: Sequence[Wire], name: str) -> list[Wire]:
        """The streamed ``wires`` delayed to the latest of them (same axis and pulse required)."""
        streams = [w.stream for w in wires if w.stream is not None]
        pulses = {s.pulse for s in streams}
        if len(pulses) > 1:
            raise AnalysisError("inputs are streamed at different pulses (" +
                                ", ".join(str(s.pulse) for s in streams) + " frames per push): "
                                "their time axes do not match")
        latest = max(s.delay for s in streams)
        return [w if w.stream is None else self.delayed(w, latest - w.stream.delay, f"{name}.delay.{slot}")
                for slot, w in enumerate(wires)]

    def keep(self, node: Node, wires: Sequence[Wire], axes: int | Sequence[int], op=None) -> list[Wire]:
        """Wire ``op`` (the node's own by default) on aligned ``wires``; output ``i`` is streamed
        along ``axes[i]`` with the inputs' delay and pulse. Checks each output really carries
        the stream (its batch length is the input's)."""
        wires = self.aligned(wires, node.name)
        stream = next(w.stream for w in wires if w.stream is not None)
        outlets = self.wire_node(node.name, op if op is not None else node.op, [w.outlet for w in wires])
        axes = [axes] * len(outlets) if isinstance(axes, int) else list(axes)
        results = []
        for slot, (outlet, axis) in enumerate(zip(outlets, axes)):
            dim = self.output_fact(node, slot).shape[axis]
            if dim != stream.dim and not is_fresh(dim):
                raise AnalysisError(f"output {slot} has {dim} frames along axis {axis} where the stream has "
                                    f"{stream.dim}: the op does not keep the streamed axis")
            results.append(Wire(outlet, Stream(axis, stream.dim, stream.delay, stream.pulse)))
        return results

    def output_dim(self, node: Node, slot: int, axis: int, fallback: Dim) -> Dim:
        """The batch length of output ``slot`` along ``axis``; ``fallback`` when analysis only
        knows it as a run-time symbol (then the stream's own reckoning is the better one)."""
        dim = self.output_fact(node, slot).shape[axis]
        return fallback if is_fresh(dim) else dim


def _fill_for(value: float, fact: TypedFact):
    """``value`` as an item of the wire's datum type (ints clamp infinities to the range)."""
    dtype = fact.dtype.np
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if np.isinf(value):
            return int(info.min if value < 0 else info.max)
        return int(value)
    if dtype.kind == "b":
        return bool(value)
    return float(value)


def _streamed_axis(fact: TypedFact, symbol: str, name: str) -> int | None:
    axes = [axis for axis, dim in enumerate(fact.shape) if symbol in dim_symbols([dim])]
    if not axes:
        return None
    if len(axes) > 1:
        raise AnalysisError(f'input "{name}" ({fact}) has {symbol} on several axes: {axes}; only one axis can stream')
    axis = axes[0]
    if fact.shape[axis] != TDim.symbol(symbol):
        raise AnalysisError(f'input "{name}" ({fact}): axis {axis} is {fact.shape[axis]}; a streamed axis must be '
                            f"the symbol {symbol} itself")
    return axis


def _depends_on_stream(fact: TypedFact, symbol: str) -> bool:
    """Whether the batch value of a (non-streamed) wire may involve the stream's length."""
    if fact.konst is not None:
        return False
    if fact.sym_value is None:
        return True
    return any(isinstance(v, TDim) and symbol in v.symbols() for v in fact.sym_value.flat)


def _translate_node(ctx: PulseContext, node: Node) -> None:
    wires = [ctx.mapping[o] for o in node.inputs]
    outputs = [OutletId(node.id, slot) for slot in range(len(node.outputs))]
    streamed = any(isinstance(w, Wire) and w.streamed for w in wires)
    if not streamed:
        tainted = [w for w in wires if isinstance(w, Unavailable)]
        lost = next((w for w in tainted if w.outlet is None), None)
        if lost is not None:
            for outlet in outputs:
                ctx.mapping[outlet] = lost
            return
        new = ctx.wire_node(node.name, node.op, [w.outlet for w in wires])
        for outlet, outlet_new in zip(outputs, new):
            if tainted and _depends_on_stream(ctx.source.outlet_fact(outlet), ctx.symbol):
                ctx.mapping[outlet] = Unavailable(tainted[0].error, outlet_new)
            else:
                ctx.mapping[outlet] = Wire(outlet_new, None)
        return
    function = find_pulsifier(node.op)
    try:
        if function is None:
            stream = next(w.stream for w in wires if isinstance(w, Wire) and w.streamed)
            raise AnalysisError(f"{node.op.name} has no streaming translation (its input is streamed along axis "
                                f"{stream.axis})")
        results = function(ctx, node)
    except AnalysisError as error:
        raise with_node_context(error, node) from None
    if len(results) != len(outputs):
        raise TractileError(f"the pulsifier of {node.op.name} gave {len(results)} wires for {len(outputs)} outputs")
    for outlet, result in zip(outputs, results):
        if isinstance(result, Unavailable) and result.error.node is None:
            result = Unavailable(with_node_context(result.error, node), result.outlet)
        ctx.mapping[outlet] = result


def pulse_model(model: TypedModel, symbol: str, pulse: int, outputs: Sequence[str | int] | None = None):
    """Translate ``model`` to stream along the axis whose length is ``symbol``, ``pulse`` frames per push.

    ``outputs`` (names or positions) keeps only those outputs, and what only the others need
    is dropped: e.g. an LSTM's final states, which describe the end of the sequence.
    Returns a :class:`~tractile.pulse.model.PulsedModel`. Raises AnalysisError naming the
    node and the reason when a node cannot stream.
    """
    from .model import PulsedModel

    if isinstance(symbol, TDim):
        symbol = str(symbol)
    if not isinstance(symbol, str) or not symbol:
        raise TractileError(f"the stream symbol must be a symbol name such as 'T', got {symbol!r}")
    if isinstance(pulse, bool) or not isinstance(pulse, (int, np.integer)) or pulse < 1:
        raise TractileError(f"the pulse must be a positive number of frames, got {pulse!r}")
    pulse = int(pulse)
    model = model.into_typed() if not isinstance(model, TypedModel) else model
    if outputs is not None:
        model = keep_outputs(model, outputs)
    ctx = PulseContext(model, symbol, pulse)
    input_streams: list[Stream | None] = []
    for outlet in model.inputs:
        fact = model.outlet_fact(outlet)
        name = model.nodes[outlet.node].name
        axis = _streamed_axis(fact, symbol, name)
        if axis is None:
            ctx.mapping[outlet] = Wire(ctx.target.add_source(name, fact), None)
            input_streams.append(None)
            continue
        shape = list(fact.shape)
        shape[axis] = pulse
        stream = Stream(axis, fact.shape[axis], 0, pulse)
        ctx.mapping[outlet] = Wire(ctx.target.add_source(name, fact.with_shape(shape)), stream)
        input_streams.append(stream)
    if all(s is None for s in input_streams):
        described = ", ".join(f'"{n}" ({f})' for n, f in zip(model.input_names(), model.input_facts))
        raise AnalysisError(f"no model input has the stream symbol {symbol} in its shape (inputs: {described}); "
                            f"load the model with it, e.g. inputs={{'x': '1,40,{symbol},f32'}}")
    for node_id in model.eval_order():
        node = model.nodes[node_id]
        if isinstance(node.op, Source):
            continue
        if isinstance(node.op, Const):
            ctx.mapping[OutletId(node.id, 0)] = Wire(ctx.wire_node(node.name, node.op, [])[0], None)
            continue
        _translate_node(ctx, node)
    output_wires = []
    streaming = [name for outlet, name in zip(model.outputs, model.output_names())
                 if not isinstance(ctx.mapping[outlet], Unavailable) and ctx.mapping[outlet].stream is not None]
    for outlet, label in zip(model.outputs, model.output_names()):
        wire = ctx.mapping[outlet]
        if isinstance(wire, Unavailable):
            others = [name for name in streaming if name != label]
            if others:
                raise AnalysisError(f'output "{label}": {wire.error}; keep the other outputs with '
                                    f"pulse(..., outputs={others!r}) (--outputs {','.join(others)} on the "
                                    "command line)") from None
            raise wire.error
        if wire.stream is None:
            raise AnalysisError(f'output "{label}" does not depend on the streamed input: there is nothing to stream')
        output_wires.append(wire)
    target = ctx.target
    target.outputs = [w.outlet for w in output_wires]
    for outlet, label in zip(target.outputs, model.output_names()):
        target.outlet_labels[outlet] = label
    target.properties = dict(model.properties)
    return PulsedModel(target.compact(), symbol, pulse, input_streams, [w.stream for w in output_wires])


def keep_outputs(model: TypedModel, outputs: Sequence[str | int]) -> TypedModel:
    """A copy of ``model`` whose outputs are ``outputs`` (names or positions), without the nodes
    only the others needed."""
    from ..patch import compact

    if isinstance(outputs, (str, int)):
        outputs = [outputs]
    names = model.output_names()
    if not outputs:
        raise TractileError(f"outputs=[] keeps nothing to stream; the model's outputs are {', '.join(names)}")
    chosen = []
    for which in outputs:
        if isinstance(which, str) and which not in names:
            raise TractileError(f"no output named {which!r} to keep; the model's outputs are {', '.join(names)}")
        chosen.append(model._port(which, True))
    selected = compact(model)
    selected.outputs = [selected.outputs[i] for i in chosen]
    return compact(selected)

