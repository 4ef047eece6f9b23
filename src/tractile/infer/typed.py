"""Conversion of an analysed InferenceModel into a TypedModel."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import AnalysisError, RunTimeFactsError, TractileError, node_label, with_node_context
from ..fact import InferenceFact
from ..graph import OutletId
from ..ops.io import Const, Source

if TYPE_CHECKING:
    from ..model import TypedModel


def _describe_missing(fact: InferenceFact) -> str:
    if fact.dtype is None and not fact.shape.is_complete():
        return "its datum type and shape are unknown"
    if fact.dtype is None:
        return "its datum type is unknown"
    return f"its shape is not fully known ({fact})"


def into_typed(model, input_facts=None) -> TypedModel:
    """Build a TypedModel from an analysed model.

    Wires whose value analysis found (and that are not model inputs) become
    :class:`Const` nodes; every other op is wired with its ``wire_typed`` hook, which
    recomputes facts with the typed ``output_facts``.
    """
    from ..model import TypedModel

    typed = TypedModel()
    typed.symbols = model.symbols
    typed.properties = dict(model.properties)
    mapping: dict[OutletId, OutletId] = {}
    for index, outlet in enumerate(model.inputs):
        node = model.nodes[outlet.node]
        fact = model.outlet_fact(outlet)
        given = input_facts[index] if input_facts is not None else None
        if given is not None and given.is_tensor and not given.has_rank:
            mapping[outlet] = typed.add_source(node.name, given)
            continue
        if not fact.is_complete():
            raise RunTimeFactsError(
                f'input "{node.name}": {_describe_missing(fact)}; give it when loading, e.g. '
                f'inputs={{"{node.name}": "N,3,224,224,f32"}}'
            )
        mapping[outlet] = typed.add_source(node.name, fact.to_typed())
    for node_id in model.eval_order():
        node = model.nodes[node_id]
        if isinstance(node.op, Source):
            if OutletId(node_id, 0) not in mapping:
                raise TractileError(f"{node_label(node)} is a Source but not a model input")
            continue
        facts = [o.fact for o in node.outputs]
        if not isinstance(node.op, Const) and _all_constant(node.op, facts):
            for slot, fact in enumerate(facts):
                name = node.name if len(facts) == 1 else f"{node.name}.{slot}"
                mapping[OutletId(node_id, slot)] = typed.add_const(name, fact.to_typed().konst)
            continue
        inputs = [mapping[o] for o in node.inputs]
        try:
            outputs = node.op.wire_typed(typed, node.name, inputs)
        except AnalysisError as error:
            raise with_node_context(error, node, [typed.outlet_fact(o) for o in inputs]) from None
        for slot, outlet in enumerate(outputs):
            mapping[OutletId(node_id, slot)] = outlet
    typed.outputs = [mapping[o] for o in model.outputs]
    for old, new in mapping.items():  # wires keep the names the source file gave their values
        label = model.outlet_labels.get(old)
        if label is not None:
            typed.outlet_labels.setdefault(new, label)
    for old, new in zip(model.outputs, typed.outputs):
        typed.outlet_labels[new] = model.outlet_label(old)
    return typed


def _all_constant(op, facts: list[InferenceFact]) -> bool:
    if not op.is_stateless or op.is_random or not op.folds_when_typing or not facts:
        return False
    for fact in facts:
        if fact.value is None or not fact.is_complete():
            return False
        if fact.value.dtype == object and fact.dtype is not None and fact.dtype.value != "string":
            return False
    return True
