"""TFLite Micro's int8 ADD_N and CUMSUM (``reference_ops::AddN`` and ``CumSum`` with
ArithmeticParams): every input shares one scale and zero point; each offset input is shifted
left 20 bits and halved by a fixed-point multiplier (the inputs' scale over twice itself), the
sum starts from the offset zero (-z, a quirk of both kernels: the sum holds one extra ``-z``
term), and is requantized to the output by a second multiplier (twice the input scale over
2**20 times the output's). Sums wrap as int32.
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import QParams, TypedFact
from .common import integer_limits, scale_of, zero_of
from .fixedpoint import multiply_by_quantized_multiplier, quantize_multiplier, wrap32

LEFT_SHIFT = 20


def smaller_than_one(real: float, what: str) -> tuple[int, int]:
    """TFLite's QuantizeMultiplierSmallerThanOneExp: a multiplier of a real in (0, 1)."""
    if not 0.0 < real < 1.0:
        raise AnalysisError(f"the {what} multiplier of an int8 ADD_N must lie in (0, 1), got {real}")
    return quantize_multiplier(real)


class AddNRecipe:
    """The integers of one quantized ADD_N or CUMSUM: ``offset`` the inputs' -zero point, the
    input and output (multiplier, shift) pairs, the output's zero point and clamp."""

    def __init__(self, inputs: list[TypedFact], quant: QParams):
        first = inputs[0]
        if any(f.dtype != DatumType.I8 or f.qparams is None for f in inputs):
            raise AnalysisError(f"a quantized ADD_N takes int8 quantized inputs, got {', '.join(map(str, inputs))}")
        if any(f.qparams.axis is not None or len(f.qparams.scale) != 1 for f in inputs):
            raise AnalysisError("a quantized ADD_N takes per-tensor quantized inputs")
        if any(scale_of(f.qparams) != scale_of(first.qparams) or zero_of(f.qparams) != zero_of(first.qparams)
               for f in inputs[1:]):
            raise AnalysisError(f"every input of a quantized ADD_N must share one scale and zero point (TFLite Micro "
                                f"checks it), got {', '.join(str(f.qparams) for f in inputs)}")
        scale, out_scale = float(np.float32(scale_of(first.qparams))), float(np.float32(scale_of(quant)))
        twice = 2.0 * scale
        self.offset = -zero_of(first.qparams)
        self.input_multiplier, self.input_shift = smaller_than_one(scale / twice, "input")
        self.output_multiplier, self.output_shift = smaller_than_one(twice / ((1 << LEFT_SHIFT) * out_scale),
                                                                     "output")
        self.zero = zero_of(quant)
        self.low, self.high = integer_limits(DatumType.I8)

    def scaled(self, values: np.ndarray) -> np.ndarray:
        shifted = wrap32((values.astype(np.int64) + self.offset) << LEFT_SHIFT)
        return multiply_by_quantized_multiplier(shifted, self.input_multiplier, self.input_shift).astype(np.int64)

    def start(self, shape) -> np.ndarray:
        """The kernels' first sum: the offset alone, scaled."""
        return self.scaled(np.zeros(shape, np.int64))

    def finish(self, total: np.ndarray) -> np.ndarray:
        raw = multiply_by_quantized_multiplier(total, self.output_multiplier, self.output_shift).astype(np.int64)
        return np.clip(raw + self.zero, self.low, self.high).astype(np.int8)

    def __call__(self, inputs: list[np.ndarray]) -> np.ndarray:
        total = self.start(inputs[0].shape)
        for values in inputs:
            total = wrap32(total + self.scaled(values))
        return self.finish(total)

    def running(self, x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
        """CUMSUM along ``axis``."""
        work = np.flip(x, axis) if reverse else x
        scaled = self.scaled(np.moveaxis(work, axis, -1))
        sums = wrap32(self.start(scaled.shape[:-1])[..., None] + np.cumsum(scaled, axis=-1))
        if exclusive:
            sums = np.concatenate([self.start(scaled.shape[:-1])[..., None], sums[..., :-1]], axis=-1)
        out = np.moveaxis(self.finish(sums), -1, axis)
        return np.ascontiguousarray(np.flip(out, axis) if reverse else out)
