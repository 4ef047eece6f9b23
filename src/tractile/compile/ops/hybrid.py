"""Hybrid (dynamic-range) products compiled: float activations quantized on the fly, int8 weights
(``tl_hybrid.h``), for the core MatMul (FULLY_CONNECTED), NHWC Conv, Svdf and ProjectedLstm, with the
constants the interpreter's recipes (``ops.quantized.hybrid``, ``hybrid_recurrent``) use."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.conv_nhwc import kernel_dims
from ...ops.quantized.common import recipe_of
from ..emit import Emit
from ..registry import Unsupported
from .fused import finish_activation, finish_tflite_activation, fused_float_activation, tflite_float_activation

HEADER = "tl_hybrid.h"
ACTIVATION_CODES = {"NONE": 0, "RELU": 1, "RELU6": 2, "RELU_N1_TO_1": 3, "TANH": 4}


def _use(e: Emit) -> None:
    e.uses_math()
    for header in ("tl_fully_connected.h", "tl_recurrent.h", "tl_lstm.h", HEADER):
        e.use(header)


def row_sums(e: Emit, role: str, weights: np.ndarray, asymmetric: bool) -> str:
    """The weights' row sums (asymmetric rows subtract their zero point times them), or NULL."""
    if not asymmetric:
        return "NULL"
    return e.constant(role, weights.astype(np.int64).sum(axis=1), DatumType.I32)


def hybrid_dense(e: Emit) -> None:
    """A float input times constant int8 weights (LiteRT's hybrid FULLY_CONNECTED)."""
    op = e.op
    x, y = e.input(0), e.output(0)
    dense = recipe_of(op)
    _use(e)
    low, high = fused_float_activation(e, op.activation, y)
    batches = x.count // dense.depth if dense.depth else 0
    bias = e.constant("bias", dense.bias) if dense.bias is not None else "NULL"
    e.call("tl_hybrid_dense", x, e.constant("weights", dense.weights, DatumType.I8),
           row_sums(e, "row_sums", dense.weights, dense.asymmetric), e.constant("scales", dense.scales),
           int(dense.per_channel), bias, y, batches, dense.depth, dense.units, int(dense.asymmetric),
           e.scratch("rows", DatumType.I8, dense.depth), np.float32(low), np.float32(high))
    finish_activation(e, op.activation, y)


def hybrid_svdf(e: Emit, x, y, features: np.ndarray, times, bias, initial: np.ndarray) -> None:
    """LiteRT's hybrid SVDF: the feature projection hybrid, the time reduction in float."""
    op = e.op
    svdf = recipe_of(op)
    batches, depth = x.shape
    filters, frames = svdf.times.shape
    _use(e)
    e.use("tl_svdf.h")
    low, high = tflite_float_activation(e, op.activation, y)
    memory = e.state("memory", DatumType.F32, initial.size, initial.astype(np.float32))
    bias_name = e.constant("bias", np.asarray(bias, np.float32).reshape(-1)) if bias is not None else "NULL"
    e.call("tl_hybrid_svdf", x, e.constant("features", features, DatumType.I8),
           row_sums(e, "row_sums", features, svdf.asymmetric), e.constant("scale", np.array([svdf.product.scale])),
           e.constant("times", svdf.times.astype(np.float32)), bias_name, memory, y,
           e.scratch("column", DatumType.F32, filters), e.scratch("rows", DatumType.I8, depth), batches, depth,
           filters, frames, op.rank, int(svdf.asymmetric), np.float32(low), np.float32(high))
    finish_tflite_activation(e, op.activation, y)


