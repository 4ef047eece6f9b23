"""Compiled segments inside the interpreter: ``tractile.load(path, compile="auto")``.

Every maximal run of nodes the compiler can lower (concrete shapes, an emitter that accepts
them) is a candidate segment, built once per model and shapes (cached on disk by content).
With ``by="cost"`` (``compile="auto"``) a candidate becomes one :class:`CompiledSegment` node
only when it runs faster compiled than interpreted (measured once, cached with the build: see
:mod:`.autocost`); with ``by="all"`` every candidate does. The interpreter runs the rest. Each
interpreter state gets its own compiled context, so states stay independent and thread-safe.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..errors import TractileError
from ..fact import TypedFact
from ..graph import OutletId
from ..model import TypedModel
from ..ops.base import Op
from ..ops.io import Const, Source
from ..passes.driver import run_passes
from ..patch import ModelPatch
from .autocost import WHOLE_MODEL, Costs, MeasuredCosts, SegmentChoice, check_model, choose


@dataclass(frozen=True, eq=False)
class CompiledSegment(Op):
    """Runs nodes of the original model as one compiled C function (see :func:`compile_segments`)."""

    compiled: Any = field(repr=False)
    ops: tuple[str, ...] = ()
    flops: int | None = None
    is_stateless: ClassVar[bool] = False

    @property
    def name(self) -> str:  # type: ignore[override]
        return "Compiled"

    @property
    def nboutputs(self) -> int:
        return len(self.compiled.output_facts)

    def output_facts(self, inputs: list[TypedFact]) -> list[TypedFact]:
        return [TypedFact(f.dtype, f.shape, qparams=f.qparams) for f in self.compiled.output_facts]

    def eval(self, inputs):
        return self.state().eval(inputs)

    def state(self) -> SegmentState:
        return SegmentState(self.compiled.state())

    def attributes(self):
        counts: dict[str, int] = {}
        for op in self.ops:
            counts[op] = counts.get(op, 0) + 1
        return {"nodes": len(self.ops), "ops": ", ".join(f"{k}x{v}" if v > 1 else k for k, v in counts.items()),
                "arena": f"{self.compiled.report['arena_bytes']} B"}

    def cost(self, inputs):
        return {} if self.flops is None else {"flops": self.flops}


class SegmentState:
    """One interpreter state's context of a compiled segment."""

    def __init__(self, context):
        self.context = context
        self._checkers = context.model._checkers
        #: the context's quick call (inputs exactly of its facts, else None without running), for
        #: a plan made of this node alone, whose inputs and outputs are the segment's in order
        self.fast_run = context.fast_run

    def eval(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if self.fast_run is not None:
            outputs = self.fast_run(inputs)
            if outputs is not None:
                return outputs
        bindings: dict[str, int] = {}
        return self.context.call_checked([check(value, bindings) for check, value in zip(self._checkers, inputs)])

    def direct_call(self, facts: list[TypedFact]):
        """What a plan made of this node alone may call in its place: a function of the plan's
        checked inputs (``facts``, which must be this segment's) giving outputs the caller owns."""
        mine = self.context.model.input_facts
        if len(facts) != len(mine) or any(a.dtype != b.dtype or not a.is_concrete() or tuple(a.shape) != tuple(b.shape)
                                          for a, b in zip(facts, mine)):
            return None
        return self.context.call_checked

    def reset(self) -> None:
        self.context.reset()


class Support:
    """Which nodes the compiler can lower: a trial lowering of each node alone, cached."""

    def __init__(self) -> None:
        self._known: dict[tuple, bool] = {}
        self.declined: set[str] = set()

    def __call__(self, model: TypedModel, node) -> bool:
        from .layout import channels_last
        from .lower import lower
        from .registry import find_emitter
        from .target import HOST

        if node.name in self.declined:
            return False
        if isinstance(node.op, (Source, Const, CompiledSegment)) or find_emitter(node.op) is None:
            return False
        facts = [model.outlet_fact(o) for o in node.inputs]
        if not all(f.is_tensor and f.is_concrete() for f in facts + [o.fact for o in node.outputs]):
            return False
        key = (id(node.op), tuple(str(f) if f.konst is None else id(f.konst) for f in facts))
        if key not in self._known:
            trial = single_node_model(model, node)
            try:
                lower(channels_last(trial), "trial", HOST)  # as compile_model builds a segment: NCHW made NHWC
                self._known[key] = True
            except TractileError:
                self._known[key] = False
        return self._known[key]


def single_node_model(model: TypedModel, node) -> TypedModel:
    trial = TypedModel()
    wires = []
    for index, outlet in enumerate(node.inputs):
        fact = model.outlet_fact(outlet)
        if fact.konst is not None:
            wires.append(trial.wire_node(f"k{index}", Const(fact.konst, fact.qparams), [])[0])
        else:
            wires.append(trial.add_source(f"x{index}", TypedFact(fact.dtype, fact.shape, qparams=fact.qparams)))
    trial.outputs = list(trial.wire_node(node.name, node.op, wires))
    return trial


def grow_segment(model: TypedModel, start, supported: Support) -> list[int]:
    """The nodes, from ``start`` on in evaluation order, that can run as one compiled function:
    each reads only constants, wires computed before the segment, or the segment's own wires."""
    order = model.eval_order()
    members = {start.id}
    depends = {start.id}
    for node_id in order[order.index(start.id) + 1:]:
        node = model.nodes[node_id]
        producers = [o.node for o in node.inputs]
        if supported(model, node) and all(p in members or p not in depends for p in producers):
            members.add(node_id)
            depends.add(node_id)
        elif any(p in depends for p in producers):
            depends.add(node_id)
    return [n for n in order if n in members]


@dataclass
class Candidate:
    """A run of nodes as a model of its own, built: what a :class:`CompiledSegment` would run."""

    members: list[int]
    segment: TypedModel
    compiled: Any
    external: list[OutletId]
    used_outside: list[OutletId]


def build_candidate(model: TypedModel, members: list[int], index: int, cache_dir) -> Candidate:
    """``members`` as a model of their own (the wires they read from outside become its inputs,
    the wires read outside become its outputs), compiled for this machine."""
    from . import compile_model

    inside = set(members)
    segment = TypedModel()
    segment.symbols = model.symbols
    mapping: dict[OutletId, OutletId] = {}
    external: list[OutletId] = []
    for node_id in members:
        node = model.nodes[node_id]
        for outlet in node.inputs:
            if outlet in mapping:
                continue
            fact = model.outlet_fact(outlet)
            producer = model.nodes[outlet.node]
            if isinstance(producer.op, Const):
                mapping[outlet] = segment.wire_node(producer.name, Const(producer.op.value, producer.op.qparams), [])[0]
            else:
                external.append(outlet)
                mapping[outlet] = segment.add_source(model.outlet_label(outlet) or f"in{len(external)}",
                                                     TypedFact(fact.dtype, fact.shape, qparams=fact.qparams))
        produced = segment.wire_node(node.name, node.op, [mapping[o] for o in node.inputs])
        for slot, outlet in enumerate(produced):
            mapping[OutletId(node_id, slot)] = outlet
    used_outside = []
    for node_id in members:
        for slot, made in enumerate(model.nodes[node_id].outputs):
            wire = OutletId(node_id, slot)
            readers = [s for s in made.successors if s.node not in inside]
            if readers or wire in model.outputs:
                used_outside.append(wire)
    segment.outputs = [mapping[w] for w in used_outside]
    for wire in used_outside:
        segment.outlet_labels[mapping[wire]] = model.outlet_label(wire) or model.nodes[wire.node].name
    compiled = compile_model(segment, name=f"segment{index}", cache_dir=cache_dir, optimize=False)
    return Candidate(members, segment, compiled, external, used_outside)


def segment_patch(model: TypedModel, members: list[int], index: int, cache_dir,
                  candidate: Candidate | None = None) -> ModelPatch:
    """Replace ``members`` by one CompiledSegment node (built for this machine)."""
    built = candidate or build_candidate(model, members, index, cache_dir)
    patch = ModelPatch(model, f"compiled segment {index}")
    op = CompiledSegment(built.compiled, tuple(model.nodes[n].op.name for n in members), _flops(model, members))
    first = model.nodes[members[0]].name
    outputs = patch.wire_node(f"compiled.{first}", op, [patch.tap(o) for o in built.external])
    for wire, new in zip(built.used_outside, outputs):
        patch.shunt(wire, new)
    for node_id in members:
        patch.obliterate(node_id)
    return patch


def _flops(model: TypedModel, members: list[int]) -> int | None:
    total = 0
    for node_id in members:
        node = model.nodes[node_id]
        try:
            flops = node.op.cost([model.outlet_fact(o) for o in node.inputs]).get("flops")
        except Exception:
            flops = None
        if isinstance(flops, (int, np.integer)):
            total += int(flops)
    return total or None


def compile_segments(model: TypedModel, min_nodes: int = 1, cache_dir=None, by: str = "all",
                     costs: Costs | None = None, choices: list[SegmentChoice] | None = None,
                     check: bool = True) -> TypedModel:
    """``model`` with maximal runs of compilable nodes replaced by compiled segments: every run
    (``by="all"``), or those that run faster compiled than interpreted (``by="cost"``: timed by
    ``costs``, by default :class:`~tractile.compile.autocost.MeasuredCosts`, and cached beside
    each build). A run slower compiled is tried again, once, as the smaller runs of its nodes
    that are faster compiled one by one; then the model with its segments is timed against
    ``model`` (with ``check``), and ``model`` comes back if it is not faster. ``choices``, if
    given, collects a :class:`~tractile.compile.autocost.SegmentChoice` per run tried (and one
    for the whole model, named :data:`~tractile.compile.autocost.WHOLE_MODEL`)."""
    if by not in ("all", "cost"):
        raise TractileError(f"compile_segments: by must be 'all' or 'cost', got {by!r}")
    measured = costs or MeasuredCosts(cache_dir)
    supported = Support()
    refined: set[str] = set()
    counter = [0]

    def fuse(model: TypedModel, node):
        if not supported(model, node):
            return None
        members = grow_segment(model, node, supported)
        if len(members) < min_nodes:
            return None
        counter[0] += 1
        candidate = build_candidate(model, members, counter[0], cache_dir)
        names = [model.nodes[n].name for n in members]
        ops = tuple(model.nodes[n].op.name for n in members)
        if by == "all":
            if choices is not None:
                choices.append(SegmentChoice(node.name, len(ops), ", ".join(ops), None, None, True, "compile='all'"))
            return segment_patch(model, members, counter[0], cache_dir, candidate)
        refine = not refined.issuperset(names)
        choice = choose(candidate.segment, candidate.compiled, node.name, ops, measured, refine)
        if choices is not None:
            choices.append(choice)
        if choice.compiled:
            return segment_patch(model, members, counter[0], cache_dir, candidate)
        if set(choice.prefer) == set(names):  # each node faster alone, slower together: no smaller run
            supported.declined.update(names)
            return None
        supported.declined.update(name for name in names if name not in choice.prefer)
        refined.update(choice.prefer)
        # the driver visits the later nodes next: the run from this node must be tried now
        return fuse(model, node) if node.name in choice.prefer else None

    result = run_passes(model, [("compiled segments", fuse)])
    kept = sum(isinstance(n.op, CompiledSegment) for n in result.nodes)
    if by == "all" or not check or not kept:
        return result
    from .host import default_cache_dir

    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    faster, auto_s, interpreted_s, why = check_model(result, model, measured, root)
    if choices is not None:
        verdict = f"with its {kept} segment(s) faster" if faster else "interpreted is faster: no segment kept"
        choices.append(SegmentChoice(WHOLE_MODEL, sum(n.op.name not in ("Source", "Const") for n in model.nodes),
                                     f"{kept} segment(s)", auto_s, interpreted_s, faster, f"{why}: {verdict}"))
    return result if faster else model
