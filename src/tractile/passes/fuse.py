"""Speed fusions: a bias Add and a simple activation folded into the op that feeds them."""
from __future__ import annotations

from dataclasses import replace

from ..graph import OutletId
from ..ops.activations import Clip, fusable
from ..ops.binary import Add, Arithmetic
from ..ops.broadcast import broadcast_shapes
from ..ops.conv import Conv
from ..ops.conv_transpose import ConvTranspose
from ..ops.matmul import MatMul
from ..ops.pool import AveragePool, MaxPool
from ..patch import ModelPatch


def _lone_producer(model, outlet: OutletId, op_types):
    producer = model.nodes[outlet.node]
    if not isinstance(producer.op, op_types):
        return None
    if len(producer.outputs[0].successors) != 1 or outlet in model.outputs:
        return None
    return producer


def fuse_bias(model, node) -> ModelPatch | None:
    """``MatMul -> Add(constant)`` becomes a MatMul with a bias added in place."""
    if not isinstance(node.op, Add) or not node.op.is_plain:
        return None
    for slot in (0, 1):
        matmul = _lone_producer(model, node.inputs[slot], MatMul)
        bias = model.outlet_fact(node.inputs[1 - slot])
        if matmul is None or matmul.op.has_bias or matmul.op.activation is not None or bias.konst is None:
            continue
        out = matmul.outputs[0].fact
        if bias.dtype != out.dtype or out.rank == 0 or broadcast_shapes(out.shape, bias.shape) != out.shape:
            continue
        patch = ModelPatch(model, f"fuse bias into {matmul.name}")
        inputs = [patch.tap(o) for o in matmul.inputs] + [patch.tap(node.inputs[1 - slot])]
        y = patch.wire_node(matmul.name, replace(matmul.op, has_bias=True), inputs)[0]
        patch.shunt(OutletId(node.id, 0), y)
        patch.obliterate(node.id)
        patch.obliterate(matmul.id)
        return patch
    return None


def fuse_activation(model, node) -> ModelPatch | None:
    """``Conv|MatMul|Add|Sub|Mul... -> Relu|Sigmoid|Tanh|LeakyRelu|Clip`` becomes one op applying
    it in place. Quantized ops fuse a Clip (its bounds are integers of the output type, TFLite's
    fused activations) into the clamp of their requantization; the NHWC pools (TFLite's, whose
    kernels clamp) fuse one too."""
    if not fusable(node.op):
        return None
    producer = _lone_producer(model, node.inputs[0], (Conv, ConvTranspose, MatMul, Arithmetic, MaxPool, AveragePool))
    if producer is None or producer.op.activation is not None:
        return None
    if isinstance(producer.op, (MaxPool, AveragePool, ConvTranspose)) and producer.op.data_format != "NHWC" \
            or getattr(producer.op, "shape_input", False):  # output dims decided at run time: fresh symbols
        return None
    out = producer.outputs[0].fact
    quantized = getattr(producer.op, "quant", None) is not None or (out.qparams is not None and not out.dtype.is_float)
    if quantized:
        if type(node.op) is not Clip or node.outputs[0].fact.qparams != producer.outputs[0].fact.qparams:
            return None
    elif not producer.outputs[0].fact.dtype.is_float:
        return None
    patch = ModelPatch(model, f"fuse {node.op.name} into {producer.name}")
    inputs = [patch.tap(o) for o in producer.inputs]
    y = patch.wire_node(producer.name, replace(producer.op, activation=node.op), inputs)[0]
    patch.shunt(OutletId(node.id, 0), y)
    patch.obliterate(node.id)
    patch.obliterate(producer.id)
    return patch
