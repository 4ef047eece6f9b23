"""The integer functions of TFLite Micro's signal library, vectorised: most significant bit,
rounded square roots, the fixed-point natural log, PCAN's gain curve and shrink.

Every function takes and returns int64 / uint64 arrays and wraps where the C arithmetic wraps
(unsigned 32-bit products, int16 results), so that results are bit-exact.
"""
from __future__ import annotations

import math

import numpy as np

#: kLogLut: the correction of log2(1 + x) over its linear part, 128 segments (+1 end point)
LOG_LUT = np.array([
    0, 224, 442, 654, 861, 1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797, 2944, 3087,
    3224, 3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633, 4714, 4791, 4864,
    4934, 5001, 5063, 5123, 5178, 5231, 5280, 5326, 5368, 5408, 5444, 5477, 5507, 5533, 5557, 5578, 5595,
    5610, 5622, 5631, 5637, 5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586, 5568, 5547, 5524, 5498, 5470,
    5439, 5406, 5370, 5332, 5291, 5249, 5203, 5156, 5106, 5054, 5000, 4944, 4885, 4825, 4762, 4697, 4630,
    4561, 4490, 4416, 4341, 4264, 4184, 4103, 4020, 3935, 3848, 3759, 3668, 3575, 3481, 3384, 3286, 3186,
    3084, 2981, 2875, 2768, 2659, 2549, 2437, 2323, 2207, 2090, 1971, 1851, 1729, 1605, 1480, 1353, 1224,
    1094, 963, 830, 695, 559, 421, 282, 142, 0, 0], dtype=np.int64)
LOG_SEGMENTS_LOG2 = 7
LOG_SCALE_LOG2 = 16
#: ln(2) in Q16
LOG_COEFF = 45426
#: PCAN's signal-to-noise ratio and output precisions (bits)
PCAN_SNR_BITS = 12
PCAN_OUTPUT_BITS = 6

U32 = (1 << 32) - 1
#: NumPy's integer conversions wrap as C's do on two's complement machines
_NARROW = {8: np.int8, 16: np.int16, 32: np.int32}


def wrap(values, bits: int) -> np.ndarray:
    """``values`` (int64) wrapped to signed ``bits``-bit integers, as C's conversions do."""
    if bits in _NARROW:
        return np.asarray(values).astype(_NARROW[bits]).astype(np.int64)
    half = 1 << (bits - 1)
    return ((np.asarray(values, dtype=np.int64) + half) & ((1 << bits) - 1)) - half


def msb(values, bits: int = 32) -> np.ndarray:
    """Position of the highest set bit, 1-based, of unsigned values (GCC builds: ``bits`` for 0)."""
    x = np.asarray(values).astype(np.uint64)
    nonzero = np.where(x == 0, np.uint64(1), x)
    # frexp is exact below 2**53; above, correct the rounding by comparing with the power of two
    exponent = np.minimum(np.frexp(nonzero.astype(np.float64))[1].astype(np.int64), 64)
    power = np.left_shift(np.uint64(1), (exponent - 1).astype(np.uint64))
    exponent = np.where(nonzero < power, exponent - 1, exponent)
    return np.where(x == 0, bits, exponent).astype(np.int64)


def sqrt_rounded(values) -> np.ndarray:
    """Sqrt64: the square root rounded to nearest (ties up), at most 0xFFFF for values below
    2**32 (Sqrt32's cap) and 0xFFFFFFFF above."""
    flat = np.asarray(values, dtype=np.uint64).ravel()
    out = np.empty(flat.shape, dtype=np.int64)
    for index, value in enumerate(flat.tolist()):
        root = math.isqrt(value)
        cap = 0xFFFF if value >> 32 == 0 else 0xFFFFFFFF
        if value - root * root > root and root != cap:
            root += 1
        out[index] = root
    return out.reshape(np.shape(values))


def log32(x, out_scale: int) -> np.ndarray:
    """Log32: ``out_scale * ln(x)`` in Q16 rounding steps, for unsigned 32-bit ``x`` > 1."""
    x = np.asarray(x, dtype=np.int64)
    integer = msb(x) - 1
    frac = wrap(x - np.left_shift(1, integer), 32)
    frac = np.where(integer < LOG_SCALE_LOG2, np.left_shift(frac, np.maximum(LOG_SCALE_LOG2 - integer, 0)),
                    np.right_shift(frac, np.maximum(integer - LOG_SCALE_LOG2, 0)))
    segment = frac >> (LOG_SCALE_LOG2 - LOG_SEGMENTS_LOG2)
    c0, c1 = LOG_LUT[segment], LOG_LUT[segment + 1]
    base = segment * ((1 << LOG_SCALE_LOG2) >> LOG_SEGMENTS_LOG2)
    relative = wrap((c1 - c0) * (frac - base), 32) >> LOG_SCALE_LOG2
    fraction = (frac + c0 + relative) & U32
    log2 = ((integer << LOG_SCALE_LOG2) + fraction) & U32
    half = 1 << (LOG_SCALE_LOG2 - 1)
    loge = ((LOG_COEFF * log2 + half) >> LOG_SCALE_LOG2) & U32
    return (((out_scale & U32) * loge & U32) + half & U32) >> LOG_SCALE_LOG2


def wide_dynamic(x, lut: np.ndarray) -> np.ndarray:
    """WideDynamicFunction: PCAN's gain for noise estimates ``x`` (unsigned 32-bit) from its
    piecewise-quadratic table (at least 125 entries); an int16 result."""
    x = np.asarray(x, dtype=np.int64)
    lut = np.asarray(lut, dtype=np.int64)
    interval = msb(x)
    top = np.clip(4 * interval - 6, 0, lut.size - 3)
    frac = np.where(interval < 11, np.left_shift(x, np.clip(11 - interval, 0, 63)) & U32,
                    np.right_shift(x, np.clip(interval - 11, 0, 63))) & 0x3FF
    result = wrap(lut[top + 2] * frac, 32) >> 5
    result = wrap(result + wrap((lut[top + 1] & U32) << 5, 32), 32)
    result = wrap(result * frac, 32)
    result = wrap(result + (1 << 14), 32) >> 15
    result = wrap(result + lut[top], 32)
    small = lut[np.minimum(x, 2)]
    return wrap(np.where(x <= 2, small, result), 16)


def pcan_shrink(snr) -> np.ndarray:
    """PcanShrink: the compressive curve on a Q12 signal-to-noise ratio, giving Q6."""
    snr = np.asarray(snr, dtype=np.int64)
    square = (snr * snr & U32) >> (2 + 2 * PCAN_SNR_BITS - PCAN_OUTPUT_BITS)
    linear = ((snr >> (PCAN_SNR_BITS - PCAN_OUTPUT_BITS)) - (1 << PCAN_OUTPUT_BITS)) & U32
    return np.where(snr < (2 << PCAN_SNR_BITS), square, linear)
