"""Softmax and log-softmax: float along any axis (``beta`` included); quantized softmax over the
last axis with TFLite's fixed-point kernels, bit for bit (8-bit: the recipe's exp tables become
constants; int16: its interpolated tables; int8 log-softmax: tables and gemmlowp's fixed-point
log); L2 normalization (float, TFLite's int8 kernel)."""
from __future__ import annotations

import math

import numpy as np

from ...datum import DatumType
from ...ops.nn import Softmax
from ...ops.norm import LpNorm
from ...ops.quantized.common import recipe_of
from ...ops.quantized.fixedpoint import FP32, rounding_divide_by_pot
from ...ops.quantized.softmax import (
    ACCUMULATION_BITS,
    SCALED_DIFF_BITS,
    Int16SoftmaxRecipe,
    LogSoftmaxRecipe,
    SoftmaxRecipe,
)
from ..emit import Emit
from ..registry import Unsupported, emitter

HEADER = "tl_softmax.h"
KERNELS = {(DatumType.I8, DatumType.I8): "tl_softmax_s8_s8", (DatumType.I8, DatumType.I16): "tl_softmax_s8_s16",
           (DatumType.U8, DatumType.U8): "tl_softmax_u8_u8"}


@emitter(Softmax)
def softmax(e: Emit) -> None:
    op: Softmax = e.op
    x, y = e.input(0), e.output(0)
    shape = tuple(int(d) for d in x.shape)
    if not shape:
        raise Unsupported("Softmax of a scalar")
    e.use("tl_exp.h")
    e.use(HEADER)
    if op.quant is not None:
        quantized_softmax(e, recipe_of(op), shape)
        return
    if x.dtype != DatumType.F32:
        raise Unsupported(f"Softmax on {x.dtype} (float32 only)")
    axes = op._axes(len(shape))
    outer = math.prod(shape[:axes[0]])
    depth = math.prod(shape[a] for a in axes)
    inner = math.prod(shape[axes[-1] + 1:])
    e.uses_math()
    e.call("tl_softmax_f32", x, y, outer, depth, inner, np.float32(op.beta), int(op.log))


def quantized_softmax(e: Emit, recipe, shape: tuple) -> None:
    x, y = e.input(0), e.output(0)
    if isinstance(recipe, LogSoftmaxRecipe):
        quantized_log_softmax(e, recipe, shape)
        return
    if isinstance(recipe, Int16SoftmaxRecipe):
        depth = shape[-1]
        e.call("tl_softmax_s16", x, y, x.count // depth if depth else 0, depth, recipe.multiplier, recipe.shift,
               e.constant("exp", recipe.exp_table, DatumType.I16),
               e.constant("reciprocal", recipe.reciprocal_table, DatumType.I16))
        return
    kernel = KERNELS.get((x.dtype, y.dtype))
    if not isinstance(recipe, SoftmaxRecipe) or kernel is None:
        raise Unsupported(f"quantized {e.op.name} from {x.dtype} to {y.dtype}")
    depth = shape[-1]
    rows = x.count // depth if depth else 0
    status = e.failure("the softmax sum is out of the fixed-point range")
    e.uses_math()
    e.line(f"if ({kernel}({x.var}, {y.var}, {rows}, {depth}, {e.constant('exp', recipe.exp_table, DatumType.I32)}, "
           f"{e.constant('sums', recipe.sum_table, DatumType.I32)})) return {status};")
    e.set_kernel(kernel)
    x.used = y.used = True


def quantized_log_softmax(e: Emit, recipe: LogSoftmaxRecipe, shape: tuple) -> None:
    """TFLite's int8 LOG_SOFTMAX: the Q5.26 differences and their exps become tables."""
    x, y = e.input(0), e.output(0)
    differences = np.arange(-255, 1, dtype=np.int64)
    q5 = recipe.to_q5(differences)
    exps = np.where(differences >= recipe.diff_min, rounding_divide_by_pot(
        FP32.exp_on_negative_values(q5, SCALED_DIFF_BITS), ACCUMULATION_BITS), 0)
    depth = shape[-1]
    e.call("tl_log_softmax_s8", x, y, x.count // depth if depth else 0, depth, e.constant("q5", q5, DatumType.I32),
           e.constant("exps", exps, DatumType.I32), recipe.diff_min, int(recipe.reverse.multipliers[0]),
           int(recipe.reverse.shifts[0]))


@emitter(LpNorm)
def l2_normalization(e: Emit) -> None:
    """L2 normalization over the last axis: float (norms below ``epsilon`` count as it), and
    TFLite's int8 kernel (fixed-point inverse square root, output scale 1/128)."""
    op: LpNorm = e.op
    x, y = e.input(0), e.output(0)
    shape = tuple(int(d) for d in x.shape)
    if op.p != 2 or not shape or op.axis % len(shape) != len(shape) - 1:
        raise Unsupported(f"{op.name}: only L2 norms over the last axis are compiled")
    depth = shape[-1]
    rows = x.count // depth if depth else 0
    e.use("tl_norm.h")
    if op.quant is not None:
        if x.dtype != DatumType.I8:
            raise Unsupported(f"quantized {op.name} on {x.dtype}")
        e.call("tl_l2norm_s8", x, y, rows, depth, recipe_of(op).zi)
        return
    if x.dtype != DatumType.F32:
        raise Unsupported(f"{op.name} on {x.dtype}")
    e.uses_math()
    e.call("tl_l2norm_f32", x, y, rows, depth, np.float32(op.epsilon))
