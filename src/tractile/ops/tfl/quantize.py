"""QUANTIZE (float to integers, or requantization between integer types), DEQUANTIZE, CAST."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ..base import expect_inputs
from ..quantized.common import integer_limits, scale_of, scales_of, zero_of
from ..quantized.fixedpoint import Requantizer, round_half_away
from .common import TflOp

INTEGERS = (DatumType.I8, DatumType.U8, DatumType.I16, DatumType.I32)


@dataclass(frozen=True)
class Quantize(TflOp):
    """Float to integers (``round(x / scale) + zero_point``), or integer requantization."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        out = self.out_dtype(0, DatumType.I8)
        if out not in INTEGERS or self.oq(0) is None:
            raise AnalysisError(f"QUANTIZE needs a quantized integer output, got {out}")
        if not x.dtype.is_float and (x.dtype not in INTEGERS or self.iq(0) is None):
            raise AnalysisError(f"QUANTIZE input must be float or quantized integers, got {x}")
        return [self.fact(0, out, x.shape)]

    @cached_property
    def _requant(self):
        return Requantizer([np.float64(scale_of(self.iq(0))) / np.float64(scale_of(self.oq(0)))])

    def eval(self, inputs):
        x = inputs[0]
        out = self.out_dtype(0, DatumType.I8)
        low, high = integer_limits(out)
        q = self.oq(0)
        if x.dtype.kind == "f":
            scales = scales_of(q)
            zeros = np.asarray(q.zero_point, dtype=np.int64)
            if q.axis is not None and scales.size > 1:
                shape = [1] * x.ndim
                shape[q.axis] = -1
                scales, zeros = scales.reshape(shape), zeros.reshape(shape)
            ratio = x.astype(np.float32) / scales
            values = round_half_away(ratio).astype(np.int64) + zeros
            return [np.clip(values, low, high).astype(out.np)]
        values = self._requant(x.astype(np.int64) - zero_of(self.iq(0))) + zero_of(q)
        return [np.clip(values, low, high).astype(out.np)]


@dataclass(frozen=True)
class Dequantize(TflOp):
    """Integers (or float16) to float32: ``scale * (q - zero_point)`` per tensor or per axis."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if x.dtype == DatumType.F16:
            return [self.fact(0, DatumType.F32, x.shape)]
        if x.dtype not in INTEGERS + (DatumType.I4,) or self.iq(0) is None:
            raise AnalysisError(f"DEQUANTIZE needs a quantized input, got {x}")
        return [self.fact(0, DatumType.F32, x.shape)]

    def eval(self, inputs):
        x = inputs[0]
        if x.dtype == np.float16:
            return [x.astype(np.float32)]
        q = self.iq(0)
        scales = np.asarray(q.scale, dtype=np.float32).astype(np.float64)
        zeros = np.asarray(q.zero_point, dtype=np.int64)
        if q.axis is not None and scales.size > 1:
            shape = [1] * x.ndim
            shape[q.axis] = -1
            scales, zeros = scales.reshape(shape), zeros.reshape(shape)
        return [(scales * (x.astype(np.int64) - zeros)).astype(np.float32)]


@dataclass(frozen=True)
class Cast(TflOp):
    """Convert to ``out_dtypes[0]`` (floats to integers truncate, as C casts do)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        if not self.out_dtypes:
            raise AnalysisError("CAST needs its output datum type")
        return [self.fact(0, inputs[0].dtype, inputs[0].shape)]

    def eval(self, inputs):
        x = inputs[0]
        out = self.out_dtypes[0].np
        if x.dtype.kind == "f" and out.kind in "iu":
            x = np.trunc(x)
        if out == np.bool_:
            return [x != 0]
        return [x.astype(out)]
