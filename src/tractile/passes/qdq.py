"""onnxruntime's QDQ fusions: ``DequantizeLinear -> op -> QuantizeLinear`` groups become the
quantized core op on the integer wires, computing as onnxruntime does (``flavour="onnxruntime"``,
``ops.quantized.onnxruntime``), as onnxruntime's graph optimizer turns them into QLinearConv,
QLinearMatMul, QGemm, QLinearAdd, QLinearMul, QLinearAveragePool, QLinearGlobalAveragePool,
QLinearConcat, QLinearSigmoid, QLinearLeakyRelu (``onnxruntime/core/optimizer/qdq_transformer``).

A group fuses when every dequantized input is an 8-bit wire that carries the quantization its
DequantizeLinear applies (the facts' qparams, set by the QuantizeLinear that made it) or an
8-bit constant (weights; int32 for a bias in the scale ``s_x * s_w``), and the op's only
consumer is a QuantizeLinear with constant per-tensor 8-bit parameters. Ops that only move or
select values (MaxPool, Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Identity) between a
DequantizeLinear and a QuantizeLinear of the same quantization run on the integers.

2-d convolutions and pools compute in NHWC (the quantized core ops' layout): the fused op sits
between two Transposes, which ``passes.layout`` cancels between neighbouring ops.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..datum import DatumType
from ..fact import QParams
from ..graph import OutletId
from ..ops.activations import Clip, LeakyRelu, Relu, Sigmoid, Tanh
from ..ops.array import Concat, Transpose
from ..ops.binary import Add, Mul
from ..ops.cast import Identity
from ..ops.conv import Conv
from ..ops.matmul import Gemm, MatMul
from ..ops.pool import AveragePool, GlobalPool, MaxPool
from ..ops.quant import DequantizeLinear, QuantizeLinear, constant_qparams
from ..ops.shape import Flatten, Reshape, Squeeze, Unsqueeze
from ..ops.window import Window
from ..patch import ModelPatch
from .layout import nhwc

EIGHT_BITS = (DatumType.I8, DatumType.U8)
ORT = "onnxruntime"


@dataclass(frozen=True)
class Quantized:
    """A dequantized input: its integer wire (``outlet``) or constant (``value``), quantized by ``qparams``."""

    outlet: OutletId | None
    value: np.ndarray | None
    qparams: QParams
    dtype: DatumType


def dequantized(model, outlet: OutletId) -> Quantized | None:
    """What a DequantizeLinear feeding ``outlet`` dequantizes, when its parameters are constant and
    its input is a constant or a wire carrying the same quantization."""
    producer = model.nodes[outlet.node]
    op = producer.op
    if not isinstance(op, DequantizeLinear) or op.block_size or op.to not in (None, DatumType.F32):
        return None
    x = model.outlet_fact(producer.inputs[0])
    scale = model.outlet_fact(producer.inputs[1])
    zero = model.outlet_fact(producer.inputs[2]) if len(producer.inputs) > 2 else None
    if x.dtype not in (*EIGHT_BITS, DatumType.I32) or scale.dtype != DatumType.F32:
        return None
    q = constant_qparams(scale, zero, op.axis, x.rank)
    if q is None:
        return None
    if x.konst is not None:
        return Quantized(None, np.asarray(x.konst), q, x.dtype)
    if x.qparams != q or x.dtype not in EIGHT_BITS:
        return None
    return Quantized(producer.inputs[0], None, q, x.dtype)


def requantized(model, node):
    """(the QuantizeLinear node, its qparams) when it is ``node``'s only consumer, per tensor, 8-bit."""
    outlet = OutletId(node.id, 0)
    successors = node.outputs[0].successors
    if len(node.outputs) != 1 or len(successors) != 1 or outlet in model.outputs or successors[0].slot != 0:
        return None
    q = model.nodes[successors[0].node]
    fact = q.outputs[0].fact if isinstance(q.op, QuantizeLinear) else None
    if fact is None or fact.qparams is None or fact.dtype not in EIGHT_BITS or len(fact.qparams.scale) != 1:
        return None
    return q, fact.qparams


def per_tensor(q: Quantized) -> bool:
    return len(q.qparams.scale) == 1


def wire_input(patch: ModelPatch, name: str, q: Quantized) -> OutletId:
    if q.outlet is not None:
        return patch.tap(q.outlet)
    return patch.add_const(name, q.value, q.qparams)


def finish(patch: ModelPatch, node, q_node, y: OutletId) -> ModelPatch:
    patch.shunt(OutletId(q_node.id, 0), y)
    patch.obliterate(q_node.id)
    patch.obliterate(node.id)
    return patch


def _bias(model, outlet: OutletId, x: Quantized, w: Quantized) -> np.ndarray | None:
    """An int32 bias dequantized in the scale ``s_x * s_w`` (per channel), zero point 0."""
    b = dequantized(model, outlet)
    if b is None or b.value is None or b.dtype != DatumType.I32 or any(b.qparams.zero_point):
        return None
    expected = np.float32(x.qparams.scale[0]) * np.asarray(w.qparams.scale, np.float32)
    actual = np.asarray(b.qparams.scale, np.float32)
    if actual.size not in (1, expected.size) or not np.allclose(actual, expected, rtol=1e-5, atol=0):
        return None
    return b.value.reshape(-1).astype(np.int32)


