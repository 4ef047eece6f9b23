"""int8 convolutions on targets with the Armv7E-M DSP instructions (Cortex-M4/M7): the weights
repacked on the host as int16 pairs of two taps (or depths) of one output, so that each SMLAD
adds two products to one accumulator (kernels in ``tl_conv_dsp.h``), and the input offset folded
into the bias. Which layers take them: 3x3 depthwise with one filter per channel or one input
channel, and 1x1 convolutions of depth 4 to 16 (deeper ones already reach two MACs per SMLAD
through ``tl_fc_s8``)."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ..emit import Emit
from ..registry import Unsupported

HEADER = "tl_conv_dsp.h"
#: depths of the 1x1 convolutions whose weights are stored widened
WIDE_DEPTHS = (4, 8, 12, 16)


def pairs(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """int32 words holding ``low`` in their bottom halfword and ``high`` in their top one."""
    low, high = np.asarray(low, np.int64), np.asarray(high, np.int64)
    return ((high << 16) | (low & 0xFFFF)).astype(np.int32)


def depthwise_pairs(taps: np.ndarray) -> np.ndarray:
    """``taps`` [9][channels] (a multiple of 4 of them kept) as 18 words per group of four
    channels: per tap pair (0,1), (2,3), (4,5), (6,7) one word per channel, then tap 8 as
    [c0 | c2], [c1 | c3]."""
    groups = taps.shape[1] // 4
    words: list[np.int32] = []
    for g in range(groups):
        c = 4 * g
        for p in range(4):
            words.extend(pairs(taps[2 * p, c:c + 4], taps[2 * p + 1, c:c + 4]))
        words.extend(pairs(taps[8, [c, c + 1]], taps[8, [c + 2, c + 3]]))
    return np.array(words, np.int32)


def single_input_pairs(taps: np.ndarray) -> np.ndarray:
    """``taps`` [9][filters] as five words per filter: [w0 | w1] .. [w6 | w7], [w8 | 0]."""
    padded = np.concatenate([taps, np.zeros((1, taps.shape[1]), taps.dtype)])
    return pairs(padded[0::2], padded[1::2]).T.reshape(-1)


def widened_rows(w: np.ndarray) -> np.ndarray:
    """[units][depth] weights as depth / 2 words per unit: per 4 depths [d0 | d2], [d1 | d3]."""
    units, depth = w.shape
    blocks = w.reshape(units, depth // 4, 4)
    words = np.stack([pairs(blocks[..., 0], blocks[..., 2]), pairs(blocks[..., 1], blocks[..., 3])], axis=-1)
    return words.reshape(-1)


def folded_bias(raw_bias: np.ndarray, x_offset: int, sums: np.ndarray) -> np.ndarray:
    total = raw_bias.astype(np.int64) + int(x_offset) * sums.astype(np.int64)
    if np.abs(total).max(initial=0) >= 1 << 31:
        raise Unsupported("the folded bias leaves the int32 range")
    return total


def depthwise_kernel(e: Emit, in_c: int, multiplier: int, k_h: int, k_w: int) -> str | None:
    """The repacked kernel for this int8 depthwise layer on this target, or None."""
    if not e.target.dsp or e.target.progmem or (k_h, k_w) != (3, 3):
        return None
    if multiplier == 1 and in_c >= 4:
        return "tl_dwconv3x3_s8_packed"
    if in_c == 1:
        return "tl_dwconv3x3_s8_single"
    return None


def emit_depthwise(e: Emit, kernel: str, x, y, offset: np.ndarray, raw_bias: np.ndarray, shape_args: tuple,
                   requant_args: tuple) -> None:
    """``offset`` [3][3][channels] weights without their zero point; ``shape_args`` from batches
    to pad_left, ``requant_args`` from x_offset to high, as tl_dwconv_nhwc_s8 takes them."""
    taps = offset.reshape(9, -1)
    bias = e.constant("bias", folded_bias(raw_bias, requant_args[0], taps.sum(axis=0)), DatumType.I32)
    if kernel == "tl_dwconv3x3_s8_single":
        packed, plain = single_input_pairs(taps), "NULL"
    else:
        packed = depthwise_pairs(taps)
        plain = e.constant("weights", offset, DatumType.I8) if taps.shape[1] % 4 else "NULL"
    e.use(HEADER)
    e.call(kernel, x, e.constant("weights_pairs", packed, DatumType.I32), bias, y, plain, *shape_args, *requant_args)


def emit_pointwise(e: Emit, x, y, offset: np.ndarray, bias: str, pixels: int, depth: int, filters: int,
                   requant_args: tuple) -> bool:
    """A 1x1 int8 convolution of depth 4 to 16 with widened weights; False when it is not one."""
    if not e.target.dsp or e.target.progmem or depth not in WIDE_DEPTHS:
        return False
    e.use("tl_conv.h")
    e.use(HEADER)
    e.call("tl_pointwise_s8_wide", x, e.constant("weights_wide", widened_rows(offset.reshape(filters, depth)),
                                                 DatumType.I32), bias, y, pixels, depth, filters, *requant_args)
    return True
