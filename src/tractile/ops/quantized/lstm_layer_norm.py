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

from .fixedpoint import Requantizer, rounding_divide_by_pot, srdhm, wrap32
from .functions import inverse_sqrt_multipliers
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