def conv(model, node) -> ModelPatch | None:
    op: Conv = node.op
    if op.data_format != "NCHW" or op.quant is not None or op.activation is not None:
        return None
    x, w = dequantized(model, node.inputs[0]), dequantized(model, node.inputs[1])
    target = requantized(model, node)
    if x is None or w is None or target is None or x.outlet is None or w.value is None or w.value.ndim != 4 \
            or x.dtype not in EIGHT_BITS or w.dtype not in EIGHT_BITS or not per_tensor(x) \
            or w.qparams.axis not in (None, 0):
        return None
    bias = _bias(model, node.inputs[2], x, w) if len(node.inputs) > 2 else None
    if len(node.inputs) > 2 and bias is None:
        return None
    q_node, quant = target
    patch = ModelPatch(model, f"fuse the quantized convolution {node.name}")
    y = build_conv(patch, node.name, op, model.outlet_fact(x.outlet).shape[1], patch.tap(x.outlet), w, bias, quant)
    return finish(patch, node, q_node, y)


def build_conv(patch: ModelPatch, name: str, op, channels, x: OutletId, w: Quantized, bias: np.ndarray | None,
               quant: QParams) -> OutletId:
    """The NHWC quantized Conv of ``op``'s window and groups on the NCHW wire ``x`` (OIHW weights)."""
    assert w.value is not None
    if op.group > 1 and op.group == channels and w.value.shape[1] == 1:  # depthwise: HWIO, [KH,KW,1,C*M]
        weights, kernel_format = np.transpose(w.value, (2, 3, 1, 0)), "HWIO"
        w_q = w.qparams if w.qparams.axis is None else replace(w.qparams, axis=3)
    else:
        weights, kernel_format, w_q = np.transpose(w.value, (0, 2, 3, 1)), "OHWI", w.qparams
    inputs = [patch.add_const(f"{name}.weights", np.ascontiguousarray(weights), w_q)]
    if bias is not None:
        inputs.append(patch.add_const(f"{name}.bias", bias))
    fused = Conv(op.window, op.group, data_format="NHWC", kernel_format=kernel_format, quant=quant, flavour=ORT)
    return nhwc(patch, name, fused, x, inputs)


def matmul(model, node) -> ModelPatch | None:
    op = node.op
    if isinstance(op, MatMul) and (op.quant is not None or op.has_bias or op.activation is not None
                                   or op.transpose_a or op.transpose_b):
        return None
    if isinstance(op, Gemm) and (op.alpha != 1.0 or op.beta != 1.0 or op.trans_a):
        return None
    a, b = dequantized(model, node.inputs[0]), dequantized(model, node.inputs[1])
    target = requantized(model, node)
    if a is None or b is None or target is None or a.outlet is None or b.value is None or b.value.ndim != 2 \
            or a.dtype not in EIGHT_BITS or b.dtype not in EIGHT_BITS or not per_tensor(a):
        return None
    transpose_b = isinstance(op, Gemm) and op.trans_b
    if b.qparams.axis not in (None, 0 if transpose_b else 1):
        return None
    bias = None
    if isinstance(op, Gemm) and len(node.inputs) > 2:
        bias = _bias(model, node.inputs[2], a, b)
        if bias is None or bias.size != b.value.shape[0 if transpose_b else 1]:
            return None
    q_node, quant = target
    patch = ModelPatch(model, f"fuse the quantized product {node.name}")
    inputs = [patch.tap(a.outlet), patch.add_const(f"{node.name}.weights", b.value, b.qparams)]
    if bias is not None:
        inputs.append(patch.add_const(f"{node.name}.bias", bias))
    fused = MatMul(has_bias=bias is not None, transpose_b=transpose_b, quant=quant, flavour=ORT)
    return finish(patch, node, q_node, patch.wire_node(node.name, fused, inputs)[0])


def binary(model, node) -> ModelPatch | None:
    op = node.op
    if not op.is_plain:
        return None
    a, b = dequantized(model, node.inputs[0]), dequantized(model, node.inputs[1])
    target = requantized(model, node)
    if a is None or b is None or target is None or a.dtype != b.dtype or a.dtype not in EIGHT_BITS \
            or not per_tensor(a) or not per_tensor(b):
        return None
    q_node, quant = target
    patch = ModelPatch(model, f"fuse the quantized {op.name} {node.name}")
    inputs = [wire_input(patch, f"{node.name}.{index}", q) for index, q in enumerate((a, b))]
    fused = type(op)(quant=quant, flavour=ORT)
    return finish(patch, node, q_node, patch.wire_node(node.name, fused, inputs)[0])


