"""The integer recipe of MEAN and SUM on quantized tensors (TFLite's ``QuantizedMeanOrSum``).

The raw values are summed in int32, the input zero point removed (``zero_point * count``)
and the sum requantized with the multiplier of ``input_scale / output_scale``; MEAN folds
``1 / count`` into that multiplier the way TFLite does (the multiplier shifted left by
``floor(log2(count))`` bits, divided by the count).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import QParams, TypedFact
from .common import QUANTIZED, integer_limits, scale_of, zero_of
from .fixedpoint import Requantizer, quantize_multiplier, wrap32


def mean_multiplier(multiplier: int, shift: int, count: int) -> tuple[int, int]:
    """TFLite's folding of ``1 / count`` into a quantized multiplier (QuantizedMeanOrSum)."""
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    return (multiplier << extra) // count, shift - extra


@dataclass
class MeanSumRecipe:
    """``clamp(requant(sum - zi * count) + zo)`` with the multiplier and shift for ``count``
    reduced elements (``mean``: 1 / count folded in)."""

    mean: bool
    zi: int
    zo: int
    multiplier: int
    shift: int
    dtype: DatumType

    def parameters(self, count: int) -> tuple[int, int]:
        """The multiplier and shift applied to a sum of ``count`` elements."""
        if self.mean and count:
            return mean_multiplier(self.multiplier, self.shift, count)
        return self.multiplier, self.shift

    def __call__(self, x: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        total = np.sum(x, axis=axes, keepdims=keepdims, dtype=np.int64)
        multiplier, shift = self.parameters(count)
        shifted = wrap32(total - self.zi * count)
        out = Requantizer.from_pairs(multiplier, shift)(shifted) + self.zo
        low, high = integer_limits(self.dtype)
        return np.asarray(np.clip(out, low, high), dtype=self.dtype.np)


def mean_sum_recipe(reducer: str, x: TypedFact, quant: QParams) -> MeanSumRecipe:
    if reducer not in ("mean", "sum"):
        raise AnalysisError(f"a quantized Reduce{reducer.capitalize()} is not supported (mean and sum are)")
    if x.dtype not in QUANTIZED or x.qparams is None or len(x.qparams.scale) != 1 or len(quant.scale) != 1:
        raise AnalysisError(f"a quantized Reduce{reducer.capitalize()} needs an input quantized per tensor, got {x}")
    if x.dtype == DatumType.I16 and (zero_of(x.qparams) or zero_of(quant)):
        raise AnalysisError(f"int16 Reduce{reducer.capitalize()} needs zero points 0")
    multiplier, shift = quantize_multiplier(np.float64(scale_of(x.qparams)) / np.float64(scale_of(quant)))
    return MeanSumRecipe(reducer == "mean", zero_of(x.qparams), zero_of(quant), multiplier, shift, x.dtype)
