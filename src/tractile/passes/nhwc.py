"""Transposes on quantized wires: composed (cancelled when they undo each other) and moved
after the element-wise quantized ops and concatenations they feed, so that the NHWC islands
``passes.qdq`` builds around quantized convolutions and pools join into one NHWC stretch."""
from __future__ import annotations

from dataclasses import replace

from ..graph import OutletId
from ..ops.activations import Clip
from ..ops.array import Concat, Transpose
from ..ops.binary import Arithmetic
from ..ops.nn import normalize_axis
from ..ops.pool import MaxPool
from ..ops.quantized.common import quantized_fact
from ..ops.unary import UnaryOp
from ..patch import ModelPatch
from .qdq import TO_NCHW, nhwc


def _perm(model, node) -> tuple[int, ...] | None:
    """The permutation of a Transpose node on a quantized wire, else None."""
    if not isinstance(node.op, Transpose):
        return None
    fact = model.outlet_fact(node.inputs[0])
    if not quantized_fact(fact):
        return None
    return node.op._perm(fact.rank)


def compose_transposes(model, node) -> ModelPatch | None:
    """``Transpose(p2)`` of ``Transpose(p1)`` becomes one Transpose (none when they cancel)."""
    outer = _perm(model, node)
    if outer is None:
        return None
    producer = model.nodes[node.inputs[0].node]
    inner = _perm(model, producer)
    if inner is None:
        return None
    combined = tuple(inner[axis] for axis in outer)
    patch = ModelPatch(model, f"compose the transposes {producer.name} and {node.name}")
    source = patch.tap(producer.inputs[0])
    if combined == tuple(range(len(combined))):
        patch.shunt(OutletId(node.id, 0), source)
    else:
        patch.shunt(OutletId(node.id, 0), patch.wire_node(node.name, Transpose(combined), [source])[0])
    patch.obliterate(node.id)
    return patch


def _movable(op) -> bool:
    if isinstance(op, Concat):
        return True
    if isinstance(op, Arithmetic) or isinstance(op, UnaryOp) and not isinstance(op, Clip):
        return op.quant is not None and getattr(op, "activation", None) is None
    return isinstance(op, Clip) and not (op.dynamic_low or op.dynamic_high)


def sink_transpose(model, node) -> ModelPatch | None:
    """An element-wise quantized op (or a Concat) whose every input is the same Transpose of a
    quantized wire runs before that Transpose."""
    if not _movable(node.op) or len(node.outputs) != 1 or not quantized_fact(node.outputs[0].fact):
        return None
    producers = [model.nodes[o.node] for o in node.inputs]
    perms = {_perm(model, p) for p in producers}
    if len(perms) != 1 or None in perms:
        return None
    perm = perms.pop()
    assert perm is not None
    op = node.op
    if isinstance(op, Concat):
        axis = normalize_axis(op.axis, len(perm), "Concat axis")
        op = replace(op, axis=perm[axis])
    elif len({model.outlet_fact(p.inputs[0]).shape for p in producers}) != 1:
        return None  # broadcasting operands: the transposed shapes would not line up
    patch = ModelPatch(model, f"move the transpose after {node.name}")
    inner = patch.wire_node(f"{node.name}.inner", op, [patch.tap(p.inputs[0]) for p in producers])[0]
    patch.shunt(OutletId(node.id, 0), patch.wire_node(node.name, Transpose(perm), [inner])[0])
    patch.obliterate(node.id)
    return patch


def nhwc_max_pool(model, node) -> ModelPatch | None:
    """A 2-d NCHW MaxPool on a quantized wire that a Transpose to NCHW makes pools in NHWC, so
    that the Transposes around it cancel with that one."""
    op = node.op
    if not isinstance(op, MaxPool) or op.data_format != "NCHW" or op.with_indices or op.activation is not None:
        return None
    fact = model.outlet_fact(node.inputs[0])
    if fact.rank != 4 or not quantized_fact(fact) or _perm(model, model.nodes[node.inputs[0].node]) != TO_NCHW:
        return None
    patch = ModelPatch(model, f"pool {node.name} in NHWC")
    patch.shunt(OutletId(node.id, 0), nhwc(patch, node.name, replace(op, data_format="NHWC"),
                                           patch.tap(node.inputs[0]), []))
    patch.obliterate(node.id)
    return patch