def pool(model, node) -> ModelPatch | None:
    """AveragePool and GlobalAveragePool (2-d): the NHWC quantized AveragePool."""
    op = node.op
    x = dequantized(model, node.inputs[0])
    target = requantized(model, node)
    if x is None or target is None or x.outlet is None or x.dtype not in EIGHT_BITS or not per_tensor(x):
        return None
    fact = model.outlet_fact(x.outlet)
    if fact.rank != 4:
        return None
    if isinstance(op, GlobalPool):
        window = global_window(tuple(fact.shape[2:])) if op.mode == "avg" else None
        if window is None:
            return None
        count_include_pad = False
    elif op.data_format != "NCHW" or op.quant is not None or op.activation is not None:
        return None
    else:
        window, count_include_pad = op.window, op.count_include_pad
    q_node, quant = target
    patch = ModelPatch(model, f"fuse the quantized average pool {node.name}")
    fused = AveragePool(window, count_include_pad, data_format="NHWC", quant=quant, flavour=ORT)
    return finish(patch, node, q_node, nhwc(patch, node.name, fused, patch.tap(x.outlet), []))


def global_window(spatial: tuple) -> Window | None:
    """The window of a global pool over ``spatial`` dims (None when they are not all known)."""
    if not all(isinstance(d, int) for d in spatial):
        return None
    return Window.make(kernel=tuple(spatial))


def concat(model, node) -> ModelPatch | None:
    op: Concat = node.op
    if op.quant is not None:
        return None
    parts = [dequantized(model, outlet) for outlet in node.inputs]
    target = requantized(model, node)
    if target is None or any(p is None or p.dtype not in EIGHT_BITS or not per_tensor(p) for p in parts) \
            or len({p.dtype for p in parts}) != 1:  # type: ignore[union-attr]
        return None
    q_node, quant = target
    patch = ModelPatch(model, f"fuse the quantized concatenation {node.name}")
    inputs = [wire_input(patch, f"{node.name}.{index}", p) for index, p in enumerate(parts)]  # type: ignore[arg-type]
    fused = Concat(op.axis, quant=quant, flavour=ORT)
    return finish(patch, node, q_node, patch.wire_node(node.name, fused, inputs)[0])


def unary(model, node) -> ModelPatch | None:
    """Sigmoid, Tanh, LeakyRelu: onnxruntime's tables."""
    op = node.op
    if op.quant is not None:
        return None
    x = dequantized(model, node.inputs[0])
    target = requantized(model, node)
    if x is None or target is None or x.outlet is None or x.dtype not in EIGHT_BITS or not per_tensor(x):
        return None
    q_node, quant = target
    patch = ModelPatch(model, f"fuse the quantized {op.name} {node.name}")
    fused = replace(op, quant=quant, flavour=ORT)
    return finish(patch, node, q_node, patch.wire_node(node.name, fused, [patch.tap(x.outlet)])[0])


MOVES = (MaxPool, Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Identity, Relu, Clip)


def drop_qdq(model, node) -> ModelPatch | None:
    """An op that moves or selects values between a DequantizeLinear and a QuantizeLinear of the
    same quantization runs on the integers (a ReLU becomes a Clip at the zero point)."""
    op = node.op
    if isinstance(op, MaxPool) and (op.with_indices or op.activation is not None) \
            or isinstance(op, Clip) and (op.quant is not None or op.dynamic_low or op.dynamic_high) \
            or isinstance(op, Relu) and op.quant is not None:
        return None
    x = dequantized(model, node.inputs[0])
    target = requantized(model, node)
    if x is None or target is None or x.outlet is None or target[1] != x.qparams:
        return None
    if any(model.outlet_fact(o).konst is None for o in node.inputs[1:]):
        return None
    q_node, quant = target
    zero, scale = quant.zero_point[0], np.float32(quant.scale[0])
    extra = node.inputs[1:]
    if isinstance(op, Relu):
        op = Clip(low=float(zero))
    elif isinstance(op, Clip):
        low = None if op.low is None else float(np.clip(np.rint(np.float32(op.low) / scale) + zero, -1e9, 1e9))
        high = None if op.high is None else float(np.clip(np.rint(np.float32(op.high) / scale) + zero, -1e9, 1e9))
        op = Clip(low=low, high=high)
    patch = ModelPatch(model, f"run {node.name} on the quantized values")
    if isinstance(op, MaxPool) and op.data_format == "NCHW" and model.outlet_fact(x.outlet).rank == 4:
        y = nhwc(patch, node.name, replace(op, data_format="NHWC"), patch.tap(x.outlet), [])
        return finish(patch, node, q_node, y)
    inputs = [patch.tap(x.outlet), *(patch.tap(o) for o in extra)]
    return finish(patch, node, q_node, patch.wire_node(node.name, op, inputs)[0])


HANDLERS: dict[type, Callable] = {Conv: conv, MatMul: matmul, Gemm: matmul, Add: binary, Mul: binary, AveragePool: pool,
            GlobalPool: pool, Concat: concat, Sigmoid: unary, Tanh: unary, LeakyRelu: unary,
            **{kind: drop_qdq for kind in MOVES}}


def fuse_qdq(model, node) -> ModelPatch | None:
    """A DequantizeLinear -> op -> QuantizeLinear group as the op on quantized values."""
    handler = HANDLERS.get(type(node.op))
    if handler is None or not node.inputs or not isinstance(model.nodes[node.inputs[0].node].op, DequantizeLinear):
        return None
    return handler(model, node)
