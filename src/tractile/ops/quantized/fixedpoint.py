"""TFLite's integer arithmetic, vectorised on int64 arrays holding int32 (or int16) values.

The functions follow the semantics of TFLite's ``MultiplyByQuantizedMultiplier`` (double
rounding: a saturating rounding doubling high multiply, then a rounding right shift) and of
gemmlowp's fixed-point helpers (``exp_on_negative_values``, ``logistic``, ``tanh``, ``one over
one plus x``) that TFLite's integer kernels use. Every value is an ``np.int64`` array whose
items stay within the emulated type's range; C's wrapping and truncating behaviours are
reproduced where they can occur.
"""
from __future__ import annotations

import math

import numpy as np

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1


def round_half_away(values: np.ndarray) -> np.ndarray:
    """Elementwise C ``round`` (halves away from zero), exact for every float."""
    truncated = np.trunc(values)
    fraction = values - truncated
    return np.where(np.abs(fraction) >= 0.5, truncated + np.sign(values), truncated)


def quantize_multiplier(real: float) -> tuple[int, int]:
    """``(multiplier, shift)`` with ``real ~= multiplier * 2**(shift - 31)``, as TFLite's QuantizeMultiplier."""
    real = float(real)
    if real == 0.0 or not math.isfinite(real):
        return 0, 0
    fraction, shift = math.frexp(real)
    fixed = int(math.floor(abs(fraction) * (1 << 31) + 0.5))
    fixed = -fixed if fraction < 0 else fixed
    if fixed == (1 << 31):
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def wrap32(values: np.ndarray) -> np.ndarray:
    """Wrap int64 values to int32 two's complement (what C int32 arithmetic does on overflow)."""
    return ((values + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def wrap_bits(values: np.ndarray, bits: int) -> np.ndarray:
    half = 1 << (bits - 1)
    return ((values + half) & ((1 << bits) - 1)) - half


def srdhm(a: np.ndarray, b, bits: int = 32) -> np.ndarray:
    """gemmlowp's SaturatingRoundingDoublingHighMul for int32 (``bits`` 32) or int16 (16)."""
    total = bits - 1
    product = np.multiply(a, b, dtype=np.int64)
    result = (product + (1 << (total - 1))) >> total
    # only min * min overflows; it saturates to max
    return np.minimum(result, (1 << total) - 1)


def rounding_divide_by_pot(x: np.ndarray, exponent) -> np.ndarray:
    """gemmlowp's RoundingDivideByPOT: ``x / 2**exponent`` rounded half away from zero."""
    if np.isscalar(exponent) or np.ndim(exponent) == 0:
        exponent = int(exponent)
        if exponent == 0:
            return x
        return (x + ((1 << (exponent - 1)) + (x >> 63))) >> exponent
    exponent = np.asarray(exponent, dtype=np.int64)
    half = np.where(exponent > 0, np.left_shift(1, np.maximum(exponent - 1, 0)), 0)
    negative = (x >> 63) & np.where(exponent > 0, -1, 0)
    return (x + half + negative) >> exponent


class Requantizer:
    """TFLite's MultiplyByQuantizedMultiplier for one multiplier or one per channel (last axis).

    Built once from the real multipliers (``QuantizeMultiplier`` each); ``__call__`` applies
    the double-rounding fixed-point product to an int64 accumulator array.
    """

    __slots__ = ("multiplier", "left", "right", "half", "negmask", "scalar", "multipliers", "shifts")

    def __init__(self, reals):
        reals = np.atleast_1d(np.asarray(reals, dtype=np.float64))
        pairs = [quantize_multiplier(r) for r in reals.tolist()]
        multipliers = np.array([m for m, _ in pairs], dtype=np.int64)
        shifts = np.array([s for _, s in pairs], dtype=np.int64)
        self._set(multipliers, shifts)

    @classmethod
    def from_pairs(cls, multipliers, shifts) -> Requantizer:
        self = cls.__new__(cls)
        self._set(np.atleast_1d(np.asarray(multipliers, dtype=np.int64)),
                  np.atleast_1d(np.asarray(shifts, dtype=np.int64)))
        return self

    def _set(self, multipliers: np.ndarray, shifts: np.ndarray) -> None:
        self.multipliers, self.shifts = multipliers, shifts
        left = np.maximum(shifts, 0)
        right = np.maximum(-shifts, 0)
        self.scalar = multipliers.size == 1
        if self.scalar:
            self.multiplier = int(multipliers[0])
            self.left = int(left[0])
            self.right = int(right[0])
            self.half = (1 << (self.right - 1)) if self.right > 0 else 0
            self.negmask = -1 if self.right > 0 else 0
        else:
            self.multiplier = multipliers
            self.left = left if left.any() else 0
            self.right = right
            self.half = np.where(right > 0, np.left_shift(1, np.maximum(right - 1, 0)), 0)
            self.negmask = np.where(right > 0, -1, 0)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.int64)
        if self.scalar:
            if self.left:
                x = wrap32(x << self.left)
            y = (x * self.multiplier + (1 << 30)) >> 31
            if self.right:
                y = (y + (self.half + ((y >> 63) & self.negmask))) >> self.right
            return y
        if not np.isscalar(self.left):
            x = wrap32(x << self.left)
        y = (x * self.multiplier + (1 << 30)) >> 31
        return (y + self.half + ((y >> 63) & self.negmask)) >> self.right


    def apply_inplace(self, x: np.ndarray) -> np.ndarray:
        """``__call__`` on a writable int64 array, computed in its memory (returns it)."""
        if (self.scalar and self.left) or not np.isscalar(self.left):
            x[...] = self(x)
            return x
        np.multiply(x, self.multiplier, out=x)
        x += 1 << 30
        x >>= 31
        if self.scalar:
            if self.right:
                x += x >> 63
                x += self.half
                x >>= self.right
            return x
        sign = x >> 63
        sign &= self.negmask
        x += sign
        x += self.half
        np.right_shift(x, self.right, out=x)
        return x


def multiply_by_quantized_multiplier(x: np.ndarray, multiplier, shift) -> np.ndarray:
    """MultiplyByQuantizedMultiplier(int32 x, multiplier, shift) (double rounding)."""
    return Requantizer.from_pairs(multiplier, shift)(x)


def multiply_by_quantized_multiplier_64(x: np.ndarray, multiplier, shift) -> np.ndarray:
    """The int64-accumulator variant (16x8 kernels): a 16-bit reduced multiplier, one rounding."""
    multiplier = np.asarray(multiplier, dtype=np.int64)
    reduced = np.where(multiplier < 0x7FFF0000, (multiplier + (1 << 15)) >> 16, 0x7FFF)
    total = 15 - np.asarray(shift, dtype=np.int64)
    result = (np.asarray(x, dtype=np.int64) * reduced + np.left_shift(1, total - 1)) >> total
    return wrap32(result)


def saturating_left_shift(x: np.ndarray, exponent: int, bits: int = 32) -> np.ndarray:
    """gemmlowp's SaturatingRoundingMultiplyByPOT for a positive exponent."""
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return np.clip(x << exponent, low, high)


def multiply_by_pot(x: np.ndarray, exponent: int, bits: int = 32) -> np.ndarray:
    """SaturatingRoundingMultiplyByPOT<exponent> (left shifts saturate, right shifts round)."""
    if exponent > 0:
        return saturating_left_shift(x, exponent, bits)
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    return x


class FixedPoint:
    """gemmlowp's fixed-point helpers for raw int32 (``bits`` 32) or int16 (``bits`` 16) values."""

    def __init__(self, bits: int = 32):
        self.bits = bits
        self.max = (1 << (bits - 1)) - 1
        self.min = -(1 << (bits - 1))

    def const(self, raw32: int) -> int:
        """GEMMLOWP_CHECKED_FIXEDPOINT_CONSTANT: an int32 raw value rescaled to this width."""
        if self.bits == 32:
            return raw32
        return int(rounding_divide_by_pot(np.int64(raw32), 32 - self.bits))

    def frac(self, integer_bits: int) -> int:
        return self.bits - 1 - integer_bits

    def one(self, integer_bits: int) -> int:
        return self.max if integer_bits == 0 else 1 << self.frac(integer_bits)

    def add(self, a, b):
        return wrap_bits(np.asarray(a, dtype=np.int64) + b, self.bits)

    def sub(self, a, b):
        return wrap_bits(np.asarray(a, dtype=np.int64) - b, self.bits)

    def mul(self, a, b):
        return srdhm(np.asarray(a, dtype=np.int64), b, self.bits)

    def rescale(self, x, src_bits: int, dst_bits: int):
        return multiply_by_pot(x, src_bits - dst_bits, self.bits)

    def rounding_half_sum(self, a, b):
        total = np.asarray(a, dtype=np.int64) + b
        total = total + np.where(total >= 0, 1, -1)
        return np.where(total >= 0, total >> 1, -((-total) >> 1))

    def exp_interval(self, a):
        """exp on [-1/4, 0) (a and result in Q0)."""
        constant_term = self.const(1895147668)
        one_third = self.const(715827883)
        x = self.add(a, 1 << (self.frac(0) - 3))
        x2 = self.mul(x, x)
        x3 = self.mul(x2, x)
        x4 = self.mul(x2, x2)
        x4_over_4 = multiply_by_pot(x4, -2, self.bits)
        inner = self.add(self.mul(self.add(x4_over_4, x3), one_third), x2)
        polynomial = multiply_by_pot(inner, -1, self.bits)
        term = self.mul(constant_term, self.add(x, polynomial))
        if self.bits == 16:
            return np.clip(constant_term + term, self.min, self.max)
        return self.add(constant_term, term)

    def exp_on_negative_values(self, a, integer_bits: int):
        """exp(a) for a <= 0 given in Q(integer_bits); result in Q0."""
        frac = self.frac(integer_bits)
        one_quarter = 1 << (frac - 2)
        a = np.asarray(a, dtype=np.int64)
        mod_minus_quarter = self.sub(a & (one_quarter - 1), one_quarter)
        result = self.exp_interval(self.rescale(mod_minus_quarter, integer_bits, 0))
        remainder = self.sub(mod_minus_quarter, a)
        barrel = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535),
                  (3, 720401), (4, 242))
        for exponent, raw in barrel:
            if integer_bits > exponent:
                shift = frac + exponent
                factor = self.const(raw)
                result = np.where(remainder & (1 << shift), self.mul(result, factor), result)
        if integer_bits > 5:
            result = np.where(a < self.const(-(1 << (36 - integer_bits))), 0, result)
        return np.where(a == 0, self.one(0), result)

    def _reciprocal_iterations(self, a):
        half_denominator = self.rounding_half_sum(a, self.one(0))
        x = self.add(self.const(1515870810), self.mul(half_denominator, self.const(-1010580540)))
        one_f2 = self.one(2)
        for _ in range(3):
            product = self.mul(half_denominator, x)
            residual = self.sub(one_f2, product)
            x = self.add(x, self.rescale(self.mul(x, residual), 4, 2))
        return x

    def one_over_one_plus_x(self, a):
        """1 / (1 + a) for a in [0, 1) (Q0 in and out)."""
        return self.rescale(self._reciprocal_iterations(a), 1, 0)

    def one_minus_x_over_one_plus_x(self, a):
        x = self._reciprocal_iterations(a)
        return self.rescale(self.sub(x, self.one(2)), 2, 0)

    def tanh(self, a, integer_bits: int):
        a = np.asarray(a, dtype=np.int64)
        negative = a < 0
        n = np.where(negative, a, wrap_bits(-a, self.bits))
        t = self.one_minus_x_over_one_plus_x(self.exp_on_negative_values(n, integer_bits + 1))
        return np.where(a == 0, 0, np.where(negative, wrap_bits(-t, self.bits), t))

    def logistic(self, a, integer_bits: int):
        a = np.asarray(a, dtype=np.int64)
        positive = a > 0
        magnitude = np.where(positive, a, wrap_bits(-a, self.bits))
        if_positive = self.one_over_one_plus_x(self.exp_on_negative_values(wrap_bits(-magnitude, self.bits),
                                                                             integer_bits))
        if_negative = self.sub(self.one(0), if_positive)
        return np.where(a == 0, self.const(1 << 30), np.where(positive, if_positive, if_negative))


FP32 = FixedPoint(32)
FP16 = FixedPoint(16)
