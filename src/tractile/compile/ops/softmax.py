"""Softmax: TFLite SOFTMAX (float; int8/uint8 with TFLite's fixed-point kernel, bit for bit:
the interpreter's own exp tables become constants) and ONNX Softmax/LogSoftmax (float)."""
from __future__ import annotations

import math

import numpy as np

from ...datum import DatumType
from ...ops.nn import Softmax as OnnxSoftmax
from ...ops.tfl.softmax import Softmax
from ..emit import Emit
from ..registry import Unsupported, emitter

HEADER = "tl_softmax.h"
KERNELS = {(DatumType.I8, DatumType.I8): "tl_softmax_s8_s8", (DatumType.I8, DatumType.I16): "tl_softmax_s8_s16",
           (DatumType.U8, DatumType.U8): "tl_softmax_u8_u8"}


@emitter(Softmax)
def tflite_softmax(e: Emit) -> None:
    op: Softmax = e.op
    x, y = e.input(0), e.output(0)
    depth = int(x.shape[-1]) if x.shape else 1
    rows = x.count // depth if depth else 0
    e.use(HEADER)
    if x.dtype == DatumType.F32:
        e.uses_math()
        e.call("tl_softmax_f32", x, y, rows, depth, 1, np.float32(op.beta), 0)
        return
    kernel = KERNELS.get((x.dtype, y.dtype))
    if kernel is None:
        raise Unsupported(f"SOFTMAX from {x.dtype} to {y.dtype}")
    exp_table, sum_table = op._tables
    status = e.failure("the softmax sum is out of the fixed-point range")
    e.uses_math()
    e.line(f"if ({kernel}({x.var}, {y.var}, {rows}, {depth}, {e.constant('exp', exp_table, DatumType.I32)}, "
           f"{e.constant('sums', sum_table, DatumType.I32)})) return {status};")
    e.set_kernel(kernel)
    x.used = y.used = True


@emitter(OnnxSoftmax)
def onnx_softmax(e: Emit) -> None:
    op: OnnxSoftmax = e.op
    x, y = e.input(0), e.output(0)
    if x.dtype != DatumType.F32:
        raise Unsupported(f"Softmax on {x.dtype} (float32 only)")
    shape = tuple(int(d) for d in x.shape)
    if not shape:
        raise Unsupported("Softmax of a scalar")
    axes = op._axes(len(shape))
    outer = math.prod(shape[:axes[0]])
    depth = math.prod(shape[a] for a in axes)
    inner = math.prod(shape[axes[-1] + 1:])
    e.use(HEADER)
    e.uses_math()
    e.call("tl_softmax_f32", x, y, outer, depth, inner, np.float32(1.0), int(op.log))
