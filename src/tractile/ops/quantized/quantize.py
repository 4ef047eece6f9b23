"""The recipes of TFLite's QUANTIZE (float to integers; integer requantization, int8 <-> int16
included) and DEQUANTIZE, per tensor or per channel.

Floats quantize as ``round(x / scale) + zero_point`` (the division in float32, halves away
from zero, saturated); integers requantize ``x - zero_point`` with the fixed-point multiplier
of ``input_scale / output_scale`` (a double ratio); dequantizing computes
``scale * (q - zero_point)`` in double and rounds to float32.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import QParams, TypedFact
from .common import integer_limits, scale_of, scales_of, zero_of
from .fixedpoint import Requantizer, round_half_away

#: the integer types QUANTIZE writes and DEQUANTIZE reads
INTEGERS = (DatumType.I8, DatumType.U8, DatumType.I16, DatumType.I32)


def _per_axis(values: np.ndarray, q: QParams, rank: int) -> np.ndarray:
    """Per-channel parameters shaped to broadcast against a tensor of ``rank``."""
    if q.axis is None or values.size == 1:
        return values.reshape(())
    shape = [1] * rank
    shape[q.axis] = -1
    return values.reshape(shape)


@dataclass
class QuantizeRecipe:
    """Float to ``dtype``: ``clamp(round(x / scale) + zero_point)``."""

    quant: QParams
    dtype: DatumType

    def __call__(self, x: np.ndarray) -> np.ndarray:
        low, high = integer_limits(self.dtype)
        scales = _per_axis(scales_of(self.quant), self.quant, x.ndim)
        zeros = _per_axis(np.asarray(self.quant.zero_point, dtype=np.int64), self.quant, x.ndim)
        ratio = x.astype(np.float32) / scales
        values = round_half_away(ratio).astype(np.int64) + zeros
        return np.clip(values, low, high).astype(self.dtype.np)


@dataclass
class RequantizeRecipe:
    """Integers of one quantization to ``dtype`` integers of another (per tensor)."""

    zi: int
    zo: int
    requant: Requantizer
    dtype: DatumType

    def __call__(self, x: np.ndarray) -> np.ndarray:
        low, high = integer_limits(self.dtype)
        values = self.requant(x.astype(np.int64) - self.zi) + self.zo
        return np.clip(values, low, high).astype(self.dtype.np)


def quantize_recipe(x: TypedFact, quant: QParams, to: DatumType) -> QuantizeRecipe | RequantizeRecipe:
    if to not in INTEGERS:
        raise AnalysisError(f"QUANTIZE writes {', '.join(map(str, INTEGERS))}, not {to}")
    if x.dtype.is_float:
        if quant.axis is not None and len(quant.scale) > 1 and not -x.rank <= quant.axis < x.rank:
            raise AnalysisError(f"quantization axis {quant.axis} is out of range for {x}")
        return QuantizeRecipe(quant, to)
    if x.dtype not in INTEGERS or x.qparams is None:
        raise AnalysisError(f"QUANTIZE input must be float or quantized integers, got {x}")
    if len(x.qparams.scale) != 1 or len(quant.scale) != 1:
        raise AnalysisError("requantization needs per-tensor quantization")
    real = np.float64(scale_of(x.qparams)) / np.float64(scale_of(quant))
    return RequantizeRecipe(zero_of(x.qparams), zero_of(quant), Requantizer([real]), to)


@dataclass
class DequantizeRecipe:
    """``scale * (q - zero_point)`` in double, rounded to float32."""

    quant: QParams

    def __call__(self, x: np.ndarray) -> np.ndarray:
        scales = _per_axis(scales_of(self.quant).astype(np.float64), self.quant, x.ndim)
        zeros = _per_axis(np.asarray(self.quant.zero_point, dtype=np.int64), self.quant, x.ndim)
        return (scales * (x.astype(np.int64) - zeros)).astype(np.float32)


def dequantize_recipe(x: TypedFact) -> DequantizeRecipe:
    if x.dtype not in INTEGERS + (DatumType.I4,) or x.qparams is None:
        raise AnalysisError(f"DEQUANTIZE needs a quantized input, got {x}")
    return DequantizeRecipe(x.qparams)
