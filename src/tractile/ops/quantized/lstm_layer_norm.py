"""TFLite's integer layer normalisation of LSTM gates (``ApplyLayerNorm``).

The gate's products are requantized to the scale of the op's intermediate tensor of that
gate (instead of Q3.12), then the mean and variance are computed in integers (the mean
times 1024), the inverse standard deviation as a fixed-point multiplier by Newton-Raphson
(``GetInvSqrtQuantizedMultiplierExp``), the result multiplied by the int16 coefficients,
given the int32 bias (scale: the coefficients' scale / 1024) and requantized to Q3.12 with
the coefficients' scale. A row of equal values has variance 0 and uses the guard
max(1, 10000 * that scale).
"""
from __future__ import annotations

import numpy as np

from .fixedpoint import INT32_MAX, Requantizer, rounding_divide_by_pot, saturating_left_shift, srdhm, wrap32
from .functions import count_leading_zeros32
from .output import clip_inplace

#: sqrt(2) / 2 in Q0.31
HALF_SQRT_2 = 1518500250


def layer_norm_scales(scale: float) -> tuple[Requantizer, int]:
    """The requantizer to Q3.12 and the variance guard of coefficients of ``scale``, as
    TFLite's Prepare derives them."""
    scale = np.float32(scale)
    multiplier = Requantizer([float(scale)])
    requant = Requantizer.from_pairs(multiplier.multipliers, multiplier.shifts + 12)
    return requant, max(1, int(np.float32(10000) * scale))


def _truncating_divide(numerator: np.ndarray, denominator: int) -> np.ndarray:
    """C integer division (toward zero) by a positive integer."""
    quotient = np.abs(numerator) // denominator
    return np.where(numerator < 0, -quotient, quotient)


def inverse_sqrt_multipliers(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp(v, reverse_shift=-1) for each (non-negative) v:
    ``(multiplier, shift)`` with 1 / sqrt(v) ~ multiplier * 2^(shift - 31); shift is never positive."""
    v = np.asarray(values, dtype=np.int64)
    small = v <= 1
    v = np.where(small, 2, v)
    shift = np.full(v.shape, 11, dtype=np.int64)
    while True:
        large = v >= (1 << 29)
        if not large.any():
            break
        v = np.where(large, v // 4, v)
        shift += large
    pairs = (count_leading_zeros32(v) - 1) // 2 - 1
    shift -= pairs
    v = v << (2 * pairs)
    # Newton-Raphson on x = 1 / sqrt(v), in Q3.28, from x = 1
    half_input = rounding_divide_by_pot(v >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    x = np.full(v.shape, 1 << 28, dtype=np.int64)
    for _ in range(5):
        cube = saturating_left_shift(srdhm(srdhm(x, x), x), 6)
        x = saturating_left_shift(wrap32(srdhm(half_three, x) - srdhm(half_input, cube)), 3)
    x = srdhm(x, HALF_SQRT_2)
    negative = shift < 0
    x = np.where(negative, wrap32(x << np.maximum(-shift, 0)), x)
    shift = np.where(negative, 0, shift)
    return np.where(small, INT32_MAX, x), np.where(small, 0, -shift)


def layer_norm_integer(values: np.ndarray, coefficients: np.ndarray, bias: np.ndarray, requant: Requantizer,
                       guard: int) -> np.ndarray:
    """TFLite's ApplyLayerNorm on int16 rows (the last axis): Q3.12 int16 results, as int64."""
    values = np.asarray(values, dtype=np.int64)
    cells = values.shape[-1]
    mean = _truncating_divide(values.sum(axis=-1) * 1024, cells)
    variance = (values * values).sum(axis=-1) * ((1 << 20) // cells) - mean * mean
    variance = _truncating_divide(variance, 1 << 20)
    variance = np.where(variance < 1, guard, variance)
    multiplier, shift = inverse_sqrt_multipliers(variance)
    shifted = values * 1024 - mean[..., None]
    rescaled = rounding_divide_by_pot(srdhm(shifted, multiplier[..., None]), -shift[..., None])
    weighted = wrap32(wrap32(rescaled * coefficients) + bias)
    rounded = _truncating_divide(weighted + np.where(weighted > 0, 512, -512), 1024)
    return clip_inplace(requant(rounded), -32768, 32767)
