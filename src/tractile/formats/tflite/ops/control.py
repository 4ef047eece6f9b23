"""Translations of the control-flow operators IF and WHILE (both directions)."""
from __future__ import annotations

from ....errors import ModelFormatError
from ....ops.tfl.control import If, While
from ..registry import OpSpec, TflNode, tflite_op, tflite_writer


@tflite_op("IF")
def if_(node: TflNode):
    options = node.options("IfOptions")
    if options is None:
        raise ModelFormatError(f"{node.where}: missing IfOptions")
    return If(then_branch=node.subgraph_model(options.ThenSubgraphIndex()),
              else_branch=node.subgraph_model(options.ElseSubgraphIndex()))


@tflite_writer(If)
def write_if(op: If, ctx) -> OpSpec:
    fields = {"ThenSubgraphIndex": ctx.subgraph(op.then_branch), "ElseSubgraphIndex": ctx.subgraph(op.else_branch)}
    return OpSpec("IF", ("IfOptions", fields), list(range(ctx.input_count() - op.ordered)))


@tflite_op("WHILE")
def while_(node: TflNode):
    options = node.options("WhileOptions")
    if options is None:
        raise ModelFormatError(f"{node.where}: missing WhileOptions")
    return While(cond=node.subgraph_model(options.CondSubgraphIndex()),
                 body=node.subgraph_model(options.BodySubgraphIndex()))


@tflite_writer(While)
def write_while(op: While, ctx) -> OpSpec:
    fields = {"CondSubgraphIndex": ctx.subgraph(op.cond), "BodySubgraphIndex": ctx.subgraph(op.body)}
    return OpSpec("WHILE", ("WhileOptions", fields), list(range(ctx.input_count() - op.ordered)))
