"""Ops with memory across invocations: TFLite SVDF (float, int8 with an int8 or int16 memory).
The memory lives in the context (``NAME_reset`` restores its initial value), as TFLite's
variable tensors do; kernels in ``tl_svdf.h``."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.tfl.common import integer_limits, zero_of
from ...ops.tfl.svdf import Svdf
from ..emit import Emit
from ..registry import Unsupported, emitter
from .fused import TFLITE_CLAMPS

HEADER = "tl_svdf.h"


@emitter(Svdf)
def svdf(e: Emit) -> None:
    op: Svdf = e.op
    x, y = e.input(0), e.output(0)
    features = e.const_input(1, "the feature weights")
    times = e.const_input(2, "the time weights")
    bias = e.const_input(3, "the bias").reshape(-1) if op.has_bias else None
    batches, depth = x.shape
    filters, memory_size = times.shape
    initial = np.asarray(op.initial_state)
    e.use(HEADER)
    if x.dtype == DatumType.F32:
        if op.activation not in TFLITE_CLAMPS:
            raise Unsupported(f"SVDF with the fused activation {op.activation}")
        memory = e.state("memory", DatumType.F32, initial.size, initial.reshape(-1).astype(np.float32))
        low, high = (np.float32(v) for v in TFLITE_CLAMPS[op.activation])
        e.call("tl_svdf_f32", x, e.constant("features", features.astype(np.float32)),
               e.constant("times", times.astype(np.float32)),
               e.constant("bias", bias.astype(np.float32)) if bias is not None else "NULL", memory, y, batches, depth,
               filters, memory_size, op.rank, low, high)
        return
    state_dtype = DatumType.from_numpy(initial.dtype)
    if x.dtype != DatumType.I8 or state_dtype not in (DatumType.I8, DatumType.I16) or y.dtype != DatumType.I8:
        raise Unsupported(f"SVDF on {x.dtype} with a {state_dtype} memory (int8 with int8 or int16 memory)")
    first, second = op._scales
    low, high = integer_limits(y.dtype)
    memory = e.state("memory", state_dtype, initial.size, initial.reshape(-1))
    e.call("tl_svdf_s8" if state_dtype == DatumType.I8 else "tl_svdf_s16", x,
           e.constant("features", features, DatumType.I8), e.constant("times", times, DatumType.I8),
           e.constant("bias", bias.astype(np.int64), DatumType.I32) if bias is not None else "NULL", memory, y,
           batches, depth, filters, memory_size, op.rank, zero_of(op.iq(0)), zero_of(op.state_q),
           int(first.multipliers[0]), int(first.shifts[0]), int(second.multipliers[0]), int(second.shifts[0]),
           zero_of(op.oq(0)), low, high)
