"""The integer recipes of SOFTMAX and LOG_SOFTMAX over the last axis (TFLite's fixed-point kernels).

The quantized softmax follows TFLite's reference kernel: input differences to the row
maximum are scaled to Q5.26 by ``beta * input_scale``, exponentiated with gemmlowp's
``exp_on_negative_values``, summed in Q12.19, and divided through the fixed-point
reciprocal of the sum. Its output scale is 1/256 (8-bit) or 1/65536 (int16).

The int16 softmax (input and output zero points 0, output scale 1/32768) scales differences to
the row maximum so that [-65535, 0] stands for [-10, 0], looks exp up in a 513-entry
interpolated table, and multiplies by 1/sum from another (TFLite's ``LUTPopulate`` tables,
made here with the same float32 steps).

The int8 log-softmax sums ``exp`` of the Q5.26 differences in Q12.19, takes gemmlowp's
fixed-point log of the sum, and writes ``difference - log(sum)`` with the output scale
16/256 and zero point 127 (entries too far below the row maximum give -128).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError, RunError
from ...fact import QParams, TypedFact
from .common import scale_of, zero_of
from .fixedpoint import FP32, INT32_MIN, Requantizer, quantize_multiplier, rounding_divide_by_pot, srdhm, wrap32
from .functions import get_reciprocals, input_radius, log_x_for_x_at_least_1, reciprocal_int, softmax_scaling

SCALED_DIFF_BITS = 5
ACCUMULATION_BITS = 12


@dataclass
class SoftmaxRecipe:
    """``exp_table[d + 255]``: exp of every 8-bit difference ``d`` to the row maximum in Q0.31
    (0 below ``diff_min``); ``sum_table``: the same in Q12.19 for the sum."""

    exp_table: np.ndarray
    sum_table: np.ndarray
    out_dtype: DatumType

    def __call__(self, x: np.ndarray) -> np.ndarray:
        out_dtype = self.out_dtype.np
        info = np.iinfo(out_dtype)
        if x.size <= 64:
            return self._few(x, out_dtype, int(info.min), int(info.max))
        values = x.astype(np.int64)
        index = values - values.max(axis=-1, keepdims=True)
        index += 255
        total = wrap32(self.sum_table[index].sum(axis=-1, keepdims=True))
        reciprocal, bits_over_unit = get_reciprocals(total, ACCUMULATION_BITS)
        exponent = bits_over_unit + 31 - 8 * out_dtype.itemsize
        if np.any((exponent < 0) | (exponent > 31)):
            raise RunError("softmax sum out of range")
        unsaturated = rounding_divide_by_pot(srdhm(reciprocal, self.exp_table[index]), exponent)
        unsaturated += int(info.min)
        return np.clip(unsaturated, info.min, info.max).astype(out_dtype)

    def _few(self, x: np.ndarray, out_dtype, low: int, high: int) -> np.ndarray:
        """The same integer arithmetic on Python ints, row by row (a few values: classifier heads)."""
        exp_table, sum_table = self.exp_table.tolist(), self.sum_table.tolist()
        bits = 8 * np.dtype(out_dtype).itemsize
        out = []
        for row in x.reshape(-1, x.shape[-1]).tolist():
            top = max(row)
            indices = [value - top + 255 for value in row]
            total = (sum(sum_table[i] for i in indices) + (1 << 31)) % (1 << 32) - (1 << 31)
            reciprocal, bits_over_unit = reciprocal_int(total, ACCUMULATION_BITS)
            exponent = bits_over_unit + 31 - bits
            if not 0 <= exponent <= 31:
                raise RunError("softmax sum out of range")
            for i in indices:
                scaled = min((reciprocal * exp_table[i] + (1 << 30)) >> 31, (1 << 31) - 1)
                if exponent:
                    scaled = (scaled + (1 << (exponent - 1)) - (1 if scaled < 0 else 0)) >> exponent
                out.append(max(low, min(high, scaled + low)))
        return np.array(out, dtype=out_dtype).reshape(x.shape)


def lut_int16(transform, input_scale, input_zero: int, output_scale, output_zero: int) -> np.ndarray:
    """TFLite's LUTPopulate for int16 in float32: 512 samples over the input range, each lowered
    by half the error linear interpolation makes at its interval's middle, and the last value."""
    f = np.float32
    input_min = f(f(input_scale) * f(-32768 - input_zero))
    input_max = f(f(input_scale) * f(32767 - input_zero))
    output_min = f(f(output_scale) * f(-32768 - output_zero))
    output_max = f(f(output_scale) * f(32767 - output_zero))
    step = f((input_max - input_min) / f(512))
    inverse = f(f(65536) / f(output_max - output_min))
    steps = np.arange(512, dtype=np.float32)
    here = transform(input_min + steps * step)
    middle = transform(input_min + steps * step + f(step / f(2)))
    after = transform(input_min + (steps + f(1)) * step)
    sample = round_half_away_f32(here * inverse)
    interpolated = round_half_away_f32((after * inverse + sample) / f(2))
    bias = round_half_away_f32((interpolated - round_half_away_f32(middle * inverse)) / f(2))
    last = round_half_away_f32(transform(np.array([input_max], np.float32)) * inverse)
    return np.clip(np.concatenate([sample - bias, last]), -32768, 32767).astype(np.int64)


def round_half_away_f32(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float32)
    return np.where(values >= 0, np.floor(values + np.float32(0.5)), np.ceil(values - np.float32(0.5)))


