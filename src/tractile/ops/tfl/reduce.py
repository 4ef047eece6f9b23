"""MEAN, SUM and REDUCE_MAX over constant axes (TFLite's reference kernels).

Quantized MEAN and SUM sum the raw values in int32, remove the input zero point
(``zero_point * count``) and requantize with the multiplier of ``input_scale /
output_scale``; MEAN folds ``1 / count`` into that multiplier the way TFLite does (the
multiplier shifted left by ``floor(log2(count))`` bits, divided by the count).
REDUCE_MAX on quantized values compares raw values (input and output share their
quantization).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ..base import expect_inputs
from ..quantized.common import integer_limits, scale_of, zero_of
from ..quantized.fixedpoint import Requantizer, quantize_multiplier, wrap32
from .common import TflOp

KINDS = ("mean", "sum", "max")
QUANTIZED = (DatumType.I8, DatumType.U8, DatumType.I16)


def mean_multiplier(multiplier: int, shift: int, count: int) -> tuple[int, int]:
    """TFLite's folding of ``1 / count`` into a quantized multiplier (QuantizedMeanOrSum)."""
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    return (multiplier << extra) // count, shift - extra


@dataclass(frozen=True)
class Reduce(TflOp):
    """Reduce ``kind`` (mean, sum, max) over ``axes`` (negative axes count from the end)."""

    kind: str = "mean"
    axes: tuple = ()
    keep_dims: bool = False

    @property
    def name(self) -> str:  # type: ignore[override]
        return {"mean": "TflMean", "sum": "TflSum", "max": "TflReduceMax"}.get(self.kind, "TflReduce")

    def _axes(self, rank: int) -> tuple:
        resolved = []
        for axis in self.axes:
            if not -rank <= axis < max(rank, 1):
                raise AnalysisError(f"reduction axis {axis} is out of range for rank {rank}")
            resolved.append(axis % rank if rank else 0)
        return tuple(sorted(set(resolved)))

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        if self.kind not in KINDS:
            raise AnalysisError(f"reduction kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        x = inputs[0]
        axes = self._axes(x.rank)
        if self.keep_dims:
            shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        else:
            shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        if x.dtype in QUANTIZED:
            if self.iq(0) is None or self.oq(0) is None:
                raise AnalysisError(f"quantized {self.name} needs quantized input and output")
            if self.kind == "max" and (scale_of(self.iq(0)) != scale_of(self.oq(0))
                                       or zero_of(self.iq(0)) != zero_of(self.oq(0))):
                raise AnalysisError("quantized REDUCE_MAX needs the same quantization in and out")
            if x.dtype == DatumType.I16 and self.kind != "max" and (zero_of(self.iq(0)) or zero_of(self.oq(0))):
                raise AnalysisError(f"int16 {self.name} needs zero points 0")
        elif not (x.dtype.is_float or x.dtype in (DatumType.I32, DatumType.I64)):
            raise AnalysisError(f"{self.name} does not support {x.dtype}")
        return [self.fact(0, x.dtype, shape)]

    def eval(self, inputs):
        x = inputs[0]
        axes = self._axes(x.ndim)
        if self.kind == "max":
            if x.size == 0:
                raise AnalysisError("REDUCE_MAX of an empty tensor")
            return [np.max(x, axis=axes, keepdims=self.keep_dims) if axes else x.copy()]
        if x.dtype.kind == "f":
            total = np.sum(x, axis=axes, keepdims=self.keep_dims, dtype=x.dtype)
            if self.kind == "sum":
                return [np.asarray(total, dtype=x.dtype)]
            count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
            return [np.asarray(total / x.dtype.type(count), dtype=x.dtype)]
        count = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
        total = np.sum(x, axis=axes, keepdims=self.keep_dims, dtype=np.int64)
        dtype = DatumType.from_numpy(x.dtype)
        if dtype not in QUANTIZED:
            if self.kind == "mean" and count:
                quotient = np.abs(total) // count
                total = np.where(total < 0, -quotient, quotient)
            return [np.asarray(wrap32(total) if dtype == DatumType.I32 else total, dtype=x.dtype)]
        multiplier, shift = quantize_multiplier(np.float64(scale_of(self.iq(0))) / np.float64(scale_of(self.oq(0))))
        if self.kind == "mean" and count:
            multiplier, shift = mean_multiplier(multiplier, shift, count)
        shifted = wrap32(total - zero_of(self.iq(0)) * count)
        out = Requantizer.from_pairs(multiplier, shift)(shifted) + zero_of(self.oq(0))
        low, high = integer_limits(dtype)
        return [np.asarray(np.clip(out, low, high), dtype=x.dtype)]
