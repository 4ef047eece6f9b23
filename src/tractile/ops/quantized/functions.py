"""TFLite's fixed-point functions on top of :mod:`fixedpoint`: reciprocals, logarithms,
int16 lookup tables for sigmoid/tanh, softmax scaling."""
from __future__ import annotations

import functools
import math

import numpy as np

from .fixedpoint import (
    FP16,
    FP32,
    INT32_MAX,
    INT32_MIN,
    multiply_by_pot,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_left_shift,
    srdhm,
    wrap32,
)


@functools.lru_cache(maxsize=32)
def int16_table(function: str, integer_bits: int) -> np.ndarray:
    """gemmlowp's int16 ``logistic`` or ``tanh`` of every int16 input (index = input + 32768).

    The functions are pure functions of one int16, so looking results up in this table
    (built with the exact fixed-point code) is bit-exact and much faster on small arrays.
    """
    inputs = np.arange(-32768, 32768, dtype=np.int64)
    return getattr(FP16, function)(inputs, integer_bits).astype(np.int64)


def count_leading_zeros32(values: np.ndarray) -> np.ndarray:
    """Leading zeros of non-negative int32 values seen as uint32 (32 for 0)."""
    values = np.asarray(values, dtype=np.int64) & 0xFFFFFFFF
    _, exponent = np.frexp(values.astype(np.float64))
    return np.where(values == 0, 32, 32 - exponent).astype(np.int64)


def get_reciprocal(x: np.ndarray, integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetReciprocal: (Q0 reciprocal of 1 + fraction, num_bits_over_unit)."""
    x = np.asarray(x, dtype=np.int64)
    headroom_plus_one = count_leading_zeros32(x)
    bits_over_unit = integer_digits - headroom_plus_one
    shifted = ((x << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)
    shifted = wrap32(shifted)
    return FP32.one_over_one_plus_x(shifted), bits_over_unit


def _srdhm_int(a: int, b: int) -> int:
    return min((a * b + (1 << 30)) >> 31, INT32_MAX)


def _wrap_int(x: int) -> int:
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def _saturate_int(x: int) -> int:
    return max(INT32_MIN, min(INT32_MAX, x))


def one_over_one_plus_x_int(a: int) -> int:
    """``FP32.one_over_one_plus_x`` on one Python int (cheaper than NumPy on a few values)."""
    total = a + INT32_MAX
    total += 1 if total >= 0 else -1
    half = total >> 1 if total >= 0 else -((-total) >> 1)
    x = _wrap_int(1515870810 + _srdhm_int(half, -1010580540))
    for _ in range(3):
        residual = _wrap_int((1 << 29) - _srdhm_int(half, x))
        x = _wrap_int(x + _saturate_int(_srdhm_int(x, residual) << 2))
    return _saturate_int(x << 1)


def get_reciprocals(x: np.ndarray, integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`get_reciprocal` of each value, in plain Python ints when there are only a few."""
    if x.size > 32:
        return get_reciprocal(x, integer_digits)
    pairs = [reciprocal_int(value, integer_digits) for value in np.asarray(x, dtype=np.int64).reshape(-1).tolist()]
    shape = np.shape(x)
    return (np.array([p[0] for p in pairs], np.int64).reshape(shape),
            np.array([p[1] for p in pairs], np.int64).reshape(shape))


def reciprocal_int(value: int, integer_digits: int) -> tuple[int, int]:
    """:func:`get_reciprocal` of one Python int."""
    value &= 0xFFFFFFFF
    headroom_plus_one = 32 - value.bit_length()
    shifted = _wrap_int(((value << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31))
    return one_over_one_plus_x_int(shifted), integer_digits - headroom_plus_one


def softmax_scaling(beta: float, input_scale: float, integer_bits: int = 5) -> tuple[int, int]:
    """PreprocessSoftmaxScaling: (multiplier, left shift) of ``beta * scale`` in Q(integer_bits)."""
    real = min(float(beta) * float(input_scale) * float(1 << (31 - integer_bits)), float((1 << 31) - 1))
    return quantize_multiplier(real)


def input_radius(integer_bits: int, left_shift: int, total_bits: int = 31) -> int:
    """CalculateInputRadius: the largest input magnitude that does not saturate after scaling."""
    value = 1.0 * ((1 << integer_bits) - 1) * (1 << (total_bits - integer_bits)) / (1 << left_shift)
    return int(math.floor(value))


def saturating_add32(a, b) -> np.ndarray:
    return np.clip(np.asarray(a, dtype=np.int64) + b, INT32_MIN, INT32_MAX)


def log_x_for_x_at_least_1(x: np.ndarray, input_integer_bits: int, output_integer_bits: int) -> np.ndarray:
    """TFLite's ``log_x_for_x_greater_than_or_equal_to_1`` on raw int32 values (Q in -> Q out)."""
    accum_bits = output_integer_bits + 1
    log_2, sqrt_sqrt_half, sqrt_half = 1488522236, 1805811301, 1518500250
    alpha_n, alpha_d, alpha_i, alpha_f = 117049297, 127690142, 1057819769, 638450708
    shifted_quarter = int(rounding_divide_by_pot(np.int64(536870912), accum_bits))
    z_a = np.asarray(x, dtype=np.int64)
    z_a_headroom_plus_1 = count_leading_zeros32(z_a)
    r_a_tmp = np.clip(z_a << (z_a_headroom_plus_1 - 1), INT32_MIN, INT32_MAX)
    r_a = saturating_left_shift(srdhm(r_a_tmp, sqrt_half), 1)
    z_a_pow_2_adj = saturating_add32(
        saturating_left_shift(input_integer_bits - z_a_headroom_plus_1, 31 - accum_bits), shifted_quarter)
    z_b = srdhm(z_a, sqrt_half)
    z_b_headroom = count_leading_zeros32(z_b) - 1
    r_b = np.clip(z_a << z_b_headroom, INT32_MIN, INT32_MAX)
    z_b_pow_2_adj = saturating_add32(
        saturating_left_shift(input_integer_bits - z_b_headroom, 31 - accum_bits), -shifted_quarter)
    r = np.minimum(r_a, r_b)
    z_pow_2_adj = np.maximum(z_a_pow_2_adj, z_b_pow_2_adj)
    p = FP32.rounding_half_sum(r, sqrt_sqrt_half)
    q = wrap32(r - sqrt_sqrt_half)
    q = wrap32(q + q)
    common_sq = srdhm(q, q)
    num = wrap32(srdhm(q, r) + srdhm(srdhm(q, common_sq), alpha_n))
    inner = wrap32(wrap32(alpha_i + q) + srdhm(alpha_d, common_sq))
    denom_minus_one = wrap32(srdhm(p, inner) + srdhm(alpha_f, q))
    recip_denom = FP32.one_over_one_plus_x(denom_minus_one)
    num_scaled = rounding_divide_by_pot(num, accum_bits)
    total = wrap32(srdhm(z_pow_2_adj, log_2) + srdhm(num_scaled, recip_denom))
    return multiply_by_pot(total, accum_bits - output_integer_bits)


HALF_SQRT_2 = 1518500250  # sqrt(2) / 2 in Q0.31


def inverse_sqrt_multipliers(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp(v, reverse_shift=-1) for each (non-negative) v:
    ``(multiplier, shift)`` with 1 / sqrt(v) ~ multiplier * 2^(shift - 31); shift is never
    positive; 0 and 1 give (INT32_MAX, 0)."""
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
