"""Activations: RELU, RELU6, RELU_N1_TO_1, RELU_0_TO_1, LOGISTIC, TANH, LEAKY_RELU, HARD_SWISH, PRELU.

Quantized kernels follow TFLite's reference kernels: the ReLU family requantizes
``x - zero_point`` with a fixed-point multiplier and clamps; LOGISTIC and TANH on 8-bit
types look up a 256-entry table that TFLite fills in float32 (``LUTPopulate``; the
function values here are float64 rounded to float32, i.e. correctly rounded);
LEAKY_RELU and PRELU pick one of two multipliers by the input's sign; HARD_SWISH uses
TFLite's int16 fixed-point pipeline (the "reluish" multiplier in [0, 1]).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ..base import expect_inputs
from ..binary import broadcast_shapes
from ..quantized.common import integer_limits, scale_of, zero_of
from ..quantized.fixedpoint import Requantizer, quantize_multiplier, rounding_divide_by_pot, srdhm
from .common import TflOp

KINDS = ("relu", "relu6", "relu_n1_to_1", "relu_0_to_1", "logistic", "tanh", "leaky_relu", "hard_swish")
#: the clamp (low, high) of each ReLU kind, in real values
RELU_BOUNDS = {"relu": (0.0, np.inf), "relu6": (0.0, 6.0), "relu_n1_to_1": (-1.0, 1.0), "relu_0_to_1": (0.0, 1.0)}
QUANTIZED = (DatumType.I8, DatumType.U8, DatumType.I16)


def _f32(value) -> np.float32:
    return np.float32(value)


def round_half_away_f32(values: np.ndarray) -> np.ndarray:
    """C ``roundf`` on float32 values (halves away from zero)."""
    return np.where(values >= 0, np.floor(values + np.float32(0.5)), np.ceil(values - np.float32(0.5)))


def lookup_table(function: str, in_q, out_q, dtype: DatumType) -> np.ndarray:
    """TFLite's LUTPopulate for int8/uint8: the output of every input value (index = value - min)."""
    low, high = integer_limits(dtype)
    values = np.arange(low, high + 1, dtype=np.int64)
    dequantized = (_f32(scale_of(in_q)) * (values - zero_of(in_q)).astype(np.float32)).astype(np.float32)
    if function == "tanh":
        transformed = np.tanh(dequantized.astype(np.float64)).astype(np.float32)
    else:
        exponential = np.exp(-dequantized.astype(np.float64)).astype(np.float32)
        transformed = (np.float32(1) / (np.float32(1) + exponential)).astype(np.float32)
    inverse_scale = np.float32(1) / _f32(scale_of(out_q))
    rescaled = round_half_away_f32((transformed * inverse_scale).astype(np.float32))
    quantized = (rescaled + np.float32(zero_of(out_q))).astype(np.float32)
    return np.clip(np.trunc(quantized), low, high).astype(dtype.np)


