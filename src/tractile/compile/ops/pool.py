"""Pooling: TFLite AVERAGE_POOL_2D and MAX_POOL_2D on NHWC tensors (float and int8), with
the kernels of ``tl_pool.h``."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.tfl.common import activation_range
from ...ops.tfl.pool import Pool2D
from ..emit import Emit
from ..registry import Unsupported, emitter
from .fused import TFLITE_CLAMPS

HEADER = "tl_pool.h"


@emitter(Pool2D)
def pool2d(e: Emit) -> None:
    op: Pool2D = e.op
    x, y = e.input(0), e.output(0)
    if op.kind not in ("average", "max"):
        raise Unsupported(f"{op.kind} pooling (average and max are compiled)")
    batches, in_h, in_w, channels = x.shape
    (out_h, top, _), (out_w, left, _) = op.window.geometry(in_h, in_w, op.filter_h, op.filter_w)
    if x.dtype == DatumType.F32:
        if op.activation not in TFLITE_CLAMPS:
            raise Unsupported(f"the fused activation {op.activation} on a pooling")
        low, high = (np.float32(v) for v in TFLITE_CLAMPS[op.activation])
        suffix = "f32"
    elif x.dtype == DatumType.I8:
        low, high = activation_range(op.activation, op.oq(0), x.dtype)
        suffix = "s8"
    else:
        raise Unsupported(f"pooling on {x.dtype} (float32 and int8 are compiled)")
    e.use(HEADER)
    e.call(f"tl_{'avg' if op.kind == 'average' else 'max'}_pool_nhwc_{suffix}", x, y, batches, in_h, in_w, channels,
           out_h, out_w, op.filter_h, op.filter_w, op.window.stride_h, op.window.stride_w, top, left, low, high)
