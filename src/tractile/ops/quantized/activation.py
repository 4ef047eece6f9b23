"""Integer recipes of the activations and element-wise functions on quantized tensors, as
TFLite's reference kernels compute them.

The ReLU family (Relu, Clip on real bounds) requantizes ``x - zero_point`` with a fixed-point
multiplier and clamps; LOGISTIC and TANH on 8-bit types look up a 256-entry table that TFLite
fills in float32 (``LUTPopulate``: the function values here are float64 rounded to float32,
i.e. correctly rounded), on int16 they interpolate TFLite's sigmoid table; ELU and GELU
(8-bit) are tables too; LEAKY_RELU and PRELU pick one of two multipliers by the input's sign;
HARD_SWISH uses TFLite's int16 fixed-point pipeline (the "reluish" multiplier in [0, 1]);
ABS requantizes ``|x - zero_point|``; RSQRT takes TFLite's fixed-point inverse square root.
Each recipe is a callable on the raw integer values.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError, RunError
from ...fact import QParams, TypedFact
from .binary import checked_log2
from .common import QUANTIZED, integer_limits, scale_of, zero_of
from .fixedpoint import Requantizer, quantize_multiplier, rounding_divide_by_pot, srdhm
from .functions import inverse_sqrt_multipliers


def _f32(value) -> np.float32:
    return np.float32(value)


def round_half_away_f32(values: np.ndarray) -> np.ndarray:
    """C ``roundf`` on float32 values (halves away from zero)."""
    return np.where(values >= 0, np.floor(values + np.float32(0.5)), np.ceil(values - np.float32(0.5)))


def check_quantized(name: str, x: TypedFact, quant: QParams, dtypes=QUANTIZED) -> DatumType:
    """The input's datum type, after checking ``x`` and the output are quantized per tensor."""
    if x.dtype not in dtypes or x.qparams is None:
        raise AnalysisError(f"quantized {name} needs a {' or '.join(map(str, dtypes))} quantized input, got {x}")
    if len(x.qparams.scale) != 1 or len(quant.scale) != 1:
        raise AnalysisError(f"quantized {name} needs per-tensor quantization, got {x.qparams} and {quant}")
    return x.dtype


def lut_populate(transform: Callable[[np.ndarray], np.ndarray], in_q: QParams, out_q: QParams,
                 dtype: DatumType) -> np.ndarray:
    """TFLite's LUTPopulate for 8-bit types: the output of every input value (index = value - min).

    ``transform`` maps float32 reals to float32 reals as TFLite's float function does."""
    low, high = integer_limits(dtype)
    values = np.arange(low, high + 1, dtype=np.int64)
    dequantized = (_f32(scale_of(in_q)) * (values - zero_of(in_q)).astype(np.float32)).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        transformed = np.asarray(transform(dequantized), dtype=np.float32)
        inverse_scale = np.float32(1) / _f32(scale_of(out_q))
        rescaled = round_half_away_f32((transformed * inverse_scale).astype(np.float32))
        quantized = (rescaled + np.float32(zero_of(out_q))).astype(np.float32)
        return np.clip(np.nan_to_num(np.trunc(quantized)), low, high).astype(dtype.np)


def _rounded(function) -> Callable[[np.ndarray], np.ndarray]:
    """A float64 function of float32 values rounded to float32 (what a correctly rounded libm gives)."""
    return lambda x: function(x.astype(np.float64)).astype(np.float32)


def _logistic(x: np.ndarray) -> np.ndarray:
    exponential = np.exp(-x.astype(np.float64)).astype(np.float32)
    return (np.float32(1) / (np.float32(1) + exponential)).astype(np.float32)


def _elu(x: np.ndarray) -> np.ndarray:
    exponential = np.exp(x.astype(np.float64)).astype(np.float32)
    return np.where(x < 0, (exponential - np.float32(1)).astype(np.float32), x)


def _gelu(x: np.ndarray) -> np.ndarray:
    erfc = np.vectorize(math.erfc, otypes=[np.float64])
    scaled = (x * np.float32(-math.sqrt(0.5))).astype(np.float32)
    return ((np.float32(0.5) * x).astype(np.float32) * erfc(scaled.astype(np.float64)).astype(np.float32))


def _gelu_approximate(x: np.ndarray) -> np.ndarray:
    f = np.float32
    cube = (((f(0.044715) * x).astype(f) * x).astype(f) * x).astype(f)
    inner = (f(math.sqrt(2 / math.pi)) * (x + cube).astype(f)).astype(f)
    return ((f(0.5) * x).astype(f) * (f(1) + np.tanh(inner.astype(np.float64)).astype(f)).astype(f)).astype(f)


