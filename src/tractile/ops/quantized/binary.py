"""The integer recipe of the broadcasting arithmetic ops on quantized inputs (TFLite's reference
kernels): ADD, SUB and SQUARED_DIFFERENCE bring both inputs to a common scale with a left shift
(20 bits for 8-bit types, 15 for int16; 7 for SQUARED_DIFFERENCE) and a fixed-point multiplier
each, combine, then requantize; MUL requantizes the product of the offset inputs; DIV
multiplies by a fixed-point reciprocal of the divisor; MAXIMUM and MINIMUM compare the raw
values. int16 ADD/SUB with power-of-two scales (``pot_scale_int16``) take TFLite's
shift-and-saturate path. The real multipliers are derived from the float32 scales exactly as
TFLite's Prepare derives them (float32 or double arithmetic, operation by operation).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError, RunError
from ...fact import QParams, TypedFact
from .common import QUANTIZED, integer_limits, scale_of, zero_of
from .fixedpoint import Requantizer, quantize_multiplier, rounding_divide_by_pot, srdhm, wrap32
from .functions import get_reciprocal

KINDS = ("add", "sub", "mul", "div", "squared_difference", "maximum", "minimum")


def _f32(value) -> np.float32:
    return np.float32(value)


def checked_log2(scale: float) -> int | None:
    """TFLite's CheckedLog2: the rounded log2 of a power-of-two scale (None otherwise)."""
    if scale <= 0:
        return None
    exact = math.log2(scale)
    rounded = round(exact)
    return int(rounded) if abs(exact - rounded) < 1e-3 else None


def count_leading_sign_bits(x: np.ndarray) -> np.ndarray:
    """CountLeadingSignBits of int32 values (31 for 0)."""
    x = np.asarray(x, dtype=np.int64)
    magnitude = np.where(x >= 0, x, -x - 1)
    _, exponent = np.frexp(magnitude.astype(np.float64))
    return np.where(magnitude == 0, 31, 31 - exponent).astype(np.int64)