def hybrid_lstm(e: Emit, op, weights: dict, offsets: list[int], shape: dict) -> None:
    """LiteRT's hybrid LSTM (no layer normalisation: its gates have no C lowering)."""
    if op.layer_norm:
        raise Unsupported("a layer-normalised hybrid LSTM")
    if op.activation not in ACTIVATION_CODES:
        raise Unsupported(f"the LSTM activation {op.activation}")
    scales = recipe_of(op).scales
    units, outputs, depth = shape["units"], shape["outputs"], shape["depth"]
    asymmetric = op.asymmetric_inputs
    _use(e)
    wx = np.concatenate([weights[1 + o] for o in offsets]).astype(np.int8)
    wh = np.concatenate([weights[5 + o] for o in offsets]).astype(np.int8)
    bias = np.concatenate([weights[12 + o] if weights[12 + o] is not None else np.zeros(units, np.float32)
                           for o in offsets]).astype(np.float32)
    peepholes = []
    for gate, slot in (("input", 9), ("forget", 10), ("output", 11)):
        value = weights[slot]
        peepholes.append("NULL" if value is None else e.constant(
            f"peephole_{gate}", (value.astype(np.float32) * scales[slot]).astype(np.float32)))
    if weights[16] is not None:
        projection = weights[16].astype(np.int8)
        proj = [e.constant("projection", projection, DatumType.I8),
                row_sums(e, "projection_sums", projection, asymmetric),
                e.constant("projection_scale", np.array([scales[16]], np.float32)),
                e.constant("projection_bias", weights[17].astype(np.float32)) if weights[17] is not None else "NULL"]
    else:
        proj = ["NULL", "NULL", "NULL", "NULL"]
    h = e.state("h", DatumType.F32, shape["batches"] * outputs, np.asarray(op.initial_states[0], np.float32))
    c = e.state("c", DatumType.F32, shape["batches"] * units, np.asarray(op.initial_states[1], np.float32))
    e.call("tl_hybrid_lstm", e.input(0), e.output(0), h, c, e.scratch("gates", DatumType.F32, len(offsets) * units),
           e.scratch("hidden", DatumType.F32, units), e.scratch("rows", DatumType.I8, max(depth, outputs, units)),
           e.constant("wx", wx, DatumType.I8), row_sums(e, "wx_sums", wx, asymmetric),
           e.constant("sx", np.array([scales[1 + o] for o in offsets], np.float32)),
           e.constant("wh", wh, DatumType.I8), row_sums(e, "wh_sums", wh, asymmetric),
           e.constant("sh", np.array([scales[5 + o] for o in offsets], np.float32)), e.constant("bias", bias),
           *peepholes, *proj, shape["batches"], shape["steps"], depth, units, outputs, op.time_major,
           len(offsets) == 3, ACTIVATION_CODES[op.activation], np.float32(op.cell_clip), np.float32(op.proj_clip),
           int(asymmetric))


def emit_hybrid_conv(e: Emit, conv, strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0), activation=None) -> None:
    """The hook of a core convolution over NHWC float input with int8 weights: ``conv`` is the
    prepared ``ops.quantized.hybrid.HybridConv``, the geometry as its ``__call__`` takes it,
    ``activation`` the fused core activation."""
    x, y = e.input(0), e.output(0)
    batches, in_h, in_w, in_c = x.shape
    _, out_h, out_w, out_c = y.shape
    _, kh, kw, _ = conv.weights.shape
    _use(e)
    low, high = fused_float_activation(e, activation, y)
    bias = e.constant("bias", conv.bias) if conv.bias is not None else "NULL"
    e.call("tl_hybrid_conv", x, e.constant("weights", conv.weights, DatumType.I8), e.constant("scales", conv.scales),
           bias, y, e.scratch("image", DatumType.I8, in_h * in_w * in_c), batches, in_h, in_w, in_c, out_h, out_w,
           out_c, kh, kw, *strides, *dilations, pads[0], pads[1], conv.groups, int(conv.asymmetric),
           int(conv.scales_first), np.float32(low), np.float32(high))
    finish_activation(e, activation, y)


def hybrid_conv(e: Emit) -> None:
    """The core NHWC Conv of a float input by constant int8 weights (LiteRT's hybrid CONV_2D and
    DEPTHWISE_CONV_2D), with the recipe the interpreter prepared."""
    op = e.op
    w_shape = e.input_fact(1).shape
    kernel = kernel_dims(w_shape, op.kernel_format)[2:]
    window = op.window.for_kernel(kernel)
    begins, ends, _ = window.concrete_pads(tuple(int(d) for d in e.input(0).shape[1:3]))
    emit_hybrid_conv(e, recipe_of(op), window.strides, window.dilations, (begins[0], begins[1], ends[0], ends[1]),
                     op.activation)
