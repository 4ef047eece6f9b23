"""Matrix products: the core MatMul by constant weights (ONNX MatMul, TFLite FULLY_CONNECTED:
float, int8, uint8, 16x8, both integer flavours, hybrid) lowers to the kernels of
``tl_fully_connected.h`` (hybrid: ``tl_hybrid.h``); products of two computed operands (ONNX
MatMul, TFLite BATCH_MATMUL) to ``tl_matmul_f32`` and ``tl_matmul.h``'s integer kernels.
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.matmul import MatMul
from ...ops.quantized.common import is_quantized, recipe_of, scale_of, scales_of, zero_of
from ...ops.quantized.dense import IntegerDense, IntegerRescale
from ...ops.quantized.fixedpoint import wrap32
from ..emit import Emit
from ..registry import Unsupported, emitter
from . import conv_gemm, host_gemm
from .fused import finish_activation, fused_float_activation

HEADER = "tl_fully_connected.h"


def integer_flavour(e: Emit, flavour: str) -> str:
    """The flavour integer kernels follow: the target's when it imposes one, else the op's."""
    if flavour == "onnxruntime":  # a model's own arithmetic, which no target changes
        return flavour
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


def _units_bias(e: Emit, units: int, dtype=np.float32):
    """The bias of a MatMul as one value per output column (None without a bias)."""
    if not e.op.has_bias:
        return None
    bias = np.asarray(e.const_input(2, "the bias"), dtype=dtype)
    if bias.size == units and (bias.ndim == 0 or bias.shape[-1] == units) or bias.size == 1:
        return np.broadcast_to(bias.reshape(-1), (units,))
    raise Unsupported(f"a bias of shape {bias.shape} that is not one value per output column")


def constant_weights(e: Emit) -> np.ndarray | None:
    """The constant 2-d weights of a MatMul as (depth, units), or None."""
    op: MatMul = e.op
    weights = e.const_value(1)
    if weights is None or weights.ndim != 2 or op.transpose_a:
        return None
    return weights.T if op.transpose_b else weights


@emitter(MatMul)
def matmul(e: Emit) -> None:
    op: MatMul = e.op
    a, b, y = e.input(0), e.input(1), e.output(0)
    if op.quant is not None:
        if constant_weights(e) is None:
            quantized_batch_matmul(e)
        else:
            quantized_dense(e)
        return
    if a.dtype == DatumType.F32 and b.dtype == DatumType.I8:
        from .hybrid import hybrid_dense

        hybrid_dense(e)
        return
    if a.dtype != DatumType.F32:
        raise Unsupported(f"MatMul on {a.dtype} (float32 only)")
    e.use(HEADER)
    low, high = fused_float_activation(e, op.activation, y)
    weights = constant_weights(e)
    if weights is not None:
        depth, units = weights.shape
        batches = a.count // depth if depth else 0
        bias = _units_bias(e, units)
        bias_name = e.constant("bias", bias) if bias is not None else "NULL"
        if host_gemm.dense_f32(e, a, y, weights, bias_name, batches, low, high):
            return
        e.call("tl_dense_f32", a, e.constant("weights", np.ascontiguousarray(weights.astype(np.float32))),
               bias_name, y, batches, depth, units, np.float32(low), np.float32(high))
        finish_activation(e, op.activation, y)
        return
    if op.has_bias or op.activation is not None:
        raise Unsupported("a fused bias or activation on a product of two computed operands")
    a_shape, b_shape, a_index, b_index = batch_layout(e)
    rows, depth, cols = a_shape[-2], a_shape[-1], b_shape[-1]
    a_offsets = e.constant("a_offsets", (a_index * rows * depth).astype(np.int32))
    b_offsets = e.constant("b_offsets", (b_index * depth * cols).astype(np.int32))
    if op.transpose_a or op.transpose_b:
        e.use("tl_matmul.h")
        e.call("tl_matmul_f32_strided", a, b, y, int(a_index.size), a_offsets, b_offsets, rows, depth, cols,
               *_strides(op, rows, depth, cols))
        return
    e.call("tl_matmul_f32", a, b, y, int(a_index.size), a_offsets, b_offsets, rows, depth, cols)


def _strides(op: MatMul, rows: int, depth: int, cols: int) -> tuple[int, int, int, int]:
    """Where a[m][k] (m * a_row + k * a_col) and b[k][n] (k * b_row + n * b_col) are, transposed
    operands read in place."""
    a_row, a_col = (1, rows) if op.transpose_a else (depth, 1)
    b_row, b_col = (1, depth) if op.transpose_b else (cols, 1)
    return a_row, a_col, b_row, b_col


def batch_layout(e: Emit) -> tuple[tuple, tuple, np.ndarray, np.ndarray]:
    """The operands' shapes (as multiplied: transposed, 1-d promoted) and, per product of the
    broadcast batch, the index of each operand's matrix."""
    op: MatMul = e.op
    a_shape, b_shape = op.operand_shapes(tuple(e.input(0).shape), tuple(e.input(1).shape))
    a_shape = (1, *a_shape) if len(a_shape) == 1 else a_shape
    b_shape = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    batch_shape = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    a_index = np.broadcast_to(np.arange(int(np.prod(a_shape[:-2], dtype=np.int64))).reshape(a_shape[:-2] or ()),
                              batch_shape).reshape(-1)
    b_index = np.broadcast_to(np.arange(int(np.prod(b_shape[:-2], dtype=np.int64))).reshape(b_shape[:-2] or ()),
                              batch_shape).reshape(-1)
    return a_shape, b_shape, a_index, b_index


