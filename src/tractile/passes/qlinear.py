"""QOperator models onto the quantized core ops: QLinearConv, QLinearMatMul and onnxruntime's
contrib ops (``ops.qlinear_ms``) with constant scales and zero points become the core op of
their family in ``flavour="onnxruntime"``, when each quantized input wire carries the
quantization the op declares for it (its fact's qparams; weights are constants)."""
from __future__ import annotations

import numpy as np

from ..fact import QParams
from ..graph import OutletId
from ..ops.array import Concat
from ..ops.matmul import MatMul
from ..ops.pool import AveragePool
from ..ops.qlinear import QLinearConv, QLinearMatMul
from ..ops.qlinear_ms import QGemm, QLinearAveragePool, QLinearBinary, QLinearConcat, QLinearUnary
from ..ops.quant import constant_qparams
from ..patch import ModelPatch
from .layout import nhwc
from .qdq import EIGHT_BITS, ORT, Quantized, build_conv, global_window, wire_input


def declared(model, node, first: int, axis: int = 0) -> Quantized | None:
    """Input ``first`` of ``node`` with its scale and zero point (inputs ``first + 1``, ``first + 2``):
    a constant, or a wire whose fact carries that quantization."""
    x = model.outlet_fact(node.inputs[first])
    scale = model.outlet_fact(node.inputs[first + 1])
    zero = model.outlet_fact(node.inputs[first + 2])
    if x.dtype not in EIGHT_BITS:
        return None
    q = constant_qparams(scale, zero, axis, x.rank)
    if q is None:
        return None
    if q.axis is None and zero.volume == 1 and scale.volume > 1:
        return None
    if x.konst is not None:
        return Quantized(None, np.asarray(x.konst), q, x.dtype)
    if x.qparams != q:
        return None
    return Quantized(node.inputs[first], None, q, x.dtype)


def output_quant(model, node, scale: int) -> QParams | None:
    q = constant_qparams(model.outlet_fact(node.inputs[scale]), model.outlet_fact(node.inputs[scale + 1]), 0, 0)
    return q if q is not None and len(q.scale) == 1 else None


def _bias(model, outlet: OutletId) -> np.ndarray | None:
    fact = model.outlet_fact(outlet)
    return None if fact.konst is None else np.asarray(fact.konst).reshape(-1).astype(np.int32)


def _replace(model, node, label: str, build) -> ModelPatch:
    patch = ModelPatch(model, f"{label} {node.name}")
    patch.shunt(OutletId(node.id, 0), build(patch))
    patch.obliterate(node.id)
    return patch


def qlinear_conv(model, node) -> ModelPatch | None:
    x, w, quant = declared(model, node, 0), declared(model, node, 3, axis=0), output_quant(model, node, 6)
    if x is None or w is None or quant is None or x.outlet is None or w.value is None or w.value.ndim != 4 \
            or len(x.qparams.scale) != 1:
        return None
    bias = _bias(model, node.inputs[8]) if len(node.inputs) > 8 else None
    if len(node.inputs) > 8 and bias is None:
        return None
    channels = model.outlet_fact(x.outlet).shape[1]
    return _replace(model, node, "the quantized convolution", lambda patch: build_conv(
        patch, node.name, node.op, channels, patch.tap(x.outlet), w, bias, quant))


def qlinear_matmul(model, node) -> ModelPatch | None:
    gemm = isinstance(node.op, QGemm)
    transpose_b = gemm and node.op.trans_b
    a, b = declared(model, node, 0), declared(model, node, 3, axis=0 if transpose_b else 1)
    quant = output_quant(model, node, len(node.inputs) - 2)
    if a is None or b is None or quant is None or a.outlet is None or b.value is None or b.value.ndim != 2:
        return None
    bias = _bias(model, node.inputs[6]) if gemm and node.op.has_bias else None
    if gemm and node.op.has_bias and bias is None:
        return None

    def build(patch: ModelPatch) -> OutletId:
        assert a is not None and a.outlet is not None and b is not None
        inputs = [patch.tap(a.outlet), patch.add_const(f"{node.name}.weights", b.value, b.qparams)]
        if bias is not None:
            inputs.append(patch.add_const(f"{node.name}.bias", bias))
        fused = MatMul(has_bias=bias is not None, transpose_b=transpose_b, quant=quant, flavour=ORT)
        return patch.wire_node(node.name, fused, inputs)[0]
    return _replace(model, node, "the quantized product", build)


def qlinear_binary(model, node) -> ModelPatch | None:
    a, b, quant = declared(model, node, 0), declared(model, node, 3), output_quant(model, node, 6)
    if a is None or b is None or quant is None:
        return None
    return _replace(model, node, "the quantized element-wise op", lambda patch: patch.wire_node(
        node.name, node.op.core(quant), [wire_input(patch, f"{node.name}.{i}", q) for i, q in enumerate((a, b))])[0])


def qlinear_pool(model, node) -> ModelPatch | None:
    op: QLinearAveragePool = node.op
    x, quant = declared(model, node, 0), output_quant(model, node, 3)
    if x is None or quant is None or x.outlet is None:
        return None
    fact = model.outlet_fact(x.outlet)
    if fact.rank != 4:
        return None
    window = op.window if op.window is not None else global_window(fact.shape[1:3] if op.channels_last
                                                                    else fact.shape[2:])
    if window is None:
        return None
    fused = AveragePool(window, op.count_include_pad, data_format="NHWC", quant=quant, flavour=ORT)
    if op.channels_last:
        return _replace(model, node, "the quantized average pool",
                        lambda patch: patch.wire_node(node.name, fused, [patch.tap(x.outlet)])[0])
    return _replace(model, node, "the quantized average pool",
                    lambda patch: nhwc(patch, node.name, fused, patch.tap(x.outlet), []))


def qlinear_concat(model, node) -> ModelPatch | None:
    parts = [declared(model, node, first) for first in range(2, len(node.inputs), 3)]
    quant = output_quant(model, node, 0)
    if quant is None or any(p is None for p in parts):
        return None
    return _replace(model, node, "the quantized concatenation", lambda patch: patch.wire_node(
        node.name, Concat(node.op.axis, quant=quant, flavour=ORT),
        [wire_input(patch, f"{node.name}.{i}", p) for i, p in enumerate(parts)])[0])  # type: ignore[arg-type]


def qlinear_unary(model, node) -> ModelPatch | None:
    x, quant = declared(model, node, 0), output_quant(model, node, 3)
    if x is None or quant is None or x.outlet is None:
        return None
    return _replace(model, node, "the quantized activation",
                    lambda patch: patch.wire_node(node.name, node.op.core(quant), [patch.tap(x.outlet)])[0])


HANDLERS = {QLinearConv: qlinear_conv, QLinearMatMul: qlinear_matmul, QGemm: qlinear_matmul,
            QLinearBinary: qlinear_binary, QLinearAveragePool: qlinear_pool, QLinearConcat: qlinear_concat,
            QLinearUnary: qlinear_unary}


def lower_qlinear(model, node) -> ModelPatch | None:
    """A QOperator op with constant quantization parameters as the quantized core op."""
    handler = HANDLERS.get(type(node.op))
    return handler(model, node) if handler is not None else None

