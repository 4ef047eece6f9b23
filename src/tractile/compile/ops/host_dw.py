"""The host's float depthwise convolution and float/int8 pooling vectorised over channels
(``tl_host_dw.h``: AVX2 + FMA or NEON chosen by the C compiler's target macros, portable loops
otherwise). Taken on the host target only, as the GEMM kernels of ``host_gemm``; float results
within rounding of the portable kernels (fused multiply-adds), int8 max pooling bit for bit."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ..emit import Emit
from .host_gemm import THREAD_WORK, THREADS, applies

HEADERS = ("tl_conv.h", "tl_pool.h", "tl_threads.h", "tl_host_dw.h")
#: a depthwise multiply-add weighs this many of a GEMM's against the split threshold (one tap per
#: load, memory-bound: 4-12 times slower per multiply-add; tl_host_dw.h's TL_HDW_SPLIT_WEIGHT)
SPLIT_WEIGHT = 8


def _use(e: Emit) -> None:
    e.uses_math()  # tl_pool.h's L2 pool calls sqrtf; INFINITY
    for header in HEADERS:
        e.use(header)


def depthwise_f32(e: Emit, x, y, taps: np.ndarray, bias: np.ndarray | None, window, out_h: int, out_w: int,
                  top: int, left: int) -> bool:
    """A float depthwise convolution with one filter per channel (``taps`` [kh][kw][channels]) on
    the host; False when not taken (other targets, other types, channel multipliers)."""
    k_h, k_w, channels = taps.shape
    batches, in_h, in_w, in_c = x.shape
    if not applies(e) or x.dtype != DatumType.F32 or channels != in_c or not in_c:
        return False
    from .conv import _overlap_nhwc, window_args
    from .fused import finish_activation, fused_float_activation

    _use(e)
    low, high = fused_float_activation(e, e.op.activation, y)
    bias_name = e.constant("bias", bias.astype(np.float32)) if bias is not None else "NULL"
    e.uses_threads()
    e.call("tl_dwconv_host_f32", x, e.constant("weights", taps.astype(np.float32)), bias_name, y, batches, in_h, in_w,
           in_c, out_h, out_w, *window_args(window, top, left), np.float32(low), np.float32(high), THREADS)
    finish_activation(e, e.op.activation, y)
    if batches * out_h * out_w * in_c * k_h * k_w * SPLIT_WEIGHT < THREAD_WORK:  # else rows may run out of order
        _overlap_nhwc(e, x, y, in_h, out_h, in_w * in_c, out_w * in_c, window.strides[0], top, batches)
    return True


def pool(e: Emit, kind: str, suffix: str, x, y, args: tuple, dilations: tuple) -> bool:
    """An NHWC pooling (``kind`` "avg" or "max", ``suffix`` its type's, ``args`` tl_pool.h's
    shape arguments) on the host: float average and max, int8 max; False when not taken."""
    if not applies(e) or (kind, suffix) not in (("avg", "f32"), ("max", "f32"), ("max", "s8")):
        return False
    _use(e)
    e.call(f"tl_{kind}_pool_host_{suffix}", x, y, *args, *dilations)
    return True


def reduce_rows_f32(e: Emit, x, y, shape: tuple, axes: tuple, reducer: str) -> bool:
    """A float sum or mean over consecutive axes that leave the last one (a global average pool
    on NHWC data) on the host, a row of channels at a time; False when not taken."""
    if not applies(e) or x.dtype != DatumType.F32 or reducer not in ("sum", "mean") or not axes:
        return False
    first, last = min(axes), max(axes)
    if sorted(axes) != list(range(first, last + 1)) or last == len(shape) - 1:
        return False
    outer, count = int(np.prod(shape[:first])), int(np.prod(shape[first:last + 1]))
    inner = int(np.prod(shape[last + 1:]))
    if not count or not inner:
        return False
    _use(e)
    e.call("tl_reduce_rows_f32", x, y, outer, count, inner, int(reducer == "mean"))
    return True
