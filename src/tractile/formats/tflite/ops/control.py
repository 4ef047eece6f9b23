"""IF and WHILE onto the core control-flow ops (both directions).

IF becomes a core :class:`~tractile.ops.control.If` whose branches are the two subgraphs.
WHILE becomes a core :class:`~tractile.ops.control_loop.Loop` without trip count: the
condition subgraph runs once on the initial values (inlined before the loop), and the loop
body runs the body subgraph then the condition subgraph on the new values (as the TensorFlow
front end does). Subgraphs are loaded once; the bodies are typed and optimized once for the
facts of the op's inputs when it is wired.

Resource variables: a subgraph with effects keeps its last effect as a hidden output (see
``ops.resource``). IF branches are given the same outputs (a branch without effects gives an
empty token); a WHILE body's effect becomes a scan output of the loop. Either op then takes
the previous effect as a last, unread input, so effects keep their file order.
"""
from __future__ import annotations

import numpy as np

from ....datum import DatumType
from ....errors import ModelFormatError
from ....fact import TypedFact
from ....graph import OutletId
from ....model import TypedModel
from ....ops.control import Body, If
from ....ops.control_loop import Loop
from ....ops.io import Const, Source
from ....ops.resource import OWN_OUTPUTS, TOKEN, has_effects, real_outputs
from ..registry import OpSpec, TflNode, Translated, tflite_op, tflite_writer

#: the property of a Loop body naming the TFLite (cond, body) subgraphs it was built from
WHILE_SUBGRAPHS = "tflite_while"


def inline(target, prefix: str, model, inputs: list) -> list:
    """Wire the nodes of ``model`` into ``target`` on ``inputs``; return its outputs there."""
    mapping = dict(zip(model.inputs, inputs))
    for node_id in model.eval_order():
        node = model.nodes[node_id]
        if isinstance(node.op, Source):
            continue
        outlets = target.wire_node(f"{prefix}.{node.name}", node.op, [mapping[o] for o in node.inputs])
        for slot, outlet in enumerate(outlets):
            mapping[OutletId(node_id, slot)] = outlet
    return [mapping[o] for o in model.outputs]


def _with_token(model):
    """A branch with an empty effect token as last output when it has no effect of its own."""
    if has_effects(model):
        return model
    copy = model.compact()
    token = copy.wire_node("effect_token", Const(np.zeros(0, bool)), [])[0]
    copy.properties[OWN_OUTPUTS] = len(copy.outputs)
    copy.outputs = list(copy.outputs) + [token]
    return copy


def if_op(then_model, else_model, count: int) -> If:
    """The core If of a TFLite IF over ``count`` inputs besides the condition."""
    if has_effects(then_model) or has_effects(else_model):
        then_model, else_model = _with_token(then_model), _with_token(else_model)
    positions = tuple(range(1, count + 1))
    return If(Body(then_model, "the IF then branch"), Body(else_model, "the IF else branch"), positions, positions)


@tflite_op("IF")
def if_(node: TflNode):
    options = node.options("IfOptions")
    if options is None:
        raise ModelFormatError(f"{node.where}: missing IfOptions")
    op = if_op(node.subgraph_model(options.ThenSubgraphIndex()), node.subgraph_model(options.ElseSubgraphIndex()),
               len(node.inputs) - 1)
    slots: list = list(range(len(node.inputs)))
    previous = node.loader.previous_effect(node)
    if has_effects(op.then_body.source) and previous is not None:
        slots.append(previous)
    return Translated(op, slots)


@tflite_writer(If)
def write_if(op: If, ctx) -> OpSpec:
    then_model, else_model = op.then_body.source, op.else_body.source
    if op.then_inputs != op.else_inputs or not isinstance(then_model, TypedModel):
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite's IF passes the same inputs to both branches")
    fields = {"ThenSubgraphIndex": ctx.subgraph(then_model), "ElseSubgraphIndex": ctx.subgraph(else_model)}
    return OpSpec("IF", ("IfOptions", fields), [0, *op.then_inputs], outputs=list(range(real_outputs(then_model))))