TABLE_FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "logistic": _logistic, "tanh": _rounded(np.tanh), "elu": _elu, "gelu": _gelu,
    "gelu_approximate": _gelu_approximate,
}


@dataclass
class TableRecipe:
    """An 8-bit function as a table of its 256 results (index = input - the type's minimum)."""

    table: np.ndarray
    low: int

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.table[x.astype(np.intp) - self.low]


def table_recipe(function: str, x: TypedFact, quant: QParams) -> TableRecipe:
    dtype = check_quantized(function.upper(), x, quant, (DatumType.I8, DatumType.U8))
    table = lut_populate(TABLE_FUNCTIONS[function], x.qparams, quant, dtype)
    return TableRecipe(table, integer_limits(dtype)[0])


# the ReLU family and ABS ---------------------------------------------------------------------------
@dataclass
class ClampRecipe:
    """``clamp(requant(x - zi) + zo, low, high)``; ``absolute``: of ``|x - zi|`` (ABS);
    ``requant`` None: no rescaling."""

    zi: int
    zo: int
    low: int
    high: int
    requant: Requantizer | None
    absolute: bool = False

    def __call__(self, x: np.ndarray) -> np.ndarray:
        values = x.astype(np.int64) - self.zi
        if self.absolute:
            values = np.abs(values)
        out = (self.requant(values) if self.requant is not None else values) + self.zo
        return np.clip(out, self.low, self.high).astype(x.dtype)


def relu_recipe(x: TypedFact, quant: QParams, low: float | None, high: float | None) -> ClampRecipe:
    """TFLite's quantized ReluX: requantize by ``si / so`` (a float32 ratio), clamp at the real
    bounds ``low``/``high`` (None: the type's limit) quantized with ``roundf``."""
    dtype = check_quantized("ReLU", x, quant)
    si, so = _f32(scale_of(x.qparams)), _f32(scale_of(quant))
    zo = zero_of(quant)
    type_low, type_high = integer_limits(dtype)
    if low is not None and math.isfinite(low):
        type_low = max(type_low, zo + int(round_half_away_f32(np.float32(low) / so)))
    if high is not None and math.isfinite(high):
        type_high = min(type_high, zo + int(round_half_away_f32(np.float32(high) / so)))
    return ClampRecipe(zero_of(x.qparams), zo, type_low, type_high, Requantizer([np.float64(_f32(si / so))]))


def abs_recipe(x: TypedFact, quant: QParams) -> ClampRecipe:
    dtype = check_quantized("ABS", x, quant)
    if dtype == DatumType.I16 and (zero_of(x.qparams) or zero_of(quant)):
        raise AnalysisError("int16 ABS needs zero points 0")
    si, so = _f32(scale_of(x.qparams)), _f32(scale_of(quant))
    requant = Requantizer([np.float64(_f32(si / so))]) if si != so else None
    return ClampRecipe(zero_of(x.qparams), zero_of(quant), *integer_limits(dtype), requant, absolute=True)


# LEAKY_RELU, PRELU ------------------------------------------------------------------------------
@dataclass
class LeakyReluRecipe:
    """``x - zi`` scaled by ``identity`` when non-negative, else by ``alpha`` (its magnitude,
    negated when ``negate``: TFLite scales by |alpha|, so halves round as the magnitude's)."""

    zi: int
    zo: int
    identity: Requantizer
    alpha: Requantizer
    negate: bool

    def __call__(self, x: np.ndarray) -> np.ndarray:
        values = x.astype(np.int64) - self.zi
        negative = self.alpha(values)
        out = np.where(values >= 0, self.identity(values), -negative if self.negate else negative) + self.zo
        low, high = integer_limits(DatumType.from_numpy(x.dtype))
        return np.clip(out, low, high).astype(x.dtype)


def leaky_relu_recipe(x: TypedFact, quant: QParams, alpha: float) -> LeakyReluRecipe:
    dtype = check_quantized("LEAKY_RELU", x, quant)
    if dtype == DatumType.I16 and (zero_of(x.qparams) or zero_of(quant)):
        raise AnalysisError("int16 LEAKY_RELU needs zero points 0")
    si, so = _f32(scale_of(x.qparams)), _f32(scale_of(quant))
    real = np.float64(_f32(_f32(si * _f32(alpha)) / so))
    return LeakyReluRecipe(zero_of(x.qparams), zero_of(quant), Requantizer([np.float64(_f32(si / so))]),
                           Requantizer([abs(real)]), bool(real < 0))


