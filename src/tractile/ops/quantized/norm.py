"""The integer recipe of L2 normalization on int8 (TFLite's L2_NORMALIZATION): the sum of squared
``x - zero_point`` over the last axis, its fixed-point inverse square root, and each value
scaled by it into the output scale 1/128 (zero point 0)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import QParams, TypedFact
from .common import scale_of, zero_of
from .fixedpoint import Requantizer
from .functions import inverse_sqrt_multipliers

OUTPUT_SHIFT = 7


@dataclass
class L2NormRecipe:
    zi: int

    def __call__(self, x: np.ndarray) -> np.ndarray:
        values = x.astype(np.int64) - self.zi
        total = (values * values).sum(axis=-1, keepdims=True)
        multiplier, shift = inverse_sqrt_multipliers(total)
        rows = values.reshape(-1, values.shape[-1] if values.ndim else 1)
        multipliers, shifts = multiplier.reshape(-1), shift.reshape(-1) + OUTPUT_SHIFT
        out = np.empty(rows.shape, dtype=np.int64)
        for row in range(rows.shape[0]):
            out[row] = Requantizer.from_pairs(int(multipliers[row]), int(shifts[row]))(rows[row])
        return np.clip(out, -128, 127).astype(np.int8).reshape(x.shape)


def l2_norm_recipe(x: TypedFact, quant: QParams) -> L2NormRecipe:
    if x.dtype != DatumType.I8 or x.qparams is None or len(x.qparams.scale) != 1:
        raise AnalysisError(f"a quantized L2 normalization needs an int8 input quantized per tensor, got {x}")
    if scale_of(quant) != 1.0 / 128 or zero_of(quant) != 0:
        raise AnalysisError(f"int8 L2 normalization needs the output scale 1/128 and zero point 0, got {quant}")
    return L2NormRecipe(zero_of(x.qparams))
