"""Fold per-channel affine ops (what BatchNormalization declutters into) into a Conv or MatMul.

``Conv -> Mul(c) -> Add(d)`` with constant per-output-channel ``c`` and ``d`` becomes
one Conv with weights ``W*c`` and bias ``b*c + d``. The patch wires the scaled
weights as constant arithmetic; constant folding then bakes them.
"""
from __future__ import annotations

import numpy as np

from ..graph import OutletId
from ..ops.binary import Add, Mul
from ..ops.conv import Conv
from ..ops.matmul import MatMul
from ..patch import ModelPatch


def per_channel(value: np.ndarray, out_rank: int, axis: int, channels: int) -> np.ndarray | None:
    """``value`` as a 1-d vector over ``axis`` of a rank ``out_rank`` output, if it is one."""
    if value.ndim > out_rank or value.dtype.kind not in "f":
        return None
    shape = (1,) * (out_rank - value.ndim) + value.shape
    if any(d != 1 for i, d in enumerate(shape) if i != axis):
        return None
    vector = value.reshape(-1)
    if vector.size == 1:
        return np.full(channels, vector[0], dtype=value.dtype)
    return vector if vector.size == channels else None


def _producer(model, node, op_types):
    """(producer node, constant operand) when ``node`` applies a constant to a lone op's output."""
    if len(node.inputs) != 2:
        return None
    for slot in (0, 1):
        source = node.inputs[slot]
        konst = model.outlet_fact(node.inputs[1 - slot]).konst
        producer = model.nodes[source.node]
        if konst is None or not isinstance(producer.op, op_types):
            continue
        if len(producer.outputs[0].successors) != 1 or source in model.outputs:
            continue
        return producer, konst
    return None


def fold_batchnorm(model, node) -> ModelPatch | None:
    """Fold ``Mul``/``Add`` by a per-channel constant into the preceding Conv or MatMul."""
    if not isinstance(node.op, (Mul, Add)) or not node.op.is_plain:
        return None
    found = _producer(model, node, (Conv, MatMul))
    if found is None:
        return None
    producer, konst = found
    if isinstance(producer.op, Conv):
        return _fold_into_conv(model, node, producer, konst)
    return _fold_into_matmul(model, node, producer, konst)


def _fold_into_conv(model, node, conv, konst):
    weights = model.outlet_fact(conv.inputs[1])
    out = conv.outputs[0].fact
    if weights.konst is None or conv.op.activation is not None or out.dtype != weights.dtype \
            or conv.op.data_format != "NCHW":
        return None
    if len(conv.inputs) == 3 and model.outlet_fact(conv.inputs[2]).konst is None:
        return None
    vector = per_channel(konst, out.rank, 1, weights.shape[0])
    if vector is None:
        return None
    vector = vector.astype(weights.dtype.np)
    patch = ModelPatch(model, f"fold {node.op.name} into {conv.name}")
    inputs = [patch.tap(o) for o in conv.inputs]
    kernel_shape = (-1,) + (1,) * (weights.rank - 1)
    if isinstance(node.op, Mul):
        inputs[1] = patch.wire_node(f"{conv.name}.scaled_w", Mul(),
                                    [inputs[1],
                                     patch.add_const(f"{conv.name}.w_scale", vector.reshape(kernel_shape))])[0]
        if len(inputs) == 3:
            inputs[2] = patch.wire_node(f"{conv.name}.scaled_b", Mul(),
                                        [inputs[2], patch.add_const(f"{conv.name}.b_scale", vector)])[0]
    else:
        if len(inputs) == 3:
            inputs[2] = patch.wire_node(f"{conv.name}.shifted_b", Add(),
                                        [inputs[2], patch.add_const(f"{conv.name}.b_shift", vector)])[0]
        else:
            inputs.append(patch.add_const(f"{conv.name}.bias", vector))
    y = patch.wire_node(conv.name, conv.op, inputs)[0]
    patch.shunt(OutletId(node.id, 0), y)
    patch.obliterate(node.id)
    patch.obliterate(conv.id)
    return patch


