"""UNIDIRECTIONAL_SEQUENCE_LSTM with layer normalisation (inputs 20 to 23), float and 8x8_16.

Each gate's pre-activation (input and recurrent products, peephole) is normalised over the
cells of each batch row, scaled by the gate's layer-norm coefficients, and only then given
the gate bias. In the float kernel the normalisation is a plain mean / standard deviation
(variance plus 1e-8). The integer kernel follows TFLite's reference: the gate's products are
requantized to the scale of the op's intermediate tensor of that gate (instead of Q3.12),
then ``ApplyLayerNorm`` computes the mean and variance in integers (the mean times 1024), the
inverse standard deviation as a fixed-point multiplier by Newton-Raphson
(``GetInvSqrtQuantizedMultiplierExp``), multiplies by the int16 coefficients, adds the int32
bias (scale: the coefficients' scale / 1024) and requantizes to Q3.12 with the coefficients'
scale. A row of equal values has variance 0 and uses the guard max(1, 10000 * that scale).

TFLite Micro's LSTM kernel refuses layer normalisation, so the micro flavour does too.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...errors import AnalysisError, UnsupportedOpError
from ..quantized.common import scale_of
from ..quantized.fixedpoint import INT32_MAX, Requantizer, rounding_divide_by_pot, saturating_left_shift, srdhm, wrap32
from ..quantized.functions import count_leading_zeros32
from ..quantized.output import clip_inplace
from .lstm import GATES, LAYER_NORM, SequenceLstm, _f32

#: sqrt(2) / 2 in Q0.31
HALF_SQRT_2 = 1518500250


def micro_refusal(where: str) -> UnsupportedOpError:
    """The error for a layer-normalised LSTM asked to run with TFLite Micro's semantics."""
    return UnsupportedOpError(
        f"{where}: TFLite Micro's UNIDIRECTIONAL_SEQUENCE_LSTM refuses layer-normalised LSTMs (inputs 20-23), "
        "so the micro flavour has no semantics to follow; load with flavour='reference'",
        [("tflite", "UNIDIRECTIONAL_SEQUENCE_LSTM", 1, [where])])


@dataclass(frozen=True, eq=False)
class UnidirectionalSequenceLayerNormLstm(SequenceLstm):
    """A layer-normalised UNIDIRECTIONAL_SEQUENCE_LSTM (see the module's docstring).

    ``gate_q``: the quantization of the four gate intermediates (input, forget, cell, output),
    whose scales the integer kernel requantizes the gates' products to.
    """

    gate_q: tuple = (None, None, None, None)
    layer_norm = True

    def _check_layer_norm(self) -> None:
        if self.flavour == "micro":
            raise micro_refusal("a layer-normalised LSTM")
        gates = [offset for offset in range(4) if 1 + offset in self.slots]
        for offset in range(4):
            given = LAYER_NORM[offset] in self.slots
            if given != (offset in gates):
                problem = "extra" if given else "missing"
                raise AnalysisError(f"a layer-normalised LSTM needs the {GATES[offset]} gate's layer-norm "
                                    f"coefficients exactly when it has that gate ({problem})")

    def output_facts(self, inputs):
        facts = super().output_facts(inputs)
        if not inputs[0].dtype.is_float:
            for offset in range(4):
                if 1 + offset in self.slots:
                    quant = self.gate_q[offset] if offset < len(self.gate_q) else None
                    if quant is None or scale_of(quant) <= 0:
                        raise AnalysisError(f"an integer layer-normalised LSTM needs the scale of its "
                                            f"{GATES[offset]} gate intermediate")
                    if scale_of(self.q(LAYER_NORM[offset])) <= 0:
                        raise AnalysisError(f"the {GATES[offset]} layer-norm coefficients need a scale")
        return facts

    def gate_scale(self, offset: int) -> np.float32:
        return _f32(scale_of(self.gate_q[offset]))

    def finish_gate_float(self, inputs, offset: int, values: np.ndarray) -> np.ndarray:
        coefficients = self.weights(inputs, LAYER_NORM[offset])
        bias = self.weights(inputs, 12 + offset)
        normalised = normalise_float(values) * coefficients
        return (normalised + bias if bias is not None else normalised).astype(np.float32)

    @cached_property
    def _scales(self) -> dict:
        """Per gate: the requantizer to Q3.12 and the variance guard, as TFLite's Prepare derives them."""
        scales = {}
        for offset, gate in enumerate(GATES):
            quant = self.q(LAYER_NORM[offset])
            if quant is None:
                continue
            scale = _f32(scale_of(quant))
            multiplier = Requantizer([float(scale)])
            requant = Requantizer.from_pairs(multiplier.multipliers, multiplier.shifts + 12)
            guard = max(1, int(_f32(10000) * scale))
            scales[gate] = (requant, guard)
        return scales

    def integer_layer_norm(self, inputs) -> dict:
        prepared = {}
        for offset, gate in enumerate(GATES):
            coefficients = self.weights(inputs, LAYER_NORM[offset])
            if coefficients is None:
                continue
            bias = self.weights(inputs, 12 + offset)
            bias = bias.astype(np.int64) if bias is not None else np.zeros(coefficients.shape, np.int64)
            prepared[gate] = (coefficients.astype(np.int64), bias, *self._scales[gate])
        return prepared

    def normalise_gate(self, prepared: dict, gate: str, values: np.ndarray) -> np.ndarray:
        return layer_norm_integer(values, *prepared["layer_norm"][gate])


