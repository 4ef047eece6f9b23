"""The recipe of comparisons between quantized 8-bit tensors (TFLite's ComparisonWithScaling):
each input's ``x - zero_point`` shifted left by 8 bits and multiplied by its own scale (a
fixed-point multiplier below one), so inputs of different quantizations compare as reals."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import TypedFact
from .common import scale_of, zero_of
from .fixedpoint import Requantizer

LEFT_SHIFT = 8


@dataclass
class ComparisonRecipe:
    z1: int
    z2: int
    r1: Requantizer
    r2: Requantizer

    def __call__(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Both operands rescaled to comparable int32 values."""
        return (self.r1((a.astype(np.int64) - self.z1) << LEFT_SHIFT),
                self.r2((b.astype(np.int64) - self.z2) << LEFT_SHIFT))


def comparison_recipe(a: TypedFact, b: TypedFact) -> ComparisonRecipe | None:
    """The rescaling of two quantized 8-bit operands (None when they are not both quantized)."""
    if a.dtype not in (DatumType.I8, DatumType.U8) or a.qparams is None or b.qparams is None:
        return None
    reals = []
    for fact in (a, b):
        if len(fact.qparams.scale) != 1:
            raise AnalysisError(f"comparing quantized tensors needs per-tensor quantization, got {fact}")
        scale = np.float64(scale_of(fact.qparams))
        if not 0 < scale < 1:
            raise AnalysisError(f"comparing quantized tensors needs scales in (0, 1), got {scale}")
        reals.append(scale)
    return ComparisonRecipe(zero_of(a.qparams), zero_of(b.qparams), Requantizer([reals[0]]), Requantizer([reals[1]]))