def _int16_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier then DownScaleInt32ToInt16Multiplier."""
    multiplier, exponent = quantize_multiplier(real)
    if multiplier >= (1 << 31) - 1 - (1 << 15):
        return 32767, exponent
    return (multiplier + (1 << 15)) >> 16, exponent


@dataclass(frozen=True)
class Activation(TflOp):
    """A one-input activation of ``kind`` (``alpha``: LEAKY_RELU's negative slope)."""

    kind: str = "relu"
    alpha: float = 0.0

    @property
    def name(self) -> str:  # type: ignore[override]
        return "Tfl" + "".join(part.capitalize() for part in self.kind.split("_"))

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        if self.kind not in KINDS:
            raise AnalysisError(f"activation kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        x = inputs[0]
        if x.dtype.is_float:
            return [self.fact(0, x.dtype, x.shape)]
        if x.dtype not in QUANTIZED or self.iq(0) is None or self.oq(0) is None:
            raise AnalysisError(f"{self.name} needs float or quantized input and output, got {x}")
        if x.dtype == DatumType.I16 and self.kind in ("logistic", "tanh", "hard_swish", "relu_n1_to_1",
                                                      "relu_0_to_1"):
            raise AnalysisError(f"{self.name} on int16 is not supported")
        if self.kind == "logistic" and scale_of(self.oq(0)) != 1.0 / 256:
            raise AnalysisError(f"quantized LOGISTIC needs the output scale 1/256, got {scale_of(self.oq(0))}")
        if x.dtype == DatumType.I16 and (zero_of(self.iq(0)) or zero_of(self.oq(0))):
            raise AnalysisError(f"int16 {self.name} needs zero points 0")
        self._params(x.dtype)
        return [self.fact(0, x.dtype, x.shape)]

    def _params(self, dtype: DatumType) -> dict:
        """Fixed-point parameters for quantized ``dtype`` tensors (derived once)."""
        return self.derived(dtype, lambda: self._derive(dtype))

    def _derive(self, dtype: DatumType) -> dict:
        si, so = _f32(scale_of(self.iq(0))), _f32(scale_of(self.oq(0)))
        if self.kind in ("logistic", "tanh"):
            table = lookup_table(self.kind, self.iq(0), self.oq(0), dtype)
            return {"table": table, "offset": -integer_limits(dtype)[0]}
        if self.kind in RELU_BOUNDS:
            low, high = integer_limits(dtype)
            act_low, act_high = RELU_BOUNDS[self.kind]
            zo = zero_of(self.oq(0))
            low = max(low, zo + int(round_half_away_f32(np.float32(act_low) / so)))
            if np.isfinite(act_high):
                high = min(high, zo + int(round_half_away_f32(np.float32(act_high) / so)))
            return {"requant": Requantizer([np.float64(_f32(si / so))]), "range": (low, high)}
        if self.kind == "leaky_relu":
            # TFLite scales by |alpha| and negates: halves round differently than a negative multiplier
            real = np.float64(_f32(_f32(si * _f32(self.alpha)) / so))
            return {"identity": Requantizer([np.float64(_f32(si / so))]), "alpha": Requantizer([abs(real)]),
                    "alpha_sign": -1 if real < 0 else 1}
        hires = _f32(_f32(1.0 / 128.0) * si)
        output, output_exponent = _int16_multiplier(np.float64(_f32(hires / so)))
        if output_exponent > 0:
            raise AnalysisError("HARD_SWISH: the output scale is too small for the input scale")
        reluish, reluish_exponent = _int16_multiplier(np.float64(_f32(hires / _f32(3.0 / 32768.0))))
        return {"output": (output, output_exponent), "reluish": (reluish, reluish_exponent)}

    def eval(self, inputs):
        x = inputs[0]
        if x.dtype.kind == "f":
            return [self._float(x)]
        dtype = DatumType.from_numpy(x.dtype)
        p = self._params(dtype)
        zi, zo = zero_of(self.iq(0)), zero_of(self.oq(0))
        low, high = integer_limits(dtype)
        if "table" in p:
            return [p["table"][x.astype(np.int64) + p["offset"]]]
        values = x.astype(np.int64) - zi
        if self.kind in RELU_BOUNDS:
            out = p["requant"](values) + zo
            return [np.clip(out, *p["range"]).astype(x.dtype)]
        if self.kind == "leaky_relu":
            out = np.where(values >= 0, p["identity"](values), p["alpha_sign"] * p["alpha"](values)) + zo
            return [np.clip(out, low, high).astype(x.dtype)]
        return [np.clip(self._hard_swish(values, p) + zo, low, high).astype(x.dtype)]

    def _hard_swish(self, values: np.ndarray, p: dict) -> np.ndarray:
        output, output_exponent = p["output"]
        reluish_multiplier, exponent = p["reluish"]
        hires = values * 128
        preshift = srdhm(hires, output, 16)
        reluish = hires
        if exponent > 0:
            reluish = np.clip(reluish << (exponent - 1), -32768, 32767)
        reluish = srdhm(reluish, reluish_multiplier, 16)
        if exponent > 0:
            reluish = np.clip(reluish << 1, -32768, 32767)
        elif exponent < 0:
            reluish = rounding_divide_by_pot(reluish, -exponent)
        reluish = (reluish + (1 << 15)) >> 1
        product = reluish * preshift
        truncated = np.where(product >= 0, product >> 15, -((-product) >> 15))
        preshift_output = np.where((reluish == -32768) & (preshift == -32768), 32767, truncated)
        return rounding_divide_by_pot(preshift_output, -output_exponent)

    def _float(self, x: np.ndarray) -> np.ndarray:
        kind = self.kind
        if kind in RELU_BOUNDS:
            low, high = RELU_BOUNDS[kind]
            return np.clip(x, low, high).astype(x.dtype) if np.isfinite(high) else np.maximum(x, x.dtype.type(0))
        if kind == "tanh":
            return np.tanh(x)
        if kind == "logistic":
            with np.errstate(over="ignore"):
                return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(x.dtype)
        if kind == "leaky_relu":
            return np.where(x > 0, x, x * x.dtype.type(self.alpha)).astype(x.dtype)
        three, six = x.dtype.type(3), x.dtype.type(6)
        return (x * np.minimum(six, np.maximum(x.dtype.type(0), x + three)) / six).astype(x.dtype)

    def cost(self, inputs):
        return {"flops": inputs[0].volume if isinstance(inputs[0].volume, int) else 0}


@dataclass(frozen=True)
class Prelu(TflOp):
    """``x >= 0 ? x : x * alpha`` with ``alpha`` (input 1) broadcast against x."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        x, alpha = inputs
        shape = broadcast_shapes(x.shape, alpha.shape)
        if len(shape) != x.rank or any(a != b for a, b in zip(shape, x.shape)):
            raise AnalysisError(f"PRELU alpha {alpha} must broadcast to the input {x}")
        if x.dtype.is_float:
            if alpha.dtype != x.dtype:
                raise AnalysisError(f"PRELU alpha must be {x.dtype}, got {alpha}")
            return [self.fact(0, x.dtype, x.shape)]
        if x.dtype not in QUANTIZED or None in (self.iq(0), self.iq(1), self.oq(0)):
            raise AnalysisError(f"PRELU needs float or quantized input, alpha and output, got {x}, {alpha}")
        return [self.fact(0, x.dtype, x.shape)]

    @cached_property
    def _quant(self):
        si, sa, so = _f32(scale_of(self.iq(0))), _f32(scale_of(self.iq(1))), _f32(scale_of(self.oq(0)))
        return Requantizer([np.float64(_f32(si / so))]), Requantizer([np.float64(_f32(_f32(si * sa) / so))])

    def eval(self, inputs):
        x, alpha = inputs
        if x.dtype.kind == "f":
            return [np.where(x >= 0, x, x * alpha).astype(x.dtype)]
        positive, negative = self._quant
        values = x.astype(np.int64) - zero_of(self.iq(0))
        slopes = alpha.astype(np.int64) - zero_of(self.iq(1))
        out = np.where(values >= 0, positive(values), negative(values * slopes)) + zero_of(self.oq(0))
        low, high = integer_limits(DatumType.from_numpy(x.dtype))
        return [np.clip(out, low, high).astype(x.dtype)]
