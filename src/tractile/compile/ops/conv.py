"""The core Conv on NHWC tensors: TFLite's CONV_2D and DEPTHWISE_CONV_2D (float, int8 per channel,
int16x8), and ONNX's float convolutions (1-D and 2-D, groups, dilations), which the compiler
makes NHWC (``compile/layout.py``); the NHWC ConvTranspose (TFLite's TRANSPOSE_CONV). Kernels
in ``tl_conv.h``; a
1×1 NHWC convolution with stride 1 runs as a dense layer over the pixels (``tl_fully_connected.h``).

Outputs of the NHWC kernels are written pixel after pixel, each after every input it reads,
so an output may overlap its dying input when it trails it far enough: :func:`row_lag` gives
that distance, and the memory planner uses it (depthwise convolutions in place, pointwise
ones over their input: the MCUNet/TinyEngine technique).
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.conv import Conv
from ...ops.conv_nhwc import is_depthwise, to_ohwi
from ...ops.conv_transpose import ConvTranspose
from ...ops.conv_transpose_nhwc import to_ohwi as to_ohwi_transposed
from ...ops.quantized.common import recipe_of
from ...ops.quantized.conv import ConvQuant
from ..emit import Emit
from ..registry import Unsupported, emitter
from . import conv_dsp, conv_gemm, conv_one, host_dw, host_gemm, host_wino
from .dense import requant_constants
from .fused import finish_activation, fused_float_activation

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


def geometry(op, x_shape, k_h: int, k_w: int) -> tuple:
    """(window, out_h, out_w, top, left) of an NHWC convolution over an input of ``x_shape``."""
    window = op.window.for_kernel((k_h, k_w))
    begins, _, out = window.concrete_pads((int(x_shape[1]), int(x_shape[2])))
    return window, out[0], out[1], begins[0], begins[1]


def window_args(window, top: int, left: int) -> tuple:
    return (*window.kernel, *window.strides, *window.dilations, top, left)


def quantized_numbers(e: Emit, x_dtype: DatumType) -> tuple:
    """(multipliers, shifts, x_offset, zero, low, high) of an integer convolution, from the
    recipe the interpreter prepares."""
    if x_dtype not in (DatumType.I8, DatumType.I16):
        raise Unsupported(f"a convolution on {x_dtype} (float32, int8 and int16x8 are compiled)")
    recipe: ConvQuant = recipe_of(e.op)
    if x_dtype == DatumType.I16 and not recipe.wide:
        raise Unsupported("int16 convolutions with int32 biases (int64 biases are compiled)")
    return recipe.requant.multipliers, recipe.requant.shifts, -recipe.x_zero, recipe.zero, recipe.low, recipe.high


def quantized_args(e: Emit, x_dtype: DatumType, channels: int):
    """(multiplier, shift, per_channel, x_offset, zero, low, high) of an integer convolution,
    the multipliers and shifts as constant arrays."""
    multipliers, shifts, x_offset, zero, low, high = quantized_numbers(e, x_dtype)
    multiplier, shift, per_channel = requant_constants(e, multipliers, shifts, channels)
    return multiplier, shift, per_channel, x_offset, zero, low, high


def offset_weights(e: Emit, w: np.ndarray) -> np.ndarray:
    offset = w.astype(np.int64) - recipe_of(e.op).w_zero
    if offset.min(initial=0) < -128 or offset.max(initial=0) > 127:
        raise Unsupported("int8 weights with a zero point (offset weights leave the int8 range)")
    return offset


@emitter(Conv)
def conv(e: Emit) -> None:
    """An NHWC Conv (TFLite's, and ONNX's once the compiler made it NHWC; float, int8, int16x8)
    with a depthwise (HWIO, one input channel per group) or a dense kernel."""
    op: Conv = e.op
    if op.data_format != "NHWC":
        raise Unsupported(f"a Conv on {op.data_format} {len(e.input(0).shape) - 2}-D tensors (NHWC 2-D is compiled; "
                          "the compiler makes float NCHW 1-D and 2-D convolutions with constant weights NHWC)")
    if op.quant is not None and op.flavour == "onnxruntime":
        from . import onnxruntime

        onnxruntime.conv(e)
        return
    if op.quant is None and e.input_fact(1).dtype == DatumType.I8:
        from .hybrid import hybrid_conv

        hybrid_conv(e)
        return
    w_shape = e.input_fact(1).shape
    if op.kernel_format == "HWIO" and is_depthwise(op, int(e.input_fact(0).shape[3]), w_shape):
        depthwise_conv2d(e)
    elif op.quant is not None and op.group != 1:
        raise Unsupported("grouped integer convolutions (groups of several channels)")
    else:
        conv2d(e)


def conv2d(e: Emit) -> None:
    op: Conv = e.op
    x, y = e.input(0), e.output(0)
    w = np.ascontiguousarray(to_ohwi(e.const_input(1, "the weights"), op.kernel_format))
    bias = e.const_input(2, "the bias").reshape(-1) if len(e.node.inputs) > 2 else None
    filters, k_h, k_w, depth = w.shape
    batches, in_h, in_w, in_c = x.shape
    window, out_h, out_w, top, left = geometry(op, x.shape, k_h, k_w)
    pointwise = k_h == k_w == 1 and window.strides == (1, 1) and depth == in_c
    if in_c == 1 and conv_one.conv2d(e, x, y, w, bias, window, out_h, out_w, top, left):
        return
    if host_wino.conv2d(e, x, y, w, bias, window, out_h, out_w, top, left):
        return
    if host_gemm.conv2d(e, x, y, w, bias, window, out_h, out_w, top, left):
        return
    if x.dtype == DatumType.F32:
        e.use(HEADER)
        low, high = fused_float_activation(e, op.activation, y)
        bias_name = e.constant("bias", bias.astype(np.float32)) if bias is not None else "NULL"
        groups = in_c // depth
        per_group = filters // groups
        transposed = w.astype(np.float32).reshape(groups, per_group, k_h, k_w, depth).transpose(0, 2, 3, 4, 1)
        e.call("tl_conv_nhwc_f32", x, e.constant("weights", np.ascontiguousarray(transposed)), bias_name, y, batches,
               in_h, in_w, in_c, out_h, out_w, filters, *window_args(window, top, left), depth, np.float32(low),
               np.float32(high), e.scratch("acc", DatumType.F32, per_group))
        finish_activation(e, op.activation, y)
        _overlap_nhwc(e, x, y, in_h, out_h, in_w * in_c, out_w * filters, window.strides[0], top, batches)
        return
    if op.quant is None:
        raise Unsupported(f"an NHWC convolution on {x.dtype} without quantization")
    offset = offset_weights(e, w)
    sums = offset.reshape(filters, -1).sum(axis=1)
    raw_bias = np.zeros(filters, np.int64) if bias is None else bias.astype(np.int64)
    ahead = conv_gemm.emit_conv(e, x, y, offset, raw_bias, quantized_numbers(e, x.dtype), (
        batches, in_h, in_w, in_c, out_h, out_w, filters, *window_args(window, top, left), depth))
    if ahead is not None:
        if pointwise and batches * in_h * in_w > 0:
            e.overlap(0, 0, pixel_lag(batches * in_h * in_w, in_c, filters) + ahead * filters)
        elif not pointwise:
            _overlap_nhwc(e, x, y, in_h, out_h, in_w * in_c, out_w * filters, window.strides[0], top, batches)
        return
    if pointwise and x.dtype == DatumType.I8 and conv_dsp.emit_pointwise(
            e, x, y, offset, raw_bias, quantized_numbers(e, x.dtype), in_c):
        if batches * in_h * in_w > 0:
            e.overlap(0, 0, pixel_lag(batches * in_h * in_w, in_c, filters))
        return
    multiplier, shift, per_channel, x_offset, zero, low, high = quantized_args(e, x.dtype, filters)
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
           out_h, out_w, filters, *window_args(window, top, left), depth, x_offset, multiplier, shift,
           per_channel, zero, low, high)
    _overlap_nhwc(e, x, y, in_h, out_h, in_w * in_c, out_w * filters, window.strides[0], top, batches)


def depthwise_conv2d(e: Emit) -> None:
    op: Conv = e.op
    x, y = e.input(0), e.output(0)
    w = e.const_input(1, "the weights")  # [KH, KW, 1, C*M]
    bias = e.const_input(2, "the bias").reshape(-1) if len(e.node.inputs) > 2 else None
    k_h, k_w, _, out_c = w.shape
    taps = w.reshape(k_h, k_w, out_c)
    batches, in_h, in_w, in_c = x.shape
    multiplier_c = out_c // in_c
    window, out_h, out_w, top, left = geometry(op, x.shape, k_h, k_w)
    if in_c == 1 and (op.quant is None or not np.any(recipe_of(op).w_zero)) and host_gemm.conv2d(
            e, x, y, np.ascontiguousarray(taps.transpose(2, 0, 1)[..., None]), bias, window, out_h, out_w, top, left):
        return  # one input channel: an ordinary convolution of out_c filters (micro_speech's)
    if (host_gemm.depthwise(e, x, y, taps, bias, window, out_h, out_w, top, left)
            or host_dw.depthwise_f32(e, x, y, taps, bias, window, out_h, out_w, top, left)):
        return
    shape_args = (batches, in_h, in_w, in_c, out_h, out_w, multiplier_c, *window_args(window, top, left))
    e.use(HEADER)
    if x.dtype == DatumType.F32:
        low, high = fused_float_activation(e, op.activation, y)
        bias_name = e.constant("bias", bias.astype(np.float32)) if bias is not None else "NULL"
        e.call("tl_dwconv_nhwc_f32", x, e.constant("weights", taps.astype(np.float32)), bias_name, y,
               e.scratch("acc", DatumType.F32, out_c), *shape_args, np.float32(low), np.float32(high))
        finish_activation(e, op.activation, y)
    else:
        if op.quant is None:
            raise Unsupported(f"an NHWC convolution on {x.dtype} without quantization")
        offset = offset_weights(e, taps)
        raw_bias = np.zeros(out_c, np.int64) if bias is None else bias.astype(np.int64)
        wide = x.dtype == DatumType.I16
        if not wide and conv_dsp.emit_depthwise(e, x, y, offset, raw_bias, quantized_numbers(e, x.dtype),
                                                shape_args):
            _overlap_nhwc(e, x, y, in_h, out_h, in_w * in_c, out_w * out_c, window.strides[0], top, batches)
            return
        multiplier, shift, per_channel, x_offset, zero, low, high = quantized_args(e, x.dtype, out_c)
        acc_type = DatumType.I64 if wide else DatumType.I32
        e.call(f"tl_dwconv_nhwc_{'s16' if wide else 's8'}", x, e.constant("weights", offset, DatumType.I8),
               e.constant("bias", raw_bias, acc_type), y, e.scratch("acc", acc_type, out_c), *shape_args, x_offset,
               multiplier, shift, per_channel, zero, low, high)
    _overlap_nhwc(e, x, y, in_h, out_h, in_w * in_c, out_w * out_c, window.strides[0], top, batches)


@emitter(ConvTranspose)
def transpose_conv(e: Emit) -> None:
    """TFLite's TRANSPOSE_CONV (NHWC, OHWI weights): float32, int8, int16 with an int64 bias."""
    op: ConvTranspose = e.op
    if op.data_format != "NHWC" or op.shape_input or op.group != 1:
        raise Unsupported("ConvTranspose other than TFLite's (NHWC, a constant output shape, one group)")
    x, y = e.input(0), e.output(0)
    w = np.ascontiguousarray(to_ohwi_transposed(e.const_input(1, "the weights"), op.kernel_format))
    bias = e.const_input(2, "the bias").reshape(-1) if len(e.node.inputs) > 2 else None
    filters, k_h, k_w, depth = w.shape
    batches, in_h, in_w, in_c = x.shape
    window = op.window.for_kernel((k_h, k_w))
    if any(d != 1 for d in window.dilations):
        raise Unsupported("a dilated ConvTranspose")
    begins, (out_h, out_w) = op._geometry((int(in_h), int(in_w)), (k_h, k_w))
    if min(begins) < 0:
        raise Unsupported("a ConvTranspose whose output starts before its full result")
    geometry = (batches, in_h, in_w, in_c, out_h, out_w, filters, k_h, k_w, *window.strides, begins[0], begins[1])
    e.use(HEADER)
    if x.dtype == DatumType.F32:
        low, high = fused_float_activation(e, op.activation, y)
        bias_name = e.constant("bias", bias.astype(np.float32)) if bias is not None else "NULL"
        e.call("tl_tconv_nhwc_f32", x, e.constant("weights", w.astype(np.float32)), bias_name, y, *geometry,
               np.float32(low), np.float32(high))
        finish_activation(e, op.activation, y)
        return
    if op.quant is None:
        raise Unsupported(f"a ConvTranspose on {x.dtype} without quantization")
    multiplier, shift, per_channel, x_offset, zero, low, high = quantized_args(e, x.dtype, filters)
    wide = x.dtype == DatumType.I16
    raw_bias = np.zeros(filters, np.int64) if bias is None else bias.astype(np.int64)
    e.call(f"tl_tconv_nhwc_{'s16' if wide else 's8'}", x, e.constant("weights", offset_weights(e, w), DatumType.I8),
           e.constant("bias", raw_bias, DatumType.I64 if wide else DatumType.I32), y, *geometry, x_offset, multiplier,
           shift, per_channel, zero, low, high)


def _overlap_nhwc(e: Emit, x, y, in_h: int, out_h: int, in_row: int, out_row: int, stride: int, top: int,
                  batches: int) -> None:
    if batches != 1 or not out_h:
        return
    item = np.dtype(x.dtype.np).itemsize
    e.overlap(0, 0, row_lag(in_h, out_h, in_row * item, out_row * item, stride, top))