def normalise_float(values: np.ndarray) -> np.ndarray:
    """(x - mean) / sqrt(variance + 1e-8) over the last axis, as TFLite's MeanStddevNormalization."""
    values = values.astype(np.float32)
    mean = values.mean(axis=-1, keepdims=True, dtype=np.float32)
    variance = np.square(values - mean).mean(axis=-1, keepdims=True, dtype=np.float32)
    return (values - mean) * (np.float32(1.0) / np.sqrt(variance + np.float32(1e-8)))


def _truncating_divide(numerator: np.ndarray, denominator: int) -> np.ndarray:
    """C integer division (toward zero) by a positive integer."""
    quotient = np.abs(numerator) // denominator
    return np.where(numerator < 0, -quotient, quotient)


def inverse_sqrt_multipliers(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp(v, reverse_shift=-1) for each (non-negative) v:
    ``(multiplier, shift)`` with 1 / sqrt(v) ~ multiplier * 2^(shift - 31); shift is never positive."""
    v = np.asarray(values, dtype=np.int64)
    small = v <= 1
    v = np.where(small, 2, v)
    shift = np.full(v.shape, 11, dtype=np.int64)
    while True:
        large = v >= (1 << 29)
        if not large.any():
            break
        v = np.where(large, v // 4, v)
        shift += large
    pairs = (count_leading_zeros32(v) - 1) // 2 - 1
    shift -= pairs
    v = v << (2 * pairs)
    # Newton-Raphson on x = 1 / sqrt(v), in Q3.28, from x = 1
    half_input = rounding_divide_by_pot(v >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    x = np.full(v.shape, 1 << 28, dtype=np.int64)
    for _ in range(5):
        cube = saturating_left_shift(srdhm(srdhm(x, x), x), 6)
        x = saturating_left_shift(wrap32(srdhm(half_three, x) - srdhm(half_input, cube)), 3)
    x = srdhm(x, HALF_SQRT_2)
    negative = shift < 0
    x = np.where(negative, wrap32(x << np.maximum(-shift, 0)), x)
    shift = np.where(negative, 0, shift)
    return np.where(small, INT32_MAX, x), np.where(small, 0, -shift)


def layer_norm_integer(values: np.ndarray, coefficients: np.ndarray, bias: np.ndarray, requant: Requantizer,
                       guard: int) -> np.ndarray:
    """TFLite's ApplyLayerNorm on int16 rows (the last axis): Q3.12 int16 results, as int64."""
    values = np.asarray(values, dtype=np.int64)
    cells = values.shape[-1]
    mean = _truncating_divide(values.sum(axis=-1) * 1024, cells)
    variance = (values * values).sum(axis=-1) * ((1 << 20) // cells) - mean * mean
    variance = _truncating_divide(variance, 1 << 20)
    variance = np.where(variance < 1, guard, variance)
    multiplier, shift = inverse_sqrt_multipliers(variance)
    shifted = values * 1024 - mean[..., None]
    rescaled = rounding_divide_by_pot(srdhm(shifted, multiplier[..., None]), -shift[..., None])
    weighted = wrap32(wrap32(rescaled * coefficients) + bias)
    rounded = _truncating_divide(weighted + np.where(weighted > 0, 512, -512), 1024)
    return clip_inplace(requant(rounded), -32768, 32767)
