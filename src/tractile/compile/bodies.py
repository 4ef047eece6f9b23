"""Subgraphs lowered inline: the bodies of If, Loop, CallOnce and Program nodes.

A body's nodes are lowered by a child of the enclosing :class:`~tractile.compile.lower.Lowering`
that shares its program, names and constants, and appended to the program's steps between
the steps of the control-flow node that holds them (which opens and closes the C block:
``if``, ``for``). The memory planner then sees one linear sequence of steps: the tensors of
an If's two branches live at different steps and share bytes; a loop's closing step reads
every value its body reads from outside, so those live through the whole loop.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..datum import DatumType
from ..errors import TractileError, UnsupportedOpError
from ..graph import OutletId
from ..ops.io import Const, Source
from .ctext import comment_text
from .program import ARENA, CONST, CTensor, NodeCode
from .registry import Unsupported

if TYPE_CHECKING:
    from .emit import Emit
    from .lower import Lowering


def body_model(body, facts: Sequence, what: str):
    """The typed, optimized model of a :class:`~tractile.ops.control.Body` for input ``facts``
    (raises Unsupported when it cannot be typed for them)."""
    from ..passes.dead_channels import drop_dead_channels
    from .layout import channels_last

    if body.failure is not None:
        raise Unsupported(f"{what} cannot run with these inputs: {body.failure}")
    try:
        typed = body.specialized(list(facts)).typed
    except TractileError as error:  # the analysis says why: reported as the node's reason
        raise Unsupported(f"{what} cannot be typed for its inputs: {error}") from None
    return drop_dead_channels(channels_last(typed))


def lower_body(e: Emit, model, inputs: Sequence[CTensor], label: str,
               bound: Mapping[int, CTensor] | None = None, depth: int = 1, scoped: bool = True) -> list[CTensor]:
    """Lower ``model``'s nodes, its inputs being ``inputs``, as steps of the program (indented
    ``depth`` blocks); its outputs' tensors. ``bound`` maps output positions to tensors the
    nodes computing them write straight into (an output that is an input or a constant, or
    that appears twice, is left to the caller to copy). ``scoped``: the body's C names and
    comments start with the node's name and ``label``."""
    parent: Lowering = e.lowering
    child = copy.copy(parent)
    child.model, child.order, child.chains, child._banded = model, [], {}, set()
    child.tensors = dict(zip(model.inputs, inputs))
    child._output_ports = {}
    child.bound = {}
    for position, tensor in (bound or {}).items():
        outlet = model.outputs[position]
        if model.outputs.count(outlet) == 1 and not isinstance(model.nodes[outlet.node].op, (Source, Const)):
            child.bound[outlet] = tensor
    where = f"{e.node.name}_{label}_" if scoped else ""
    order = model.eval_order(model.outputs)
    child._vars = {}
    for node_id in order:
        node = model.nodes[node_id]
        if isinstance(node.op, Source):
            continue
        if isinstance(node.op, Const):
            fact = model.outlet_fact(OutletId(node_id, 0))
            tensor = CTensor(child.names.unique(f"{where}{node.name}"), fact.dtype, _shape(fact), CONST, fact.qparams,
                             value=node.op.value)
            child.tensors[OutletId(node_id, 0)] = tensor
            parent.program.tensors.append(tensor)
            continue
        for slot in range(len(node.outputs)):
            name = node.name if len(node.outputs) == 1 else f"{node.name}_{slot}"
            child._vars[OutletId(node_id, slot)] = child.names.unique(f"{where}{name}")
    start = len(parent.program.nodes)
    failures = []
    for node_id in order:
        node = model.nodes[node_id]
        if isinstance(node.op, (Source, Const)):
            continue
        try:
            child._lower_node(node)
        except (Unsupported, UnsupportedOpError) as why:
            failures.append(f'node #{node.id} "{node.name}" ({node.op.name}): {why}')
    if failures:
        raise Unsupported(f"in {label.replace('_', ' ')}: " + "; ".join(failures))
    prefix = comment_text(f'{e.node.name}, {label.replace("_", " ")}: ') if scoped else ""
    for code in parent.program.nodes[start:]:
        code.depth += depth
        code.comment = prefix + code.comment
        code.node_id, code.members = e.node.id, ()
    return [child.tensors[outlet] for outlet in model.outputs]


def _shape(fact) -> tuple[int, ...]:
    shape = fact.concrete_shape()
    if shape is None:
        raise Unsupported(f"a constant of the body has a symbolic shape ({fact})")
    return tuple(int(d) for d in shape)


def step(e: Emit, role: str, lines: Sequence[str], inputs: Sequence[CTensor] = (),
         outputs: Sequence[CTensor] = (), depth: int = 0) -> NodeCode:
    """Append a step of the control-flow node being lowered (opening or closing a block)."""
    code = NodeCode(e.node.id, e.node.name, e.op.name, comment_text(f'node #{e.node.id} "{e.node.name}" '
                                                                     f"({e.op.name}): {role}"),
                    lines=list(lines), inputs=list(inputs), outputs=list(outputs), kernel="(control)", depth=depth)
    e.lowering.program.nodes.append(code)
    return code


def buffer(e: Emit, role: str, dtype: DatumType, shape: tuple[int, ...], planned: bool = True) -> CTensor:
    """An arena tensor of the node that the caller gives a lifetime (by naming it among a
    step's outputs and inputs); unless ``planned``, a placeholder nothing reads or writes."""
    tensor = CTensor(e.lowering.node_var(e.node.name, role), dtype, tuple(shape), ARENA, used=planned)
    if planned:
        e.lowering.program.tensors.append(tensor)
    return tensor


def copy_line(target: CTensor, source: CTensor, move: bool = False) -> list[str]:
    """``memcpy(target, source, bytes);`` (nothing for an empty tensor or the same tensor)."""
    if target is source or target.nbytes == 0:
        return []
    target.used = source.used = True
    return [f"{'memmove' if move else 'memcpy'}({target.var}, {source.var}, {target.nbytes});"]