def divide_by_pot_as_compiled(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """RoundingDivideByPOT on int32 as TFLite's compiled code computes it, exponents above 31 included.

    Small DIV numerators get exponents past 31; there C's shifts keep only the low five
    bits of the count (x86), the mask ``(1 << exponent) - 1`` truncates to -1, and the
    rounding compares the whole value against -1 (or 0 for negative values).
    """
    exponent = np.asarray(exponent, dtype=np.int64)
    large = exponent > 31
    if not np.any(large):
        return rounding_divide_by_pot(x, exponent)
    normal = rounding_divide_by_pot(x, np.where(large, 0, exponent))
    threshold = np.where(x < 0, 0, -1)
    odd = (x >> (exponent & 31)) + (x > threshold)
    return np.where(large, odd, normal)


@dataclass
class BinaryRecipe:
    """Everything one quantized binary op needs at run time, derived once from its facts.

    ``z1``/``z2``/``zo``: zero points; ``low``/``high``: the output clamp (the type's range
    met with a fused activation's); ``r1``/``r2``/``ro``: requantizers, ``left``: the common
    left shift (ADD/SUB/SQUARED_DIFFERENCE); ``pot``: the input shifts of int16 ADD/SUB with
    power-of-two scales; ``multiplier``/``shift``: DIV's output multiplier.
    """

    kind: str
    dtype: DatumType
    z1: int
    z2: int
    zo: int
    low: int
    high: int
    left: int = 0
    r1: Requantizer | None = None
    r2: Requantizer | None = None
    ro: Requantizer | None = None
    pot: tuple[int, int] | None = None
    multiplier: int = 0
    shift: int = 0
    extra: dict = field(default_factory=dict)

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        kind = self.kind
        if kind in ("maximum", "minimum"):
            out = np.maximum(a, b) if kind == "maximum" else np.minimum(a, b)
            return np.clip(out, self.low, self.high).astype(a.dtype)
        x, y = a.astype(np.int64), b.astype(np.int64)
        if self.pot is not None:
            out = self._pot_int16(x, y)
        elif kind in ("add", "sub", "squared_difference"):
            assert self.r1 is not None and self.r2 is not None and self.ro is not None
            scaled1 = self.r1((x - self.z1) << self.left)
            scaled2 = self.r2((y - self.z2) << self.left)
            if kind == "add":
                raw = scaled1 + scaled2
            else:
                raw = scaled1 - scaled2
                if kind == "squared_difference":
                    raw = wrap32(raw * raw)
            out = self.ro(raw) + self.zo
        elif kind == "mul":
            assert self.ro is not None
            out = self.ro(wrap32((x - self.z1) * (y - self.z2))) + self.zo
        else:
            out = self._divide(x - self.z1, y - self.z2)
        return np.clip(out, self.low, self.high).astype(a.dtype)

    def _pot_int16(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        assert self.pot is not None
        shift1, shift2 = self.pot
        if shift1:
            x = rounding_divide_by_pot(x, -shift1)
        if shift2:
            y = rounding_divide_by_pot(y, -shift2)
        out = x + y if self.kind == "add" else x - y
        return np.clip(out, -32768, 32767)

    def _divide(self, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
        if np.any(denominator == 0):
            raise RunError("DIV: division by zero (a divisor equals its zero point)")
        negative = denominator < 0
        numerator = np.where(negative, -numerator, numerator)
        denominator = np.where(negative, -denominator, denominator)
        reciprocal, recip_shift = get_reciprocal(denominator, 31)
        headroom = count_leading_sign_bits(numerator)
        unscaled = srdhm(wrap32(numerator << headroom), reciprocal)
        total_shift = self.shift - recip_shift - headroom
        if np.any(total_shift > 0):
            raise RunError("DIV: quotient out of the fixed-point range")
        return divide_by_pot_as_compiled(srdhm(unscaled, self.multiplier), -total_shift) + self.zo


def binary_recipe(kind: str, a: TypedFact, b: TypedFact, quant: QParams, clamp: tuple[float, float] | None,
                  pot_scale_int16: bool = True) -> BinaryRecipe:
    """The recipe of quantized ``kind`` on inputs ``a`` and ``b`` with output quantization ``quant``;
    ``clamp`` is a fused activation's bounds (integers of the output type) or None."""
    if kind not in KINDS:
        raise AnalysisError(f"binary kind must be one of {', '.join(KINDS)}, got {kind!r}")
    dtype = a.dtype
    if dtype not in QUANTIZED or a.qparams is None or b.qparams is None:
        raise AnalysisError(f"quantized {kind.upper()} needs quantized 8- or 16-bit inputs, got {a} and {b}")
    if b.dtype != dtype:
        raise AnalysisError(f"{kind.upper()} inputs must have the same type, got {a} and {b}")
    if kind == "squared_difference" and dtype not in (DatumType.I8, DatumType.I16):
        raise AnalysisError(f"quantized SQUARED_DIFFERENCE supports int8 and int16, got {dtype}")
    low, high = integer_limits(dtype)
    if clamp is not None:
        low, high = max(low, math.ceil(clamp[0])), min(high, math.floor(clamp[1]))
    recipe = BinaryRecipe(kind, dtype, zero_of(a.qparams), zero_of(b.qparams), zero_of(quant), low, high)
    if kind in ("maximum", "minimum"):
        return recipe
    s1, s2, so = scale_of(a.qparams), scale_of(b.qparams), scale_of(quant)
    zero_points = (recipe.z1, recipe.z2, recipe.zo)
    if kind in ("add", "sub", "squared_difference"):
        if dtype == DatumType.I16 and any(zero_points):
            raise AnalysisError(f"int16 {kind.upper()} needs zero points 0")
        logs = [checked_log2(s) for s in (s1, s2, so)]
        if dtype == DatumType.I16 and pot_scale_int16 and None not in logs and kind != "squared_difference":
            shift1, shift2 = logs[0] - logs[2], logs[1] - logs[2]  # type: ignore[operator]
            if (shift1 and shift2) or shift1 > 0 or shift2 > 0:
                raise AnalysisError("int16 ADD/SUB with power-of-two scales can only scale one input down")
            recipe.pot = (shift1, shift2)
            return recipe
        if kind == "squared_difference":  # TFLite Micro's int16 kernel shifts nothing: 16 bits squared fit
            left = 0 if dtype == DatumType.I16 else 7
        else:
            left = 15 if dtype == DatumType.I16 else 20
        twice_max = np.float64(2 * max(_f32(s1), _f32(s2)))
        recipe.left = left
        recipe.r1 = Requantizer([np.float64(_f32(s1)) / twice_max])
        recipe.r2 = Requantizer([np.float64(_f32(s2)) / twice_max])
        if kind == "squared_difference":
            real = (twice_max * twice_max) / np.float64(_f32((1 << (2 * left)) * _f32(so)))
        else:
            real = twice_max / np.float64(_f32((1 << left) * _f32(so)))
        recipe.ro = Requantizer([real])
    elif kind == "mul":
        if dtype == DatumType.I16 and any(zero_points):
            raise AnalysisError("int16 MUL needs zero points 0")
        recipe.ro = Requantizer([np.float64(_f32(_f32(_f32(s1) * _f32(s2)) / _f32(so)))])
    else:
        real = np.float64(_f32(_f32(s1) / _f32(_f32(s2) * _f32(so))))
        recipe.multiplier, recipe.shift = quantize_multiplier(real)
    return recipe
