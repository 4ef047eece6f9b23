"""ONNX control flow: If, Loop, Scan (translations registered on import).

Each subgraph attribute is built into a model of its own by the loader's scope
(:meth:`GraphBuilder.subgraph`); the names it reads from enclosing graphs become
extra inputs of the op, wired by name.
"""
from __future__ import annotations

from ....ops.control import Body, If
from ....ops.control_loop import Loop
from ....ops.control_scan import Scan
from ..registry import OnnxNode, Translated, onnx_op


def subgraph(node: OnnxNode, attribute: str) -> tuple[Body, list[str]]:
    """The body held by a graph attribute, and the enclosing names it reads."""
    scope = getattr(node, "scope", None)
    if scope is None:
        raise node.error(f"attribute {attribute!r} is a subgraph, which only the ONNX loader can build")
    model, free_names = scope.subgraph(node.graph(attribute))
    return Body(model, f'{attribute} of {node.op_type} node "{node.name}"'), free_names


@onnx_op("If", since=1)
def if_(node: OnnxNode):
    then_body, then_free = subgraph(node, "then_branch")
    else_body, else_free = subgraph(node, "else_branch")
    for body, free in ((then_body, then_free), (else_body, else_free)):
        if body.input_count != len(free):
            raise node.error(f"{body.label} declares inputs; If branches take none")
    extras = list(dict.fromkeys(then_free + else_free))
    position = {name: 1 + index for index, name in enumerate(extras)}
    op = If(then_body, else_body, tuple(position[n] for n in then_free), tuple(position[n] for n in else_free))
    return Translated(op, [0, *extras])


@onnx_op("Loop", since=1)
def loop(node: OnnxNode):
    body, free = subgraph(node, "body")
    formal = body.input_count - len(free)
    if formal < 2:
        raise node.error(f"the Loop body takes {formal} inputs; it needs at least the iteration number and "
                         "the condition")
    carried = formal - 2
    if len(node.inputs) != 2 + carried:
        raise node.error(f"the Loop has {len(node.inputs)} inputs but its body carries {carried} values "
                         f"(expected {2 + carried} inputs)")
    if body.output_count < 1 + carried:
        raise node.error(f"the Loop body has {body.output_count} outputs, fewer than 1 + {carried} carried")
    if any(not node.present(i) for i in range(2, 2 + carried)):
        raise node.error("every loop-carried initial value must be given")
    inputs = [i for i in (0, 1) if node.present(i)] + list(range(2, 2 + carried)) + free
    return Translated(Loop(body, carried, node.present(0), node.present(1)), inputs)


@onnx_op("Scan", since=8)
def scan_v8(node: OnnxNode):
    body, free = subgraph(node, "body")
    scan_inputs = node.int("num_scan_inputs")
    formal = body.input_count - len(free)
    states = formal - scan_inputs
    if states < 0 or len(node.inputs) - 1 != formal:
        raise node.error(f"the Scan has {len(node.inputs) - 1} state and scan inputs, its body takes {formal}")
    directions = node.ints("directions", ())
    op = Scan(body, states, scan_inputs, input_directions=directions, batched=True,
              has_sequence_lens=node.present(0))
    inputs = ([0] if node.present(0) else []) + list(range(1, len(node.inputs))) + free
    return Translated(op, inputs)


@onnx_op("Scan", since=9)
def scan(node: OnnxNode):
    body, free = subgraph(node, "body")
    scan_inputs = node.int("num_scan_inputs")
    formal = body.input_count - len(free)
    states = formal - scan_inputs
    if states < 0 or len(node.inputs) != formal:
        raise node.error(f"the Scan has {len(node.inputs)} inputs, its body takes {formal}")
    scan_outputs = body.output_count - states
    op = Scan(body, states, scan_inputs,
              input_axes=_exactly(node, "scan_input_axes", scan_inputs),
              input_directions=_exactly(node, "scan_input_directions", scan_inputs),
              output_axes=_exactly(node, "scan_output_axes", scan_outputs),
              output_directions=_exactly(node, "scan_output_directions", scan_outputs))
    return Translated(op, list(range(len(node.inputs))) + free)


def _exactly(node: OnnxNode, name: str, count: int) -> tuple[int, ...]:
    values = node.ints(name, ())
    if values and len(values) != count:
        raise node.error(f"attribute {name!r} has {len(values)} entries for {count} tensors")
    return values
