"""Convolutions: TFLite CONV_2D and DEPTHWISE_CONV_2D (NHWC; float and int8 per channel) and
ONNX Conv (NCHW, float, 1-D and 2-D, groups, dilations). Kernels in ``tl_conv.h``; a 1×1
CONV_2D with stride 1 runs as a dense layer over the pixels (``tl_fully_connected.h``).

Outputs of the NHWC kernels are written pixel after pixel, each after every input it reads,
so an output may overlap its dying input when it trails it far enough: :func:`row_lag` gives
that distance, and the memory planner uses it (depthwise convolutions in place, pointwise
ones over their input: the MCUNet/TinyEngine technique).
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.conv import Conv
from ...ops.quantized.common import activation_range, zero_of
from ...ops.tfl.conv import Conv2D, DepthwiseConv2D, QuantizedStage
from ..emit import Emit
from ..registry import Unsupported, emitter
from . import conv_dsp
from .dense import requant_constants
from .fused import finish_activation, finish_tflite_activation, fused_float_activation, tflite_float_activation

HEADER = "tl_conv.h"


def row_lag(in_rows: int, out_rows: int, in_row_bytes: int, out_row_bytes: int, stride: int, pad_top: int) -> int:
    """How many bytes before its input an output may start when output row ``r`` is written
    only after reading input rows from ``r * stride - pad_top`` on, and later outputs read no
    earlier row: every output row must end before the first input row still needed."""
    lag = 0
    for row in range(out_rows):
        still_needed = min(max(row * stride - pad_top, 0), in_rows)
        lag = max(lag, (row + 1) * out_row_bytes - still_needed * in_row_bytes)
    return lag


def pixel_lag(pixels: int, in_pixel_bytes: int, out_pixel_bytes: int) -> int:
    """The same for a pointwise layer: output pixel ``p`` is written after reading input pixel
    ``p``, so it must end before that pixel starts: ``max_p (p + 1) * out - p * in``."""
    return out_pixel_bytes + max(0, (pixels - 1) * (out_pixel_bytes - in_pixel_bytes))


def geometry(op, x_shape, w_shape) -> tuple:
    (out_h, top, _), (out_w, left, _) = op.window.geometry(x_shape[1], x_shape[2], w_shape[1], w_shape[2])
    return out_h, out_w, top, left


def window_args(op, k_h: int, k_w: int, top: int, left: int) -> tuple:
    w = op.window
    return (k_h, k_w, w.stride_h, w.stride_w, w.dilation_h, w.dilation_w, top, left)


def quantized_numbers(op, x_dtype: DatumType, w: np.ndarray, bias, weight_sums, taps: int) -> tuple:
    """(multipliers, shifts, x_offset, zero, low, high) of an integer convolution, as the
    interpreter prepares them."""
    if x_dtype not in (DatumType.I8, DatumType.I16):
        raise Unsupported(f"{op.name} on {x_dtype} (float32, int8 and int16x8 are compiled)")
    stage = QuantizedStage(op, x_dtype, w, bias, weight_sums, taps)
    if x_dtype == DatumType.I16 and not stage.wide:
        raise Unsupported("int16 convolutions with int32 biases (int64 biases are compiled)")
    requant = stage.output.requant
    low, high = activation_range(op.activation, op.oq(0), x_dtype)
    return requant.multipliers, requant.shifts, -stage.x_zero, zero_of(op.oq(0)), low, high


def quantized_args(e: Emit, op, x_dtype: DatumType, w: np.ndarray, bias, weight_sums, taps: int):
    """(multiplier, shift, per_channel, x_offset, zero, low, high) of an integer convolution,
    the multipliers and shifts as constant arrays."""
    multipliers, shifts, x_offset, zero, low, high = quantized_numbers(op, x_dtype, w, bias, weight_sums, taps)
    multiplier, shift, per_channel = requant_constants(e, multipliers, shifts, len(weight_sums))
    return multiplier, shift, per_channel, x_offset, zero, low, high


def offset_weights(op, w: np.ndarray) -> np.ndarray:
    zero = zero_of(op.iq(1)) if len(op.iq(1).scale) == 1 else 0
    offset = w.astype(np.int64) - zero
    if offset.min(initial=0) < -128 or offset.max(initial=0) > 127:
        raise Unsupported("int8 weights with a zero point (offset weights leave the int8 range)")
    return offset


@emitter(Conv2D)
def conv2d(e: Emit) -> None:
    op: Conv2D = e.op
    x, y = e.input(0), e.output(0)
    w = e.const_input(1, "the weights")
    bias = e.const_input(2, "the bias").reshape(-1) if op.has_bias else None
    filters, k_h, k_w, depth = w.shape
    batches, in_h, in_w, in_c = x.shape
    out_h, out_w, top, left = geometry(op, x.shape, w.shape)
    pointwise = k_h == k_w == 1 and op.window.stride_h == op.window.stride_w == 1 and depth == in_c
    if x.dtype == DatumType.F32:
        e.use(HEADER)
        low, high = tflite_float_activation(e, op.activation, y)
        bias_name = e.constant("bias", bias.astype(np.float32)) if bias is not None else "NULL"
        e.call("tl_conv_nhwc_f32", x, e.constant("weights", w.astype(np.float32)), bias_name, y, batches, in_h,
               in_w, in_c, out_h, out_w, filters, *window_args(op, k_h, k_w, top, left), depth, np.float32(low),
               np.float32(high))
        finish_tflite_activation(e, op.activation, y)
        _overlap_nhwc(e, x, y, in_h, out_h, in_w * in_c, out_w * filters, op.window.stride_h, top, batches)
        return
    offset = offset_weights(op, w)
    sums = offset.reshape(filters, -1).sum(axis=1)
    if pointwise and x.dtype == DatumType.I8 and conv_dsp.emit_pointwise(
            e, x, y, offset, np.zeros(filters, np.int64) if bias is None else bias.astype(np.int64),
            quantized_numbers(op, x.dtype, w, bias if bias is None else np.asarray(bias), sums, depth), in_c):
        if batches * in_h * in_w > 0:
            e.overlap(0, 0, pixel_lag(batches * in_h * in_w, in_c, filters))
        return
    multiplier, shift, per_channel, x_offset, zero, low, high = quantized_args(
        e, op, x.dtype, w, bias if bias is None else np.asarray(bias), sums, k_h * k_w * depth)
    raw_bias = np.zeros(filters, np.int64) if bias is None else bias.astype(np.int64)
    suffix, bias_type = ("s16", DatumType.I64) if x.dtype == DatumType.I16 else ("s8", DatumType.I32)
    if pointwise and suffix == "s8":
        total = raw_bias + x_offset * sums
        if np.abs(total).max(initial=0) >= 1 << 31:
            raise Unsupported("the folded bias leaves the int32 range")
        pixels = batches * in_h * in_w
        if e.target.name == "host":  # wide vector units: the loop over output channels vectorises
            e.use(HEADER)
            e.call("tl_pointwise_s8", x, e.constant("weights_t", np.ascontiguousarray(offset.reshape(filters, -1).T),
                                                    DatumType.I8), e.constant("bias", total, DatumType.I32), y,
                   e.scratch("acc", DatumType.I32, filters), pixels, depth, filters, multiplier, shift, per_channel,
                   zero, low, high)
        else:  # microcontrollers: dot products (two MACs per SMLAD on Cortex-M4/M7)
            from .dense import HEADER as DENSE_HEADER

            e.use(DENSE_HEADER)
            e.call("tl_fc_s8", x, e.constant("weights", offset, DatumType.I8), e.constant("bias", total, DatumType.I32),
                   y, pixels, depth, filters, multiplier, shift, per_channel, zero, low, high)
        if batches * in_h * in_w > 0:
            e.overlap(0, 0, pixel_lag(batches * in_h * in_w, in_c, filters))
        return
    e.use(HEADER)
    weights = e.constant("weights", offset, DatumType.I8)
    e.call(f"tl_conv_nhwc_{suffix}", x, weights, e.constant("bias", raw_bias, bias_type), y, batches, in_h, in_w, in_c,
           out_h, out_w, filters, *window_args(op, k_h, k_w, top, left), depth, x_offset, multiplier, shift,
           per_channel, zero, low, high)
    _overlap_nhwc(e, x, y, in_h, out_h, in_w * in_c, out_w * filters, op.window.stride_h, top, batches)


@emitter(DepthwiseConv2D)
def depthwise_conv2d(e: Emit) -> None:
    op: DepthwiseConv2D = e.op
    x, y = e.input(0), e.output(0)
    w = e.const_input(1, "the weights")
    bias = e.const_input(2, "the bias").reshape(-1) if op.has_bias else None
    _, k_h, k_w, out_c = w.shape
    batches, in_h, in_w, in_c = x.shape
    multiplier_c = out_c // in_c
    out_h, out_w, top, left = geometry(op, x.shape, w.shape)
    e.use(HEADER)
    if x.dtype == DatumType.F32:
        low, high = tflite_float_activation(e, op.activation, y)
        bias_name = e.constant("bias", bias.astype(np.float32)) if bias is not None else "NULL"
        e.call("tl_dwconv_nhwc_f32", x, e.constant("weights", w[0].astype(np.float32)), bias_name, y,
               e.scratch("acc", DatumType.F32, out_c), batches, in_h,
               in_w, in_c, out_h, out_w, multiplier_c, *window_args(op, k_h, k_w, top, left), np.float32(low),
               np.float32(high))
        finish_tflite_activation(e, op.activation, y)
    else:
        offset = offset_weights(op, w[0])
        raw_bias = np.zeros(out_c, np.int64) if bias is None else bias.astype(np.int64)
        wide = x.dtype == DatumType.I16
        if not wide and conv_dsp.emit_depthwise(
                e, x, y, offset, raw_bias, quantized_numbers(op, x.dtype, w, bias, offset.sum(axis=(0, 1)), k_h * k_w),
                (batches, in_h, in_w, in_c, out_h, out_w, multiplier_c, *window_args(op, k_h, k_w, top, left))):
            _overlap_nhwc(e, x, y, in_h, out_h, in_w * in_c, out_w * out_c, op.window.stride_h, top, batches)
            return
        multiplier, shift, per_channel, x_offset, zero, low, high = quantized_args(
            e, op, x.dtype, w, bias, offset.sum(axis=(0, 1)), k_h * k_w)
        acc_type = DatumType.I64 if wide else DatumType.I32
        e.call(f"tl_dwconv_nhwc_{'s16' if wide else 's8'}", x, e.constant("weights", offset, DatumType.I8),
               e.constant("bias", raw_bias, acc_type), y, e.scratch("acc", acc_type, out_c), batches, in_h,
               in_w, in_c, out_h, out_w, multiplier_c,
               *window_args(op, k_h, k_w, top, left), x_offset, multiplier, shift, per_channel, zero, low, high)
    _overlap_nhwc(e, x, y, in_h, out_h, in_w * in_c, out_w * out_c, op.window.stride_h, top, batches)


def _overlap_nhwc(e: Emit, x, y, in_h: int, out_h: int, in_row: int, out_row: int, stride: int, top: int,
                  batches: int) -> None:
    if batches != 1 or not out_h:
        return
    item = np.dtype(x.dtype.np).itemsize
    e.overlap(0, 0, row_lag(in_h, out_h, in_row * item, out_row * item, stride, top))


@emitter(Conv)
def onnx_conv(e: Emit) -> None:
    op: Conv = e.op
    x, y = e.input(0), e.output(0)
    if x.dtype != DatumType.F32:
        raise Unsupported(f"Conv on {x.dtype} (float32 only)")
    w = e.const_input(1, "the weights")
    if w.ndim not in (3, 4):
        raise Unsupported(f"a {w.ndim - 2}-D convolution (1-D and 2-D are compiled)")
    bias = e.const_input(2, "the bias").reshape(-1) if len(e.node.inputs) > 2 else None
    window = op._window(w.shape[2:])
    begins, _, out = window.concrete_pads(tuple(int(d) for d in x.shape[2:]))
    two_d = w.ndim == 4
    in_h, in_w = (x.shape[2], x.shape[3]) if two_d else (1, x.shape[2])
    out_h, out_w = (out[0], out[1]) if two_d else (1, out[0])
    k_h, k_w = (w.shape[2], w.shape[3]) if two_d else (1, w.shape[2])
    stride_h, stride_w = (window.strides[0], window.strides[1]) if two_d else (1, window.strides[0])
    dil_h, dil_w = (window.dilations[0], window.dilations[1]) if two_d else (1, window.dilations[0])
    top, left = (begins[0], begins[1]) if two_d else (0, begins[0])
    e.use(HEADER)
    low, high = fused_float_activation(e, op.activation, y)
    bias_name = e.constant("bias", bias.astype(np.float32)) if bias is not None else "NULL"
    filters, depth = w.shape[0], w.shape[1]
    groups = x.shape[1] // depth
    per_group = filters // groups
    taps = depth * k_h * k_w
    transposed = np.ascontiguousarray(w.astype(np.float32).reshape(groups, per_group, taps).transpose(0, 2, 1))
    col = e.scratch("col", DatumType.F32, taps)
    acc = e.scratch("acc", DatumType.F32, per_group)
    e.call("tl_conv_nchw_f32", x, e.constant("weights", transposed), bias_name, y, col, acc, x.shape[0], x.shape[1],
           in_h, in_w, filters, out_h, out_w, k_h, k_w, stride_h, stride_w, dil_h, dil_w, top, left, depth,
           np.float32(low), np.float32(high))
    finish_activation(e, op.activation, y)
