"""Dense layers: TFLite FULLY_CONNECTED (float, int8, uint8, 16x8; both integer flavours) and
ONNX MatMul (with fused bias and activation). Both lower to the kernels of
``tl_fully_connected.h``: one kernel per computation, whatever the front end.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...datum import DatumType
from ...ops.matmul import MatMul
from ...ops.tfl.common import is_quantized
from ...ops.tfl.dense import FullyConnected, IntegerDense
from ...ops.tfl.fixedpoint import wrap32
from ..emit import Emit
from ..registry import Unsupported, emitter
from .fused import finish_activation, finish_tflite_activation, fused_float_activation, tflite_float_activation

HEADER = "tl_fully_connected.h"


def integer_flavour(e: Emit, flavour: str) -> str:
    """The flavour integer kernels follow: the target's when it imposes one, else the op's."""
    flavour = e.target.flavour or flavour
    if flavour == "reference" and e.target.double_bits < 64:
        raise Unsupported("TFLite's reference flavour rescales in double precision, which this target lacks; "
                          "load the model with flavour='micro'")
    return flavour


def requant_constants(e: Emit, multipliers, shifts, channels: int) -> tuple[str, str, int]:
    """The multiplier and shift arrays of a requantization (one value each when uniform, else
    one per channel for both) and the per-channel stride the kernels index them with."""
    multipliers, shifts = np.atleast_1d(np.asarray(multipliers)), np.atleast_1d(np.asarray(shifts))
    if np.all(multipliers == multipliers[0]) and np.all(shifts == shifts[0]):
        return (e.constant("multiplier", multipliers[:1], DatumType.I32),
                e.constant("shift", shifts[:1], DatumType.I32),
                0)
    return (e.constant("multiplier", np.broadcast_to(multipliers, (channels,)), DatumType.I32),
            e.constant("shift", np.broadcast_to(shifts, (channels,)), DatumType.I32), 1)


def per_channel_values(e: Emit, role: str, values, dtype: DatumType) -> tuple[str, int]:
    """A constant array of per-channel values (or of one value); its name and the channel stride."""
    array = np.atleast_1d(np.asarray(values))
    if array.size > 1 and np.all(array == array[0]):
        array = array[:1]
    return e.constant(role, array, dtype), int(array.size > 1)


@emitter(FullyConnected)
def fully_connected(e: Emit) -> None:
    op: FullyConnected = e.op
    x, y = e.input(0), e.output(0)
    w = e.const_input(1, "the weights")
    bias = e.const_input(2, "the bias") if op.has_bias else None
    units, depth = w.shape
    batches = x.count // depth if depth else 0
    e.use(HEADER)
    if x.dtype == DatumType.F32:
        low, high = tflite_float_activation(e, op.activation, y)
        weights = e.constant("weights", np.ascontiguousarray(w.astype(np.float32).T))
        bias_name = e.constant("bias", bias.reshape(-1).astype(np.float32)) if bias is not None else "NULL"
        e.call("tl_dense_f32", x, weights, bias_name, y, batches, depth, units, np.float32(low), np.float32(high))
        finish_tflite_activation(e, op.activation, y)
        return
    if not is_quantized(x.dtype):
        raise Unsupported(f"FULLY_CONNECTED on {x.dtype} inputs")
    flavour = integer_flavour(e, op.flavour)
    kernel = IntegerDense(dataclasses.replace(op, flavour=flavour), x.dtype, w, bias)
    weight_offset = np.rint(kernel.weights_t.T).astype(np.int64)
    suffix = "_ref" if flavour == "reference" else ""
    if x.dtype == DatumType.I8:
        name, weight_type, bias_type = "tl_fc_s8", DatumType.I8, DatumType.I32
    elif x.dtype == DatumType.U8:
        name, weight_type, bias_type = "tl_fc_u8", DatumType.I16, DatumType.I32
    else:
        name, weight_type, bias_type = "tl_fc_s16", DatumType.I8, DatumType.I64
    if weight_type == DatumType.I8 and (weight_offset.min(initial=0) < -128 or weight_offset.max(initial=0) > 127):
        raise Unsupported("int8 weights with a zero point (offset weights leave the int8 range)")
    weights = e.constant("weights", np.ascontiguousarray(weight_offset), weight_type)
    folded = np.asarray(kernel.bias, dtype=np.int64)
    # int32 accumulators wrap modulo 2^32 (TFLite's, the interpreter's, the kernels'): so may the folded bias
    total_bias = e.constant("bias", wrap32(folded) if bias_type == DatumType.I32 else folded, bias_type)
    if flavour == "reference":
        scale, per_channel = per_channel_values(e, "scale", kernel.rescale.scale, DatumType.F64)
        e.call(name + suffix, x, weights, total_bias, y, batches, depth, units, scale, per_channel,
               kernel.zero, kernel.low, kernel.high)
        return
    multiplier, shift, per_channel = requant_constants(e, kernel.rescale.multiplier, kernel.rescale.shift, units)
    e.call(name, x, weights, total_bias, y, batches, depth, units, multiplier, shift, per_channel,
           kernel.zero, kernel.low, kernel.high)


@emitter(MatMul)
def matmul(e: Emit) -> None:
    op: MatMul = e.op
    a, b, y = e.input(0), e.input(1), e.output(0)
    if a.dtype != DatumType.F32:
        raise Unsupported(f"MatMul on {a.dtype} (float32 only)")
    e.use(HEADER)
    low, high = fused_float_activation(e, op.activation, y)
    weights = e.const_value(1)
    if weights is not None and weights.ndim == 2:
        depth, units = weights.shape
        batches = a.count // depth if depth else 0
        bias_name = "NULL"
        if op.has_bias:
            bias = np.asarray(e.const_input(2, "the bias"), dtype=np.float32)
            if bias.size == units and (bias.ndim == 0 or bias.shape[-1] == units or bias.size == 1):
                bias_name = e.constant("bias", np.broadcast_to(bias.reshape(-1), (units,)))
            else:
                raise Unsupported(f"a bias of shape {bias.shape} that is not one value per output column")
        e.call("tl_dense_f32", a, e.constant("weights", np.ascontiguousarray(weights.astype(np.float32))),
               bias_name, y, batches, depth, units, np.float32(low), np.float32(high))
        finish_activation(e, op.activation, y)
        return
    if op.has_bias or op.activation is not None:
        raise Unsupported("a fused bias or activation on a product of two computed operands")
    a_shape = (1, *a.shape) if len(a.shape) == 1 else a.shape
    b_shape = (*b.shape, 1) if len(b.shape) == 1 else b.shape
    rows, depth, cols = a_shape[-2], a_shape[-1], b_shape[-1]
    batch_shape = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    a_index = np.broadcast_to(np.arange(int(np.prod(a_shape[:-2], dtype=np.int64))).reshape(a_shape[:-2] or ()),
                              batch_shape).reshape(-1)
    b_index = np.broadcast_to(np.arange(int(np.prod(b_shape[:-2], dtype=np.int64))).reshape(b_shape[:-2] or ()),
                              batch_shape).reshape(-1)
    a_offsets = e.constant("a_offsets", (a_index * rows * depth).astype(np.int32))
    b_offsets = e.constant("b_offsets", (b_index * depth * cols).astype(np.int32))
    e.call("tl_matmul_f32", a, b, y, int(a_index.size), a_offsets, b_offsets, rows, depth, cols)