def _fold_into_matmul(model, node, matmul, konst):
    if not isinstance(node.op, Mul) or matmul.op.has_bias or matmul.op.activation is not None \
            or not matmul.op.is_plain:
        return None
    weights = model.outlet_fact(matmul.inputs[1])
    out = matmul.outputs[0].fact
    if weights.konst is None or weights.rank != 2 or out.dtype != weights.dtype:
        return None
    vector = per_channel(konst, out.rank, out.rank - 1, weights.shape[1])
    if vector is None:
        return None
    patch = ModelPatch(model, f"fold Mul into {matmul.name}")
    data = patch.tap(matmul.inputs[0])
    scale = patch.add_const(f"{matmul.name}.w_scale", vector.astype(weights.dtype.np).reshape(1, -1))
    scaled = patch.wire_node(f"{matmul.name}.scaled_w", Mul(), [patch.tap(matmul.inputs[1]), scale])[0]
    y = patch.wire_node(matmul.name, matmul.op, [data, scaled])[0]
    patch.shunt(OutletId(node.id, 0), y)
    patch.obliterate(node.id)
    patch.obliterate(matmul.id)
    return patch


def _const_operand(model, node):
    """(variable input, constant value) of a binary node with one constant operand."""
    if len(node.inputs) != 2:
        return None
    for slot in (0, 1):
        konst = model.outlet_fact(node.inputs[1 - slot]).konst
        if konst is not None and model.outlet_fact(node.inputs[slot]).konst is None:
            return node.inputs[slot], konst
    return None


def _lone_add_below(model, outlet):
    """The Add producing ``outlet`` if it adds a constant to a same-shaped wire and feeds only here."""
    producer = model.nodes[outlet.node]
    if not isinstance(producer.op, Add) or not producer.op.is_plain or len(producer.outputs[0].successors) != 1 \
            or outlet in model.outputs:
        return None
    found = _const_operand(model, producer)
    if found is None:
        return None
    data, konst = found
    if model.outlet_fact(data).shape != producer.outputs[0].fact.shape:
        return None
    return producer, data, konst


def _over_constant_add(model, node, op_type):
    """(x, a, b, the Add) when ``node`` is ``op_type(x + a, b)`` with constants a, b and an Add
    that feeds only this node, all of one shape; else None."""
    if not isinstance(node.op, op_type):
        return None
    found = _const_operand(model, node)
    if found is None:
        return None
    data, outer = found
    below = _lone_add_below(model, data)
    if below is None or node.outputs[0].fact.shape != model.outlet_fact(data).shape:
        return None
    add, x, inner = below
    return x, inner, outer, add


def _replace_pair(patch: ModelPatch, node, add, y) -> ModelPatch:
    patch.shunt(OutletId(node.id, 0), y)
    patch.obliterate(node.id)
    patch.obliterate(add.id)
    return patch


def push_mul_above_add(model, node) -> ModelPatch | None:
    """``(x + a) * b`` with constants a, b becomes ``x * b + a * b``, so the Mul can reach a Conv/MatMul."""
    found = _over_constant_add(model, node, Mul)
    if found is None:
        return None
    x, shift, scale, add = found
    patch = ModelPatch(model, f"push {node.name} above {add.name}")
    scaled = patch.wire_node(node.name, Mul(), [patch.tap(x), patch.add_const(f"{node.name}.b", scale)])[0]
    with np.errstate(all="ignore"):  # an overflowing product is what the model computes too
        moved = patch.add_const(f"{add.name}.ab", (shift * scale).astype(node.outputs[0].fact.dtype.np))
    return _replace_pair(patch, node, add, patch.wire_node(add.name, Add(), [scaled, moved])[0])


def merge_constant_adds(model, node) -> ModelPatch | None:
    """``(x + a) + b`` with constants a, b becomes ``x + (a + b)``."""
    found = _over_constant_add(model, node, Add)
    if found is None:
        return None
    x, first, second, add = found
    patch = ModelPatch(model, f"merge {add.name} into {node.name}")
    with np.errstate(all="ignore"):
        total = patch.add_const(f"{node.name}.sum", (first + second).astype(node.outputs[0].fact.dtype.np))
    return _replace_pair(patch, node, add, patch.wire_node(node.name, Add(), [patch.tap(x), total])[0])
