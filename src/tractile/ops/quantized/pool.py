"""The integer recipe of quantized pooling (TFLite's AVERAGE_POOL_2D and MAX_POOL_2D on int8,
uint8 and int16): the raw values are averaged (no rescaling: TFLite's pooling keeps the input's
quantization), the sum divided by the taps inside the input rounding half away from zero, then
clamped to the type's range met with a fused Clip's."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import TypedFact
from .common import QUANTIZED
from .conv import clamp_of


@dataclass(frozen=True)
class PoolRecipe:
    dtype: DatumType
    low: int
    high: int

    def average(self, total: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """int64 window sums over tap counts (broadcasting), rounded as TFLite's integer kernels."""
        rounded = np.sign(total) * ((np.abs(total) + counts // 2) // counts)
        return np.clip(rounded, self.low, self.high).astype(self.dtype.np)


def pool_recipe(x: TypedFact, activation) -> PoolRecipe:
    if x.dtype not in QUANTIZED or x.qparams is None:
        raise AnalysisError(f"a quantized average pool needs a quantized 8- or 16-bit input, got {x}")
    low, high = clamp_of(activation, x.dtype)
    return PoolRecipe(x.dtype, low, high)