def loop_body(cond, body, facts: list[TypedFact], order: TypedFact | None) -> TypedModel:
    """The core Loop body of a TFLite WHILE: counters, the loop variables (and an unread
    ordering input) in; the condition on the new values, the new values (and the body's
    effect, a scan output) out."""
    model = TypedModel()
    model.properties["tflite_subgraph"] = body.properties.get("tflite_subgraph", "body")
    model.properties[WHILE_SUBGRAPHS] = (cond, body)
    model.add_source("iteration", TypedFact(DatumType.I64, ()))
    model.add_source("condition", TypedFact(DatumType.BOOL, ()))
    values = [model.add_source(f"v{i}", TypedFact(f.dtype, f.shape, qparams=f.qparams)) for i, f in enumerate(facts)]
    if order is not None:
        model.add_source("order", order.without_value())
    outputs = inline(model, "body", body, values)
    count = len(facts)
    if real_outputs(body) != count:
        raise ModelFormatError(f"the WHILE body gives {real_outputs(body)} values for {count} loop variables")
    flag = inline(model, "cond", cond, outputs[:count])
    model.outputs = flag + outputs
    if has_effects(body):
        model.properties[OWN_OUTPUTS] = 1 + count
    model.set_output_names([f"out{i}" for i in range(len(model.outputs))])
    return model


def while_translation(node, cond, body, items: list, previous=None) -> Translated:
    """The core Loop of a WHILE over the loop variables ``items`` (inputs of ``node``) and the
    condition inlined on their initial values; ``previous``: the last effect to run after."""
    if has_effects(cond):
        raise ModelFormatError(f"{node.where}: a WHILE condition with resource variable effects is not supported")
    values = [node.outlet(item) for item in items]
    facts = [node.model.outlet_fact(v) for v in values]
    first = inline(node.model, f"{node.name}.first_cond", cond, values)
    if len(first) != 1:
        raise ModelFormatError(f"{node.where}: the WHILE condition gives {len(first)} values, not one")
    order = previous if has_effects(body) else None
    if has_effects(body) and order is None:
        order = node.outlet(np.zeros(0, bool))
    model = loop_body(cond, body, facts, node.model.outlet_fact(order) if order is not None else None)
    op = Loop(Body(model, "the WHILE body"), len(values), has_trip_count=False, has_condition=True)
    return Translated(op, [first[0], *values] + ([order] if order is not None else []))


@tflite_op("WHILE")
def while_(node: TflNode):
    options = node.options("WhileOptions")
    if options is None:
        raise ModelFormatError(f"{node.where}: missing WhileOptions")
    cond, body = node.subgraph_model(options.CondSubgraphIndex()), node.subgraph_model(options.BodySubgraphIndex())
    return while_translation(node, cond, body, list(range(len(node.inputs))), node.loader.previous_effect(node))


@tflite_writer(Loop)
def write_while(op: Loop, ctx) -> OpSpec:
    found = op.body.source.properties.get(WHILE_SUBGRAPHS)
    if found is None or op.has_trip_count or not op.has_condition:
        raise ModelFormatError(f"node {ctx.node.name!r}: only loops read from a TFLite WHILE can be written")
    cond, body = found
    fields = {"CondSubgraphIndex": ctx.subgraph(cond), "BodySubgraphIndex": ctx.subgraph(body)}
    return OpSpec("WHILE", ("WhileOptions", fields), list(range(1, 1 + op.carried)), outputs=list(range(op.carried)))


#: the first input of a loop read from a WHILE (its condition on the initial values) is not written
write_while.unwritten_inputs = {0}  # type: ignore[attr-defined]
__all__ = ["if_op", "while_translation", "loop_body", "inline", "TOKEN"]
