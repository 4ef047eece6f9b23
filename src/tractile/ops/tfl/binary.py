"""Broadcasting elementwise ops: ADD, SUB, MUL, DIV, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM.

Float and int32 inputs compute directly (C's truncating integer division). Quantized
inputs follow TFLite's reference kernels: ADD, SUB and SQUARED_DIFFERENCE bring both
inputs to a common scale with a left shift (20 bits for 8-bit types, 15 for int16; 7
for SQUARED_DIFFERENCE) and a fixed-point multiplier each, combine, then requantize;
MUL requantizes the product of the offset inputs; DIV multiplies by a fixed-point
reciprocal of the divisor; MAXIMUM and MINIMUM compare the raw values. int16 ADD/SUB
with power-of-two scales (``pot_scale_int16``) take TFLite's shift-and-saturate path.
The real multipliers are derived from the float32 scales exactly as TFLite's Prepare
derives them (float32 or double arithmetic, operation by operation).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError, RunError
from ..base import expect_inputs
from ..binary import broadcast_shapes
from .common import TflOp, activation_range, apply_float_activation, check_activation, scale_of, zero_of
from .fixedpoint import Requantizer, quantize_multiplier, rounding_divide_by_pot, srdhm, wrap32
from .fixedpoint_functions import get_reciprocal

KINDS = ("add", "sub", "mul", "div", "squared_difference", "maximum", "minimum")
QUANTIZED_TYPES = (DatumType.I8, DatumType.U8, DatumType.I16)
PLAIN_INTEGERS = (DatumType.I32, DatumType.I64)


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


def integer_activation_range(activation: str, dtype: DatumType) -> tuple[int, int]:
    """CalculateActivationRange for plain (not quantized) integers."""
    info = np.iinfo(dtype.np)
    low, high = int(info.min), int(info.max)
    if activation == "RELU":
        return 0, high
    if activation == "RELU6":
        return 0, 6
    if activation == "RELU_N1_TO_1":
        return -1, 1
    return low, high


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


@dataclass(frozen=True)
class Binary(TflOp):
    """One of the broadcasting binary ops (``kind``), with a fused activation."""

    kind: str = "add"
    activation: str = "NONE"
    pot_scale_int16: bool = True

    @property
    def name(self) -> str:  # type: ignore[override]
        return "Tfl" + "".join(part.capitalize() for part in self.kind.split("_"))

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        if self.kind not in KINDS:
            raise AnalysisError(f"binary kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        check_activation(self.activation)
        a, b = inputs
        if a.dtype != b.dtype:
            raise AnalysisError(f"{self.kind.upper()} inputs must have the same type, got {a} and {b}")
        shape = broadcast_shapes(a.shape, b.shape)
        dtype = a.dtype
        if dtype in QUANTIZED_TYPES and self.kind not in ("maximum", "minimum"):
            if self.iq(0) is None or self.iq(1) is None or self.oq(0) is None:
                raise AnalysisError(f"quantized {self.kind.upper()} needs quantized inputs and output")
            if self.kind == "squared_difference" and dtype != DatumType.I8:
                raise AnalysisError(f"quantized SQUARED_DIFFERENCE supports int8, got {dtype}")
            self._params(dtype)
        elif not (dtype.is_float or dtype in PLAIN_INTEGERS or dtype in QUANTIZED_TYPES):
            raise AnalysisError(f"{self.kind.upper()} does not support {dtype}")
        return [self.fact(0, dtype, shape)]

    # quantized parameters -------------------------------------------------------------------
    def _params(self, dtype: DatumType) -> dict:
        """Fixed-point parameters for quantized ``dtype`` tensors (derived once)."""
        return self.derived(dtype, lambda: self._derive(dtype))

    def _derive(self, dtype: DatumType) -> dict:
        s1, s2, so = scale_of(self.iq(0)), scale_of(self.iq(1)), scale_of(self.oq(0))
        params = {"z1": zero_of(self.iq(0)), "z2": zero_of(self.iq(1)), "zo": zero_of(self.oq(0))}
        params["range"] = activation_range(self.activation, self.oq(0), dtype)
        if self.kind in ("add", "sub", "squared_difference"):
            if dtype == DatumType.I16 and (params["z1"] or params["z2"] or params["zo"]):
                raise AnalysisError("int16 ADD/SUB need zero points 0")
            logs = [checked_log2(s) for s in (s1, s2, so)]
            if dtype == DatumType.I16 and self.pot_scale_int16 and None not in logs and self.kind != \
                    "squared_difference":
                shift1, shift2 = logs[0] - logs[2], logs[1] - logs[2]
                if (shift1 and shift2) or shift1 > 0 or shift2 > 0:
                    raise AnalysisError("int16 ADD/SUB with power-of-two scales can only scale one input down")
                params["pot"] = (shift1, shift2)
                return params
            left = 7 if self.kind == "squared_difference" else (15 if dtype == DatumType.I16 else 20)
            twice_max = np.float64(2 * max(_f32(s1), _f32(s2)))
            params["left"] = left
            params["r1"] = Requantizer([np.float64(_f32(s1)) / twice_max])
            params["r2"] = Requantizer([np.float64(_f32(s2)) / twice_max])
            if self.kind == "squared_difference":
                real = (twice_max * twice_max) / np.float64(_f32((1 << (2 * left)) * _f32(so)))
            else:
                real = twice_max / np.float64(_f32((1 << left) * _f32(so)))
            params["ro"] = Requantizer([real])
        elif self.kind == "mul":
            if dtype == DatumType.I16 and (params["z1"] or params["z2"] or params["zo"]):
                raise AnalysisError("int16 MUL needs zero points 0")
            params["ro"] = Requantizer([np.float64(_f32(_f32(_f32(s1) * _f32(s2)) / _f32(so)))])
        elif self.kind == "div":
            real = np.float64(_f32(_f32(s1) / _f32(_f32(s2) * _f32(so))))
            params["multiplier"], params["shift"] = quantize_multiplier(real)
        return params

    # evaluation -------------------------------------------------------------------------------
    def eval(self, inputs):
        a, b = inputs
        kind = self.kind
        if kind in ("maximum", "minimum"):
            out = np.maximum(a, b) if kind == "maximum" else np.minimum(a, b)
            if a.dtype.kind == "f":
                out = apply_float_activation(out, self.activation)
            return [np.asarray(out, dtype=a.dtype)]
        if a.dtype.kind == "f":
            return [self._float(a, b)]
        dtype = DatumType.from_numpy(a.dtype)
        if dtype in PLAIN_INTEGERS:
            return [self._plain_integer(a, b, dtype)]
        return [self._quantized(a, b, dtype)]

    def _float(self, a, b):
        if self.kind == "add":
            out = np.add(a, b)
        elif self.kind == "sub":
            out = np.subtract(a, b)
        elif self.kind == "mul":
            out = np.multiply(a, b)
        elif self.kind == "div":
            with np.errstate(divide="ignore", invalid="ignore"):
                out = np.divide(a, b)
        else:
            diff = np.subtract(a, b)
            out = diff * diff
        return apply_float_activation(np.asarray(out, dtype=a.dtype), self.activation)

    def _plain_integer(self, a, b, dtype):
        x, y = a.astype(np.int64), b.astype(np.int64)
        if self.kind == "add":
            out = x + y
        elif self.kind == "sub":
            out = x - y
        elif self.kind == "mul":
            out = x * y
        elif self.kind == "div":
            if np.any(y == 0):
                raise RunError("DIV: division by zero")
            quotient = np.abs(x) // np.abs(y)
            out = np.where((x < 0) != (y < 0), -quotient, quotient)
        else:
            out = (x - y) * (x - y)
        if dtype == DatumType.I32:
            out = wrap32(out)
        low, high = integer_activation_range(self.activation, dtype)
        return np.clip(out, low, high).astype(a.dtype)

    def _quantized(self, a, b, dtype):
        p = self._params(dtype)
        x = a.astype(np.int64)
        y = b.astype(np.int64)
        if "pot" in p:
            out = self._pot_int16(x, y, p["pot"])
        elif self.kind in ("add", "sub", "squared_difference"):
            left = p["left"]
            scaled1 = p["r1"]((x - p["z1"]) << left)
            scaled2 = p["r2"]((y - p["z2"]) << left)
            if self.kind == "add":
                raw = scaled1 + scaled2
            else:
                raw = scaled1 - scaled2
                if self.kind == "squared_difference":
                    raw = wrap32(raw * raw)
            out = p["ro"](raw) + p["zo"]
        elif self.kind == "mul":
            out = p["ro"](wrap32((x - p["z1"]) * (y - p["z2"]))) + p["zo"]
        else:
            out = self._divide(x - p["z1"], y - p["z2"], p)
        low, high = p["range"]
        return np.clip(out, low, high).astype(a.dtype)

    def _pot_int16(self, x, y, shifts):
        shift1, shift2 = shifts
        if shift1:
            x = rounding_divide_by_pot(x, -shift1)
        if shift2:
            y = rounding_divide_by_pot(y, -shift2)
        out = x + y if self.kind == "add" else x - y
        return np.clip(out, -32768, 32767)

    def _divide(self, numerator, denominator, p):
        if np.any(denominator == 0):
            raise RunError("DIV: division by zero (a divisor equals its zero point)")
        negative = denominator < 0
        numerator = np.where(negative, -numerator, numerator)
        denominator = np.where(negative, -denominator, denominator)
        reciprocal, recip_shift = get_reciprocal(denominator, 31)
        headroom = count_leading_sign_bits(numerator)
        unscaled = srdhm(wrap32(numerator << headroom), reciprocal)
        total_shift = p["shift"] - recip_shift - headroom
        if np.any(total_shift > 0):
            raise RunError("DIV: quotient out of the fixed-point range")
        return divide_by_pot_as_compiled(srdhm(unscaled, p["multiplier"]), -total_shift) + p["zo"]

    def cost(self, inputs):
        return {"flops": int(np.prod([d if isinstance(d, int) else 1
                                      for d in broadcast_shapes(inputs[0].shape, inputs[1].shape)]))}

