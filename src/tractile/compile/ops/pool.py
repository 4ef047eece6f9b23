"""Pooling: the core MaxPool and AveragePool on NHWC tensors (TFLite's, and ONNX's made NHWC at
compile time; float, int8 and int16), L2 pooling, GlobalAveragePool/GlobalMaxPool, and the
streamed EdgeAveragePool, with the kernels of ``tl_pool.h``."""
from __future__ import annotations

import math

import numpy as np

from ...datum import DatumType
from ...ops.pool import AveragePool, GlobalPool, LpPool, MaxPool
from ...ops.quantized.conv import clamp_of
from ...ops.stream import EdgeAveragePool
from ..emit import Emit
from ..registry import Unsupported, emitter
from . import host_dw, pool_dsp
from .fused import clamp_bounds

HEADER = "tl_pool.h"


@emitter(MaxPool, AveragePool)
def pool(e: Emit) -> None:
    """AVERAGE_POOL_2D and MAX_POOL_2D on NHWC tensors (float32 with dilations, int8, int16;
    padding taps skipped): TFLite's, and ONNX's once the compiler made them NHWC
    (``compile/layout.py``, which pads what count_include_pad counts)."""
    op = e.op
    x, y = e.input(0), e.output(0)
    if op.data_format != "NHWC" or len(x.shape) != 4:
        raise Unsupported(f"{op.name} on {op.data_format} {len(x.shape) - 2}-D tensors (NHWC 2-D is compiled; the "
                          "compiler makes float NCHW pools NHWC)")
    if isinstance(op, MaxPool) and op.with_indices:
        raise Unsupported("MaxPool with its indices output")
    if isinstance(op, AveragePool) and op.quant is not None and op.flavour == "onnxruntime":
        from . import onnxruntime

        onnxruntime.average_pool(e)
        return
    if isinstance(op, AveragePool) and op.count_include_pad:
        raise Unsupported("an NHWC average pool counting its padding")
    batches, in_h, in_w, channels = x.shape
    begins, _, (out_h, out_w) = op.window.concrete_pads((int(in_h), int(in_w)))
    dilations: tuple = ()
    if x.dtype == DatumType.F32:
        bounds = clamp_bounds(op.activation)
        if bounds is None:
            raise Unsupported(f"the fused activation {op.activation.name} on a pooling")
        low, high = (np.float32(v) for v in bounds)
        suffix, dilations = "f32", op.window.dilations
    elif x.dtype in (DatumType.I8, DatumType.I16) or x.dtype == DatumType.U8 and isinstance(op, MaxPool):
        if isinstance(op, AveragePool) and op.quant is None:
            raise Unsupported(f"an average pool on {x.dtype} without quantization")
        if any(d != 1 for d in op.window.dilations):
            raise Unsupported("a dilated integer pool")
        low, high = clamp_of(op.activation, x.dtype)
        suffix = {DatumType.I8: "s8", DatumType.U8: "u8"}.get(x.dtype, "s16")
    else:
        raise Unsupported(f"pooling on {x.dtype} (float32, int8 and int16 are compiled)")
    e.use(HEADER)
    e.uses_math()  # the header's L2 pool calls sqrtf
    kind = "avg" if isinstance(op, AveragePool) else "max"
    args = (batches, in_h, in_w, channels, out_h, out_w, *op.window.kernel, *op.window.strides, begins[0], begins[1],
            low, high)
    if suffix == "s8" and (pool_dsp.average_pool if kind == "avg" else pool_dsp.max_pool)(e, x, y, args):
        return
    if host_dw.pool(e, kind, suffix, x, y, args, dilations):
        return
    e.call(f"tl_{kind}_pool_nhwc_{suffix}", x, y, batches, in_h, in_w, channels, out_h, out_w, *op.window.kernel,
           *op.window.strides, begins[0], begins[1], low, high, *dilations)


@emitter(LpPool)
def l2_pool(e: Emit) -> None:
    """TFLite's L2_POOL_2D (an averaged LpPool of p = 2 on NHWC float32)."""
    op: LpPool = e.op
    x, y = e.input(0), e.output(0)
    if not op.mean or x.dtype != DatumType.F32 or any(d != 1 for d in op.window.dilations):
        raise Unsupported("LpPool other than TFLite's L2 pooling (NHWC float32, averaged, no dilations)")
    batches, in_h, in_w, channels = x.shape
    begins, _, (out_h, out_w) = op.window.concrete_pads((int(in_h), int(in_w)))
    e.use(HEADER)
    e.uses_math()
    e.call("tl_l2_pool_nhwc_f32", x, y, batches, in_h, in_w, channels, out_h, out_w, *op.window.kernel,
           *op.window.strides, begins[0], begins[1])


@emitter(GlobalPool)
def global_pool(e: Emit) -> None:
    op: GlobalPool = e.op
    x, y = e.input(0), e.output(0)
    if x.dtype != DatumType.F32 or op.mode not in ("avg", "max"):
        raise Unsupported(f"Global{op.mode.capitalize()}Pool on {x.dtype}")
    planes = int(x.shape[0]) * int(x.shape[1])
    e.use(HEADER)
    e.call("tl_global_pool_f32", x, y, planes, x.count // planes if planes else 0, int(op.mode == "max"))


@emitter(EdgeAveragePool)
def edge_average_pool(e: Emit) -> None:
    """A streamed average pool: the inner pool, then the first frames (whose windows reach
    into the padding before the stream) rescaled to the frames that count. A compiled stream
    never ends, so the end of the stream's padding is not handled (push zeros to flush)."""
    op: EdgeAveragePool = e.op
    if op.counted_to < 0 or op.length is None:
        raise Unsupported("an average pool counting frames before the stream's end")
    y = e.output(0)
    e.op = op.pool
    pool(e)
    e.op = op
    shape = [int(d) for d in y.shape]
    outer, frames, inner = math.prod(shape[:op.axis]), shape[op.axis], math.prod(shape[op.axis + 1:])
    position = e.state("position", DatumType.I32, 1)
    e.line(f"{{\n  const int32_t first = {position}[0] - {op.delay};\n"
           f"  {position}[0] = {position}[0] < (1 << 30) ? {position}[0] + {frames} : {position}[0];\n"
           f"  for (int32_t i = 0; i < {frames}; ++i) {{\n"
           f"    const int32_t start = (first + i) * {op.stride};\n"
           f"    int32_t count = 0;\n"
           f"    if (start >= {op.counted_from}) continue;\n"
           f"    for (int32_t k = 0; k < {op.kernel}; ++k) count += start + k * {op.dilation} >= {op.counted_from};\n"
           f"    {{\n      const float scale = (float)((double){op.kernel} / (double)(count > 0 ? count : 1));\n"
           f"      for (int32_t o = 0; o < {outer}; ++o)\n"
           f"        for (int32_t j = 0; j < {inner}; ++j) {y.var}[(o * {frames} + i) * {inner} + j] *= scale;\n"
           f"    }}\n  }}\n}}")
