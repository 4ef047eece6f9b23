"""TFLite's integer helpers against a scalar transcription of their C semantics (Python ints)."""
from __future__ import annotations

import math

import numpy as np

from tractile.ops.quantized.fixedpoint import (
    Requantizer,
    quantize_multiplier,
    round_half_away,
    rounding_divide_by_pot,
    srdhm,
)


def c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def scalar_srdhm(a: int, b: int) -> int:
    if a == b == -(1 << 31):
        return (1 << 31) - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return c_div(ab + nudge, 1 << 31)


def scalar_rdbpot(x: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def scalar_mbqm(x: int, multiplier: int, shift: int) -> int:
    left, right = max(shift, 0), max(-shift, 0)
    shifted = ((x << left) + (1 << 31)) % (1 << 32) - (1 << 31)
    return scalar_rdbpot(scalar_srdhm(shifted, multiplier), right)


def test_srdhm_and_rounding_shift_match_c_semantics():
    rng = np.random.default_rng(0)
    a = rng.integers(-(1 << 31), 1 << 31, 2000)
    b = rng.integers(-(1 << 31), 1 << 31, 2000)
    a[:3] = [-(1 << 31), -(1 << 30), 1 << 30]
    b[:3] = [-(1 << 31), 1 << 31 - 1, 1]
    got = srdhm(a.astype(np.int64), b.astype(np.int64))
    assert got.tolist() == [scalar_srdhm(int(x), int(y)) for x, y in zip(a, b)]
    for exponent in (0, 1, 5, 31):
        values = np.concatenate([a, [-5, -4, -3, 3, 4, 5, -(1 << (exponent or 1)) // 2]]).astype(np.int64)
        assert rounding_divide_by_pot(values, exponent).tolist() == \
            [scalar_rdbpot(int(v), exponent) for v in values]


def test_quantize_multiplier_known_values():
    assert quantize_multiplier(0.5) == (1 << 30, 0)
    assert quantize_multiplier(0.0) == (0, 0)
    assert quantize_multiplier(1.0) == (1 << 30, 1)
    multiplier, shift = quantize_multiplier(0.0006)
    assert (1 << 30) <= multiplier < (1 << 31) and abs(multiplier * 2.0 ** (shift - 31) - 0.0006) < 1e-12
    assert quantize_multiplier(2.0 ** -40) == (0, 0)
    assert quantize_multiplier(math.nextafter(1.0, 0.0)) == (1 << 30, 1)


def test_requantizer_per_tensor_and_per_channel_match_scalar():
    rng = np.random.default_rng(1)
    reals = [0.00123, 0.5, 3.75, 1e-6]
    acc = rng.integers(-(1 << 24), 1 << 24, (50, len(reals))).astype(np.int64)
    per_channel = Requantizer(reals)(acc)
    for column, real in enumerate(reals):
        multiplier, shift = quantize_multiplier(real)
        expected = [scalar_mbqm(int(v), multiplier, shift) for v in acc[:, column]]
        assert per_channel[:, column].tolist() == expected
        assert Requantizer([real])(acc[:, column]).tolist() == expected


def test_round_half_away_from_zero():
    values = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999999999999994, -2.4, 2.6])
    assert round_half_away(values).tolist() == [1, 2, 3, -1, -2, 0, -2, 3]


def test_output_stage_with_a_large_bias_and_shift_keeps_its_zero_point():
    """vww_96_int8's all-zero channels: an int32 bias near 2^30, a right shift of 27 and a zero
    point of -128 put the fused rounding constant past int64; the stage must not fuse then
    (it lost the zero point: 5 instead of TFLite's -123)."""
    from tractile.ops.quantized.output import OutputStage

    multiplier, shift, bias, zero = 1320764593, -27, (1 << 30) - 64, -128
    requant = Requantizer.from_pairs([multiplier, multiplier], [shift, shift])
    stage = OutputStage(requant, np.array([bias, -bias]), zero, zero, 127, np.int8, 2, acc_bound=128 * 127 * 64)
    acc = np.array([[0, 0], [1000, -1000]], np.int64)
    expected = [[scalar_mbqm(int(a) + b, multiplier, shift) + zero for a, b in zip(row, (bias, -bias))]
                for row in acc]
    np.testing.assert_array_equal(stage(acc), np.clip(expected, zero, 127))
    assert stage(acc)[0, 0] == -123
