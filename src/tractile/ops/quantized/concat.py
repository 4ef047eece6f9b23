"""Concatenation of quantized inputs rescaled to the output's quantization (TFLite's
``ConcatenationWithScaling``): each input quantized differently from the output is mapped
in float32, ``round(q * s_in / s_out - zp_in * s_in / s_out) + zp_out``, halves away from zero,
then saturated to the type."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import QParams, TypedFact
from .common import QUANTIZED, integer_limits, scale_of, zero_of


def _round_half_away_f32(values: np.ndarray) -> np.ndarray:
    return np.where(values >= 0, np.floor(values + np.float32(0.5)), np.ceil(values - np.float32(0.5)))


class ConcatRecipe:
    """Per input: None (copied as is) or the float32 (scale, bias) that maps it to the output."""

    def __init__(self, inputs: list[TypedFact], quant: QParams):
        dtype = inputs[0].dtype
        if dtype not in QUANTIZED:
            raise AnalysisError(f"a quantized concatenation needs 8- or 16-bit integers, got {inputs[0]}")
        if quant.axis is not None and len(quant.scale) > 1:
            raise AnalysisError("a quantized concatenation needs per-tensor quantization")
        self.dtype: DatumType = dtype
        self.zero = zero_of(quant)
        self.maps: list[tuple[np.float32, np.float32] | None] = []
        for index, fact in enumerate(inputs):
            q = fact.qparams
            if q is None:
                raise AnalysisError(f"concatenation input {index} ({fact}) is not quantized")
            if scale_of(q) == scale_of(quant) and zero_of(q) == zero_of(quant):
                self.maps.append(None)
                continue
            scale = np.float32(np.float32(scale_of(q)) * (np.float32(1) / np.float32(scale_of(quant))))
            self.maps.append((scale, np.float32(np.float32(-zero_of(q)) * scale)))

    def rescaled(self, index: int, part: np.ndarray) -> np.ndarray:
        found = self.maps[index]
        if found is None:
            return part
        scale, bias = found
        value = _round_half_away_f32((part.astype(np.float32) * scale + bias).astype(np.float32))
        low, high = integer_limits(self.dtype)
        return np.clip(value.astype(np.int64) + self.zero, low, high).astype(part.dtype)
