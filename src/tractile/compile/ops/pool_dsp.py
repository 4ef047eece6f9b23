"""int8 average and max pooling and quantized MEAN over the pixels of NHWC tensors on Cortex-M4/M7
(the DSP extension): averages and MEAN eight channels per pass, each pixel's two words summed
into halfword pairs by SXTAB16; maxima four channels per word by SSUB8/SEL (``tl_pool_dsp.h``).
Other layers keep the portable kernels (pool.py, reduce.py)."""
from __future__ import annotations

import math

from ...datum import DatumType
from ..emit import Emit
from ..program import CTensor

HEADER = "tl_pool_dsp.h"
#: halfword sums are exact over at most this many pixels
MOST_TAPS = 256


def _usable(e: Emit, x: CTensor, channels: int) -> bool:
    return e.target.dsp and not e.target.progmem and x.dtype == DatumType.I8 and channels >= 8


def average_pool(e: Emit, x: CTensor, y: CTensor, args: tuple) -> bool:
    """``args``: tl_avg_pool_nhwc_s8's after its tensors; False (nothing emitted) when the window
    holds more than 256 taps or there are fewer than eight channels."""
    channels, k_h, k_w = int(args[3]), int(args[6]), int(args[7])
    if not _usable(e, x, channels) or k_h * k_w > MOST_TAPS:
        return False
    e.use("tl_common.h")
    e.use(HEADER)
    e.call("tl_avg_pool_nhwc_s8_dsp", x, y, *args)
    return True


def max_pool(e: Emit, x: CTensor, y: CTensor, args: tuple) -> bool:
    """``args``: tl_max_pool_nhwc_s8's after its tensors; False (nothing emitted) below four channels."""
    if not (e.target.dsp and not e.target.progmem and x.dtype == DatumType.I8 and int(args[3]) >= 4):
        return False
    e.use("tl_common.h")
    e.use(HEADER)
    e.call("tl_max_pool_nhwc_s8_dsp", x, y, *args)
    return True


def mean(e: Emit, x: CTensor, y: CTensor, shape: tuple, axes: tuple, multiplier: int, shift: int, zi: int,
         zo: int) -> bool:
    """A quantized int8 MEAN or SUM over one run of adjacent axes with eight channels or more
    after it (Keras's GlobalAveragePooling2D over NHWC); False (nothing emitted) otherwise."""
    axes = tuple(sorted(a % len(shape) for a in axes))
    if not axes or y.dtype != DatumType.I8 or axes != tuple(range(axes[0], axes[-1] + 1)):
        return False
    outer, pixels, channels = (math.prod(shape[:axes[0]]), math.prod(shape[axes[0]:axes[-1] + 1]),
                               math.prod(shape[axes[-1] + 1:]))
    if not _usable(e, x, channels) or pixels * 128 >= 1 << 31 or abs(zi * pixels) >= 1 << 31:
        return False
    e.use("tl_common.h")
    e.use(HEADER)
    e.call("tl_mean_pixels_s8_dsp", x, y, outer, pixels, channels, zi * pixels, multiplier, shift, zo)
    return True
