"""Rewrites as patches: a small typed model wired against taps of the target model.

A pass never edits a graph by hand. It builds a :class:`ModelPatch`::

    patch = ModelPatch(model, "fold-bn")
    x = patch.tap(node.inputs[0])
    y = patch.wire_node(node.name, NewOp(...), [x])
    patch.shunt(OutletId(node.id, 0), y[0])

and the pass driver applies it, then checks the graph's consistency.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import TractileError
from .graph import InletId, OutletId


class ModelPatch:
    """Nodes to add to a typed model, outlets to re-route, nodes to drop."""

    def __init__(self, model, label: str = ""):
        from .model import TypedModel

        self.target = model
        self.label = label
        self.graph = TypedModel()
        self.graph.symbols = model.symbols
        self.incoming: dict[OutletId, OutletId] = {}
        self._taps: dict[OutletId, OutletId] = {}
        self.shunts: list[tuple[OutletId, OutletId]] = []
        self.obliterated: set[int] = set()

    def tap(self, outlet: OutletId) -> OutletId:
        """A patch-local wire standing for ``outlet`` of the target model."""
        found = self._taps.get(outlet)
        if found is None:
            fact = self.target.outlet_fact(outlet)
            node = self.target.nodes[outlet.node]
            found = self.graph._wire(f"tap.{node.name}.{outlet.slot}", _Tap(), [], [fact])[0]
            self.incoming[found] = outlet
            self._taps[outlet] = found
        return found

    def wire_node(self, name: str, op, inputs: Sequence[OutletId]) -> list[OutletId]:
        """Wire a new node (facts computed by its ``output_facts``)."""
        return self.graph.wire_node(name, op, inputs)

    def add_const(self, name: str, value, qparams=None) -> OutletId:
        """A constant wire; ``qparams`` keeps a quantized value's scale and zero point."""
        if qparams is None:
            return self.graph.add_const(name, np.asarray(value))
        from .ops.io import Const

        return self.graph.wire_node(name, Const(np.asarray(value), qparams), [])[0]

    def outlet_fact(self, outlet: OutletId):
        return self.graph.outlet_fact(outlet)

    def shunt(self, outlet: OutletId, by: OutletId) -> None:
        """Make every consumer of target ``outlet`` read patch wire ``by`` instead."""
        old = self.target.outlet_fact(outlet)
        new = self.graph.outlet_fact(by)
        if old.dtype != new.dtype or old.shape != new.shape:
            raise TractileError(
                f"patch {self.label!r}: cannot shunt {outlet} ({old}) by a wire of fact {new}")
        self.shunts.append((outlet, by))

    def obliterate(self, node_id: int) -> None:
        self.obliterated.add(node_id)

    # convenience constructors ------------------------------------------------------------
    @staticmethod
    def replace_single_op(model, node, inputs: Sequence[OutletId], op, label: str = "") -> ModelPatch:
        """Replace ``node`` by ``op`` applied to target wires ``inputs``."""
        patch = ModelPatch(model, label or f"replace {node.name}")
        taps = [patch.tap(o) for o in inputs]
        outputs = patch.wire_node(node.name, op, taps)
        for slot, outlet in enumerate(outputs):
            patch.shunt(OutletId(node.id, slot), outlet)
        patch.obliterate(node.id)
        return patch

    @staticmethod
    def shunt_one_op(model, node, label: str = "") -> ModelPatch:
        """Remove a node whose single output equals its first input."""
        patch = ModelPatch(model, label or f"remove {node.name}")
        patch.shunt(OutletId(node.id, 0), patch.tap(node.inputs[0]))
        patch.obliterate(node.id)
        return patch

    @staticmethod
    def replace_by_const(model, node, values: Sequence[np.ndarray], label: str = "") -> ModelPatch:
        patch = ModelPatch(model, label or f"fold {node.name}")
        for slot, value in enumerate(values):
            name = node.name if len(values) == 1 else f"{node.name}.{slot}"
            patch.shunt(OutletId(node.id, slot), patch.add_const(name, value, node.outputs[slot].fact.qparams))
        patch.obliterate(node.id)
        return patch

    # application ----------------------------------------------------------------------------
    def apply(self, model=None) -> set[int]:
        """Apply to the target model, in place; returns the ids of the nodes whose wiring changed."""
        from .ops.io import Source

        model = self.target if model is None else model
        touched: set[int] = set(self.obliterated)
        for node_id in self.obliterated:
            touched.update(o.node for o in model.nodes[node_id].inputs)
            node = model.nodes[node_id]
            for slot, outlet in enumerate(node.inputs):
                model.outlet_successors(outlet).remove(InletId(node_id, slot))
            node.inputs = []
            node.op = _Obliterated(node.op.name)
            model._names.discard(node.name)
        mapping = dict(self.incoming)
        for node in self.graph.nodes:
            if isinstance(node.op, _Tap):
                continue
            if isinstance(node.op, Source):
                raise TractileError(f"patch {self.label!r} cannot add model inputs")
            inputs = [mapping[o] for o in node.inputs]
            facts = [o.fact for o in node.outputs]
            new_id = model.add_node(node.name, node.op, facts)
            touched.add(new_id)
            for slot, outlet in enumerate(inputs):
                model.add_edge(outlet, InletId(new_id, slot))
                touched.add(outlet.node)
            for slot in range(len(facts)):
                mapping[OutletId(node.id, slot)] = OutletId(new_id, slot)
        for old, by in self.shunts:
            new = mapping[by]
            if new == old:
                continue
            touched.update((old.node, new.node))
            for inlet in list(model.outlet_successors(old)):
                model.add_edge(new, inlet)
                touched.add(inlet.node)
            carried = model.outlet_labels.get(old)  # the value keeps its source name on its new wire
            if carried is not None and new not in model.outlet_labels and new not in model.outputs:
                model.outlet_labels[new] = carried
            for index, outlet in enumerate(model.outputs):
                if outlet == old:
                    model.outputs[index] = new
                    label = model.outlet_labels.pop(old, None) or model.outlet_label(old)
                    model.outlet_labels[new] = label
        if hasattr(model, "_plan_cache"):
            model._plan_cache = None
        model.changes += 1
        return touched