def lut_lookup_int16(values: np.ndarray, table: np.ndarray) -> np.ndarray:
    """TFLite's LUTLookup on int16 values: linear interpolation between the 513 entries."""
    index = 256 + (values >> 7)
    base = table[index]
    slope = ((table[index + 1] - base + 32768) & 0xFFFF) - 32768
    return (((base + ((slope * (values & 0x7F) + 64) >> 7)) + 32768) & 0xFFFF) - 32768


@dataclass
class Int16SoftmaxRecipe:
    multiplier: int
    shift: int
    exp_table: np.ndarray
    reciprocal_table: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        values = x.astype(np.int64)
        difference = values - values.max(axis=-1, keepdims=True)
        scaled = Requantizer.from_pairs(self.multiplier, self.shift)(difference)
        exps = lut_lookup_int16(np.clip(scaled + 32767, -32768, 32767), self.exp_table)
        total = exps.sum(axis=-1, keepdims=True)
        headroom = 32 - np.frexp(total.astype(np.float64))[1]  # leading zeros of the positive sum
        shifted = ((total << (headroom - 1)) + (1 << 13)) >> 14
        reciprocal = lut_lookup_int16(np.clip(shifted - (1 << 15) - (1 << 16), -32768, 32767), self.reciprocal_table)
        right = 31 - headroom
        out = (exps * reciprocal + (np.int64(1) << (right - 1))) >> right
        return np.clip(out, 0, 32767).astype(np.int16)


def int16_softmax_recipe(x: TypedFact, quant: QParams, beta: float) -> Int16SoftmaxRecipe:
    if zero_of(x.qparams) or zero_of(quant) or abs(scale_of(quant) - 1 / 32768) > 0.001 / 32768:
        raise AnalysisError(f"int16 SOFTMAX needs zero points 0 and the output scale 1/32768, got {x.qparams} "
                            f"and {quant}")
    multiplier, shift = quantize_multiplier(float(np.float64(scale_of(x.qparams))) * float(beta) / (10.0 / 65535.0))
    f = np.float32
    exp = lut_int16(lambda v: np.exp(v.astype(np.float64)).astype(np.float32), f(10.0) / f(65535), 32767,
                    f(2.0) / f(65535), 0)
    reciprocal = lut_int16(lambda v: (f(1) / (f(1) + v)).astype(np.float32), f(1.0) / f(65535), -32768,
                           f(2.0) / f(65535), 0)
    return Int16SoftmaxRecipe(multiplier, shift, exp, reciprocal)


def softmax_recipe(x: TypedFact, quant: QParams, beta: float, out_dtype: DatumType):
    if x.dtype == DatumType.I16 and x.qparams is not None and out_dtype == DatumType.I16:
        return int16_softmax_recipe(x, quant, beta)
    if x.dtype not in (DatumType.I8, DatumType.U8) or x.qparams is None:
        raise AnalysisError(f"quantized SOFTMAX supports int8/uint8 inputs (and int16 to int16), got {x}")
    if out_dtype not in (DatumType.I8, DatumType.U8, DatumType.I16):
        raise AnalysisError(f"quantized SOFTMAX outputs int8, uint8 or int16, got {out_dtype}")
    multiplier, shift = softmax_scaling(np.float32(beta), scale_of(x.qparams), SCALED_DIFF_BITS)
    diff_min = -input_radius(SCALED_DIFF_BITS, shift)
    differences = np.arange(-255, 1, dtype=np.int64)
    rescaled = srdhm(wrap32(differences << shift), multiplier)
    exps = np.where(differences >= diff_min, FP32.exp_on_negative_values(rescaled, SCALED_DIFF_BITS), 0)
    return SoftmaxRecipe(exps, rounding_divide_by_pot(exps, ACCUMULATION_BITS), out_dtype)


@dataclass
class LogSoftmaxRecipe:
    to_q5: Requantizer
    reverse: Requantizer
    diff_min: int

    def __call__(self, x: np.ndarray) -> np.ndarray:
        diff = x.astype(np.int64) - x.max(axis=-1, keepdims=True).astype(np.int64)
        in_q5 = self.to_q5(diff)
        exps = rounding_divide_by_pot(FP32.exp_on_negative_values(in_q5, SCALED_DIFF_BITS), ACCUMULATION_BITS)
        total = wrap32(np.where(diff >= self.diff_min, exps, 0).sum(axis=-1, keepdims=True))
        log_sum = log_x_for_x_at_least_1(total, ACCUMULATION_BITS, SCALED_DIFF_BITS)
        adjusted_min = np.maximum(self.diff_min - 1, self.reverse(wrap32(log_sum + INT32_MIN)))
        out = rounding_divide_by_pot(wrap32(in_q5 - log_sum), 31 - SCALED_DIFF_BITS - 4) + 127
        out = np.where(diff > adjusted_min, np.clip(out, -128, 127), -128)
        return out.astype(np.int8)


def log_softmax_recipe(x: TypedFact, quant: QParams) -> LogSoftmaxRecipe:
    if x.dtype != DatumType.I8 or x.qparams is None:
        raise AnalysisError(f"quantized LOG_SOFTMAX supports int8 input and output, got {x}")
    if scale_of(quant) != 16.0 / 256 or zero_of(quant) != 127:
        raise AnalysisError(f"int8 LOG_SOFTMAX needs the output quantization scale 1/16, zero point 127, got {quant}")
    multiplier, left_shift = softmax_scaling(1.0, scale_of(x.qparams), SCALED_DIFF_BITS)
    reverse = Requantizer([(1 << (31 - left_shift)) / float(multiplier)])
    return LogSoftmaxRecipe(Requantizer.from_pairs(multiplier, left_shift), reverse,
                            -input_radius(SCALED_DIFF_BITS, left_shift))