def quantized_dense(e: Emit) -> None:
    """A quantized product by constant weights: TFLite's FULLY_CONNECTED kernels."""
    op: MatMul = e.op
    x, y = e.input(0), e.output(0)
    weights = constant_weights(e)
    assert weights is not None
    w = np.ascontiguousarray(weights.T)
    units, depth = w.shape
    bias = e.const_input(2, "the bias") if op.has_bias else None
    batches = x.count // depth if depth else 0
    e.use(HEADER)
    if not is_quantized(x.dtype):
        raise Unsupported(f"a quantized MatMul on {x.dtype} inputs")
    flavour = integer_flavour(e, op.flavour)
    recipe = recipe_of(op)
    x_q, w_q = e.input_fact(0).qparams, e.input_fact(1).qparams
    assert x_q is not None and w_q is not None and op.quant is not None  # the recipe checked them
    kernel = IntegerDense(x_q, w_q, op.quant, x.dtype, w, bias, recipe.low, recipe.high, flavour)
    if flavour == "onnxruntime":
        from . import onnxruntime

        onnxruntime.dense(e, kernel, units, depth, batches)
        return
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
    if x.dtype == DatumType.I8 and host_gemm.dense_s8(e, kernel, weight_offset, batches, flavour):
        return
    folded = np.asarray(kernel.bias, dtype=np.int64)
    if name == "tl_fc_s8" and flavour != "reference" and conv_gemm.usable(e, x.dtype):
        conv_gemm.emit_dense(e, x, y, weight_offset, wrap32(folded), batches, (
            kernel.rescale.multiplier, kernel.rescale.shift, kernel.zero, kernel.low, kernel.high))
        return
    weights_name = e.constant("weights", np.ascontiguousarray(weight_offset), weight_type)
    # int32 accumulators wrap modulo 2^32 (TFLite's, the interpreter's, the kernels'): so may the folded bias
    total_bias = e.constant("bias", wrap32(folded) if bias_type == DatumType.I32 else folded, bias_type)
    if flavour == "reference":
        scale, per_channel = per_channel_values(e, "scale", kernel.rescale.scale, DatumType.F64)
        e.call(name + suffix, x, weights_name, total_bias, y, batches, depth, units, scale, per_channel,
               kernel.zero, kernel.low, kernel.high)
        return
    multiplier, shift, per_channel = requant_constants(e, kernel.rescale.multiplier, kernel.rescale.shift, units)
    e.call(name, x, weights_name, total_bias, y, batches, depth, units, multiplier, shift, per_channel,
           kernel.zero, kernel.low, kernel.high)


def quantized_batch_matmul(e: Emit) -> None:
    """A quantized product of two computed operands: TFLite's int8/int16 BATCH_MATMUL."""
    op: MatMul = e.op
    a, b, y = e.input(0), e.input(1), e.output(0)
    if a.dtype not in (DatumType.I8, DatumType.I16) or b.dtype != a.dtype:
        raise Unsupported(f"a quantized product of {a.dtype} and {b.dtype} computed operands (int8, int16)")
    if op.has_bias:
        raise Unsupported("a bias on a quantized product of two computed operands")
    recipe = recipe_of(op)
    a_q, b_q = e.input_fact(0).qparams, e.input_fact(1).qparams
    assert a_q is not None and b_q is not None and op.quant is not None  # the recipe checked them
    if len(b_q.scale) > 1:
        raise Unsupported("per-channel quantization of a computed operand")
    rescale = IntegerRescale(scale_of(a_q), scales_of(b_q), scale_of(op.quant), False, "micro")
    a_shape, b_shape, a_index, b_index = batch_layout(e)
    rows, depth, cols = a_shape[-2], a_shape[-1], b_shape[-1]
    if a.dtype == DatumType.I8 and depth * 256 * 256 >= 1 << 31:
        raise Unsupported(f"an int8 product over {depth} values may leave the int32 accumulator")
    e.use("tl_matmul.h")
    e.call("tl_matmul_s8" if a.dtype == DatumType.I8 else "tl_matmul_s16", a, b, y, int(a_index.size),
           e.constant("a_offsets", (a_index * rows * depth).astype(np.int32)),
           e.constant("b_offsets", (b_index * depth * cols).astype(np.int32)), rows, depth, cols,
           *_strides(op, rows, depth, cols), -zero_of(a_q), -zero_of(b_q), rescale.multiplier, rescale.shift,
           zero_of(op.quant), recipe.low, recipe.high)
