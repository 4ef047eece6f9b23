"""SOFTMAX and LOG_SOFTMAX over the last axis: float, and TFLite's fixed-point int8 kernels.

The quantized softmax follows TFLite's reference kernel: input differences to the row
maximum are scaled to Q5.26 by ``beta * input_scale``, exponentiated with gemmlowp's
``exp_on_negative_values``, summed in Q12.19, and divided through the fixed-point
reciprocal of the sum. Its output scale is 1/256 (int8) or 1/65536 (int16).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ..base import expect_inputs
from .common import TflOp, scale_of
from .fixedpoint import FP32, get_reciprocal, input_radius, rounding_divide_by_pot, softmax_scaling, srdhm, wrap32

SCALED_DIFF_BITS = 5
ACCUMULATION_BITS = 12


def scaled_differences(x: np.ndarray, multiplier: int, left_shift: int, diff_min: int):
    """(row maxima differences rescaled to Q5.26, mask of the entries that count)."""
    x = x.astype(np.int64)
    diff = x - x.max(axis=-1, keepdims=True)
    mask = diff >= diff_min
    rescaled = srdhm(wrap32(diff << left_shift), multiplier)
    return rescaled, mask


@dataclass(frozen=True)
class Softmax(TflOp):
    """``softmax(beta * x)`` over the last axis."""

    beta: float = 1.0

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if x.rank < 1:
            raise AnalysisError("SOFTMAX needs an input of rank >= 1")
        if x.dtype.is_float:
            return [self.fact(0, x.dtype, x.shape)]
        if x.dtype not in (DatumType.I8, DatumType.U8) or self.iq(0) is None:
            raise AnalysisError(f"quantized SOFTMAX supports int8/uint8 inputs, got {x}")
        out = self.out_dtype(0, x.dtype)
        if out not in (DatumType.I8, DatumType.U8, DatumType.I16):
            raise AnalysisError(f"quantized SOFTMAX outputs int8, uint8 or int16, got {out}")
        return [self.fact(0, x.dtype, x.shape)]

    @cached_property
    def _params(self):
        multiplier, shift = softmax_scaling(np.float32(self.beta), scale_of(self.iq(0)), SCALED_DIFF_BITS)
        return multiplier, shift, -input_radius(SCALED_DIFF_BITS, shift)

    def eval(self, inputs):
        x = inputs[0]
        if x.dtype.kind == "f":
            shifted = (x - x.max(axis=-1, keepdims=True)) * x.dtype.type(self.beta)
            e = np.exp(shifted)
            return [e / e.sum(axis=-1, keepdims=True)]
        multiplier, shift, diff_min = self._params
        out_dtype = self.out_dtype(0, DatumType.from_numpy(x.dtype)).np
        info = np.iinfo(out_dtype)
        rescaled, mask = scaled_differences(x, multiplier, shift, diff_min)
        exps = FP32.exp_on_negative_values(rescaled, SCALED_DIFF_BITS)
        exps = np.where(mask, exps, 0)
        total = wrap32(rounding_divide_by_pot(exps, ACCUMULATION_BITS).sum(axis=-1, keepdims=True))
        reciprocal, bits_over_unit = get_reciprocal(total, ACCUMULATION_BITS)
        exponent = bits_over_unit + 31 - 8 * out_dtype.itemsize
        if np.any((exponent < 0) | (exponent > 31)):
            raise AnalysisError("softmax sum out of range")
        unsaturated = rounding_divide_by_pot(srdhm(reciprocal, exps), exponent)
        shifted = unsaturated + int(info.min)
        out = np.where(mask, np.clip(shifted, info.min, info.max), info.min)
        return [out.astype(out_dtype)]


@dataclass(frozen=True)
class LogSoftmax(TflOp):
    """``log(softmax(x))`` over the last axis (float)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if not x.dtype.is_float:
            raise AnalysisError(f"LOG_SOFTMAX supports float inputs, got {x}")
        return [self.fact(0, x.dtype, x.shape)]

    def eval(self, inputs):
        x = inputs[0]
        shifted = x - x.max(axis=-1, keepdims=True)
        return [shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))]