class _Tap:
    name = "Tap"
    nboutputs = 1


class _Obliterated:
    """Left in place of a removed node until the graph is compacted."""

    nboutputs = 0
    is_stateless = True

    def __init__(self, was: str):
        self.name = f"Obliterated({was})"


def compact(model):
    """Copy of ``model`` holding only the nodes its outputs (and inputs) need, in eval order."""
    from .model import TypedModel

    fresh = TypedModel()
    fresh.symbols = model.symbols
    fresh.properties = dict(model.properties)
    mapping: dict[OutletId, OutletId] = {}
    for outlet in model.inputs:
        node = model.nodes[outlet.node]
        mapping[outlet] = fresh.add_source(node.name, model.outlet_fact(outlet))
    for node_id in model.eval_order():
        node = model.nodes[node_id]
        if OutletId(node_id, 0) in mapping and OutletId(node_id, 0) in model.inputs:
            continue
        if isinstance(node.op, _Obliterated):
            raise TractileError(f"obliterated node {node.name} is still needed by the outputs")
        facts = [o.fact for o in node.outputs]
        new_id = fresh.add_node(node.name, node.op, facts)
        for slot, outlet in enumerate(node.inputs):
            fresh.add_edge(mapping[outlet], InletId(new_id, slot))
        for slot in range(len(facts)):
            mapping[OutletId(node_id, slot)] = OutletId(new_id, slot)
    fresh.outputs = [mapping[o] for o in model.outputs]
    for old, new in mapping.items():
        label = model.outlet_labels.get(old)
        if label is not None:
            fresh.outlet_labels.setdefault(new, label)
    for old, new in zip(model.outputs, fresh.outputs):
        fresh.outlet_labels[new] = model.outlet_label(old)
    return fresh