@dataclass
class PReluRecipe:
    """``x >= zi ? requant(x - zi) : requant((x - zi) * (alpha - za))`` (alpha broadcast)."""

    zi: int
    za: int
    zo: int
    positive: Requantizer
    negative: Requantizer

    def __call__(self, x: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        values = x.astype(np.int64) - self.zi
        slopes = alpha.astype(np.int64) - self.za
        out = np.where(values >= 0, self.positive(values), self.negative(values * slopes)) + self.zo
        low, high = integer_limits(DatumType.from_numpy(x.dtype))
        return np.clip(out, low, high).astype(x.dtype)


def prelu_recipe(x: TypedFact, alpha: TypedFact, quant: QParams) -> PReluRecipe:
    check_quantized("PRELU", x, quant)
    if alpha.dtype not in QUANTIZED or alpha.qparams is None or len(alpha.qparams.scale) != 1:
        raise AnalysisError(f"quantized PRELU needs an alpha quantized per tensor, got {alpha}")
    si, sa, so = _f32(scale_of(x.qparams)), _f32(scale_of(alpha.qparams)), _f32(scale_of(quant))
    return PReluRecipe(zero_of(x.qparams), zero_of(alpha.qparams), zero_of(quant),
                       Requantizer([np.float64(_f32(si / so))]), Requantizer([np.float64(_f32(_f32(si * sa) / so))]))


# HARD_SWISH -------------------------------------------------------------------------------------------
def _int16_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier then DownScaleInt32ToInt16Multiplier."""
    multiplier, exponent = quantize_multiplier(real)
    if multiplier >= (1 << 31) - 1 - (1 << 15):
        return 32767, exponent
    return (multiplier + (1 << 15)) >> 16, exponent


@dataclass
class HardSwishRecipe:
    """TFLite's int16 fixed-point HARD_SWISH pipeline on 8-bit values."""

    zi: int
    zo: int
    output: tuple[int, int]
    reluish: tuple[int, int]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        output, output_exponent = self.output
        reluish_multiplier, exponent = self.reluish
        hires = (x.astype(np.int64) - self.zi) * 128
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
        out = rounding_divide_by_pot(preshift_output, -output_exponent) + self.zo
        low, high = integer_limits(DatumType.from_numpy(x.dtype))
        return np.clip(out, low, high).astype(x.dtype)


def hard_swish_recipe(x: TypedFact, quant: QParams) -> HardSwishRecipe:
    check_quantized("HARD_SWISH", x, quant, (DatumType.I8, DatumType.U8))
    si, so = _f32(scale_of(x.qparams)), _f32(scale_of(quant))
    hires = _f32(_f32(1.0 / 128.0) * si)
    output = _int16_multiplier(np.float64(_f32(hires / so)))
    if output[1] > 0:
        raise AnalysisError("HARD_SWISH: the output scale is too small for the input scale")
    reluish = _int16_multiplier(np.float64(_f32(hires / _f32(3.0 / 32768.0))))
    return HardSwishRecipe(zero_of(x.qparams), zero_of(quant), output, reluish)


# LOGISTIC and TANH on int16 ---------------------------------------------------------------------------
@lru_cache(maxsize=1)
def sigmoid_table_uint16() -> np.ndarray:
    """TFLite's table of sigmoid(i / 24) in unsigned Q0.16, i = 0..255, made for linear
    interpolation as TFLite makes its int16 tables: each sample lowered by half the error the
    interpolation makes at the middle of its interval; the last entry is the saturated 65535."""
    x = np.arange(256) / 24.0
    sigmoid = lambda t: 1.0 / (1.0 + np.exp(-t))  # noqa: E731
    here, middle, after = sigmoid(x), sigmoid(x + 1 / 48), sigmoid(x + 1 / 24)
    values = np.floor(65536.0 * (here - ((here + after) / 2 - middle) / 2) + 0.5)
    values[-1] = 65535
    return np.clip(values, 0, 65535).astype(np.int64)


@dataclass
class Int16SigmoidRecipe:
    """TFLite's int16 LOGISTIC/TANH: the input rescaled to units of 1/(3 * 4096) (``multiplier``,
    ``left_shift``; 0 multiplier: a power-of-two scale), then the sigmoid table interpolated
    (tanh(x) = 2 sigmoid(2x) - 1: TANH reads it at twice the resolution)."""

    multiplier: int
    left_shift: int
    tanh: bool

    def __call__(self, x: np.ndarray) -> np.ndarray:
        table = sigmoid_table_uint16()
        multiplier, shift = self.multiplier, self.left_shift
        if multiplier == 0:
            multiplier, shift = 3 << shift, 0
        rounding = (1 << (shift - 1)) if shift > 0 else 0
        values = (x.astype(np.int64) * multiplier + rounding) >> shift
        magnitude = np.abs(values)
        bits = 8 if self.tanh else 9
        index = magnitude >> bits
        inside = np.minimum(index, 254)
        low = table[inside]
        interpolated = (low << bits) + (magnitude & ((1 << bits) - 1)) * (table[inside + 1] - low)
        saturated = index >= 255
        if self.tanh:
            result = np.where(saturated, 0xFFFF << 8, interpolated)
            offset = (1 << 23) - (1 << 7)
            out = np.where(values >= 0, result - offset, -result + offset + (1 << 8) - 1) >> 8
        else:
            result = np.where(saturated, 0x7FFF << 10, interpolated)
            out = np.where(values >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1) >> 10
        return out.astype(np.int16)


def int16_sigmoid_recipe(x: TypedFact, quant: QParams, tanh: bool) -> Int16SigmoidRecipe:
    """The input multiplier of TFLite's int16 LOGISTIC/TANH Prepare (zero points 0, output
    scale 2^-15)."""
    name = "TANH" if tanh else "LOGISTIC"
    check_quantized(name, x, quant, (DatumType.I16,))
    if zero_of(x.qparams) or zero_of(quant):
        raise AnalysisError(f"int16 {name} needs zero points 0")
    if checked_log2(scale_of(quant)) != -15:
        raise AnalysisError(f"int16 {name} needs the output scale 2^-15, got {scale_of(quant)}")
    scale = scale_of(x.qparams)
    log2 = checked_log2(scale)
    if log2 is not None and 12 + log2 in ((0, 1) if tanh else (0,)):
        return Int16SigmoidRecipe(0, 12 + log2, tanh)
    multiplier = float(scale) * 4096.0 * 3.0
    shift = 0
    while multiplier <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    return Int16SigmoidRecipe(int(multiplier), shift, tanh)


def sigmoid_recipe(x: TypedFact, quant: QParams, tanh: bool = False):
    """LOGISTIC (``tanh`` False) or TANH: an 8-bit table, or TFLite's int16 interpolation."""
    if x.dtype == DatumType.I16:
        return int16_sigmoid_recipe(x, quant, tanh)
    if not tanh and scale_of(quant) != 1.0 / 256:
        raise AnalysisError(f"quantized LOGISTIC needs the output scale 1/256, got {scale_of(quant)}")
    return table_recipe("tanh" if tanh else "logistic", x, quant)


# RSQRT -------------------------------------------------------------------------------------------
@dataclass
class RsqrtRecipe:
    """TFLite's quantized RSQRT: the fixed-point inverse square root of ``x - zi``, requantized
    by ``1 / (sqrt(si) * so)`` (20 extra bits kept in between); 0 gives the type's maximum."""

    zi: int
    zo: int
    multiplier: int
    shift: int
    extra: int = 20

    def __call__(self, x: np.ndarray) -> np.ndarray:
        values = x.astype(np.int64) - self.zi
        if np.any(values < 0):
            raise RunError("RSQRT is only defined for values above the input's zero point")
        inverse, inverse_shift = inverse_sqrt_multipliers(values.reshape(-1))
        ones = np.ones(inverse.shape, dtype=np.int64)
        data = Requantizer.from_pairs(inverse, inverse_shift + self.extra)(ones) if inverse.size else ones
        out = Requantizer.from_pairs(self.multiplier, self.shift - self.extra)(data) + self.zo
        low, high = integer_limits(DatumType.from_numpy(x.dtype))
        out = np.where(values.reshape(-1) == 0, high, out).reshape(values.shape)
        return np.clip(out, low, high).astype(x.dtype)


def rsqrt_recipe(x: TypedFact, quant: QParams) -> RsqrtRecipe:
    dtype = check_quantized("RSQRT", x, quant, (DatumType.I8, DatumType.I16))
    if dtype == DatumType.I16 and (zero_of(x.qparams) or zero_of(quant)):
        raise AnalysisError("int16 RSQRT needs zero points 0")
    si, so = _f32(scale_of(x.qparams)), _f32(scale_of(quant))
    multiplier, shift = quantize_multiplier(1.0 / float(np.float64(_f32(np.sqrt(si) * so))))
    return RsqrtRecipe(zero_of(x.qparams), zero_of(quant), multiplier, shift)
