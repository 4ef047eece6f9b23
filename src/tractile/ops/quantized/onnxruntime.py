"""onnxruntime's quantized arithmetic (the ``flavour="onnxruntime"`` of the quantized core ops),
as its CPU kernels (MLAS on x86) compute it for QLinearConv, QLinearMatMul, QGemm,
QLinearAdd, QLinearMul, QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat and the
table-driven QLinearSigmoid / QLinearLeakyRelu, and for the DQ -> op -> Q groups its graph
optimizer fuses into them.

Everything is float32 arithmetic, operation by operation, rounding half to even:

* products (convolutions, matmuls, QLinearMul, global average pooling) requantize their
  exact int32 sums (bias included): ``float(sum) * scale`` with ``scale`` the float32
  ``s_x * s_w / s_y`` (``s_x / (s_y * count)`` for the global pool), rounded, plus the output
  zero point, saturated (:class:`FloatRequant`);
* QLinearAdd adds the dequantized inputs ``s * float(q - z)`` and divides by the output scale;
* QLinearAveragePool averages the dequantized values in float (summed tap after tap, row by
  row), then quantizes ``avg / s_y + z_y``; a window covering the whole input without padding
  takes the global pool's integer path;
* tables (QLinearConcat's rescaling, the unary ops) map each of the 256 values through
  dequantize, the function in float32, and QuantizeLinear (``x / s_y``, rounded, plus ``z_y``).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import QParams, TypedFact
from .common import integer_limits, scale_of, scales_of, zero_of

EIGHT_BITS = (DatumType.I8, DatumType.U8)


def f32(value) -> np.float32:
    return np.float32(value)


def product_scales(x_q: QParams, w_q: QParams, y_q: QParams) -> np.ndarray:
    """The float32 multipliers ``s_x * s_w[c] / s_y`` (one per weight scale), as onnxruntime
    computes them: the product, then the quotient, each rounded to float32."""
    product = f32(scale_of(x_q)) * scales_of(w_q)
    return (product / f32(scale_of(y_q, "the output"))).astype(np.float32)


def check_eight_bits(what: str, *facts: TypedFact) -> None:
    for fact in facts:
        if fact.dtype not in EIGHT_BITS or fact.qparams is None:
            raise AnalysisError(f"onnxruntime's quantized {what} takes quantized int8 or uint8 tensors, got {fact}")


def weight_zero(w_q: QParams, what: str) -> int:
    """The one zero point of (possibly per-channel) weights: onnxruntime's kernels take one."""
    zeros = {int(z) for z in w_q.zero_point}
    if len(zeros) != 1:
        raise AnalysisError(f"onnxruntime's {what} needs one weight zero point, got {sorted(zeros)}")
    return zeros.pop()


@dataclass(frozen=True)
class FloatRequant:
    """Exact integer sums to outputs: ``clamp(rint(float32(sum) * scale) + zero, low, high)``.
    ``scales`` is one float32 per channel (the last axis) or a single one."""

    scales: np.ndarray
    zero: int
    low: int
    high: int
    dtype: DatumType

    def __call__(self, total: np.ndarray) -> np.ndarray:
        value = np.asarray(total).astype(np.float32) * self.scales
        np.clip(value, f32(self.low - self.zero), f32(self.high - self.zero), out=value)
        rounded = np.rint(value).astype(np.int64) + self.zero
        return rounded.astype(self.dtype.np)


def float_requant(scales: np.ndarray, quant: QParams, dtype: DatumType, clamp: tuple[int, int]) -> FloatRequant:
    low, high = clamp
    return FloatRequant(np.asarray(scales, dtype=np.float32).reshape(-1), zero_of(quant), low, high, dtype)


def quantize_linear(values: np.ndarray, q: QParams, dtype: DatumType, low: int | None = None,
                    high: int | None = None) -> np.ndarray:
    """onnxruntime's QuantizeLinear of float32 ``values``: ``rint(v / s) + z``, saturated."""
    if low is None or high is None:
        low, high = integer_limits(dtype)
    zero = zero_of(q)
    value = np.asarray(values, dtype=np.float32) / f32(scale_of(q))
    value = np.clip(value, f32(low - zero), f32(high - zero))
    return (np.rint(value).astype(np.int64) + zero).astype(dtype.np)


def dequantized_values(q: QParams, dtype: DatumType) -> np.ndarray:
    """``s * float(v - z)`` for every value of the 8-bit ``dtype``, in the order of the raw bytes
    read as ``dtype`` (index ``v - min``)."""
    low, high = integer_limits(dtype)
    every = np.arange(low, high + 1, dtype=np.int64)
    return f32(scale_of(q)) * (every - zero_of(q)).astype(np.float32)


@dataclass(frozen=True)
class TableRecipe:
    """A 256-entry table indexed by ``value - min`` of the input type."""

    table: np.ndarray
    offset: int

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.table[x.astype(np.int64) - self.offset]


def table_recipe(x: TypedFact, quant: QParams, function: Callable[[np.ndarray], np.ndarray] | None,
                 dtype: DatumType | None = None) -> TableRecipe:
    """onnxruntime's lookup table: dequantize every value, apply ``function`` in float32 (None:
    the identity, QLinearConcat's rescaling), quantize with ``quant``."""
    check_eight_bits("lookup table", x)
    values = dequantized_values(x.qparams, x.dtype)
    if function is not None:
        with np.errstate(all="ignore"):
            values = np.asarray(function(values), dtype=np.float32)
    out = dtype or x.dtype
    return TableRecipe(quantize_linear(values, quant, out), integer_limits(x.dtype)[0])


@dataclass(frozen=True)
class BinaryRecipe:
    """QLinearAdd and QLinearMul on broadcast raw values."""

    kind: str
    a_q: QParams
    b_q: QParams
    quant: QParams
    dtype: DatumType
    low: int
    high: int

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        za, zb, zo = zero_of(self.a_q), zero_of(self.b_q), zero_of(self.quant)
        sa, sb, so = f32(scale_of(self.a_q)), f32(scale_of(self.b_q)), f32(scale_of(self.quant))
        da = np.asarray(a).astype(np.int64) - za
        db = np.asarray(b).astype(np.int64) - zb
        if self.kind == "add":
            value = (da.astype(np.float32) * sa + db.astype(np.float32) * sb) / so
        else:
            value = (da * db).astype(np.float32) * f32(f32(sa * sb) / so)
        value = np.clip(value, f32(self.low - zo), f32(self.high - zo))
        return (np.rint(value).astype(np.int64) + zo).astype(self.dtype.np)


def binary_recipe(kind: str, a: TypedFact, b: TypedFact, quant: QParams, clamp: tuple[int, int]) -> BinaryRecipe:
    if kind not in ("add", "mul"):
        raise AnalysisError(f"onnxruntime has no quantized {kind} (QLinearAdd and QLinearMul only)")
    check_eight_bits(kind, a, b)
    if a.dtype != b.dtype or len(a.qparams.scale) != 1 or len(b.qparams.scale) != 1:
        raise AnalysisError(f"onnxruntime's quantized {kind} takes two per-tensor inputs of one type, got {a} and {b}")
    return BinaryRecipe(kind, a.qparams, b.qparams, quant, a.dtype, *clamp)


@dataclass(frozen=True)
class AveragePoolRecipe:
    """QLinearAveragePool (NHWC): dequantized values summed in float32 tap after tap, divided
    by the tap count, quantized; a window over the whole input without padding (``whole``)
    sums the raw integers and requantizes them as QLinearGlobalAveragePool does."""

    x_q: QParams
    quant: QParams
    dtype: DatumType
    low: int
    high: int

    def global_requant(self, count: int) -> FloatRequant:
        scale = f32(scale_of(self.x_q)) / (f32(scale_of(self.quant)) * f32(count))
        return FloatRequant(np.asarray([scale], np.float32), zero_of(self.quant), self.low, self.high, self.dtype)

    def whole(self, x: np.ndarray) -> np.ndarray:
        """Every (H, W) plane averaged: (N, 1, 1, C)."""
        count = x.shape[1] * x.shape[2]
        total = x.astype(np.int64).sum(axis=(1, 2), keepdims=True) - zero_of(self.x_q) * count
        return self.global_requant(count)(total)

    def finish(self, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """float32 window sums of dequantized values over the float32 tap counts."""
        average = sums / counts
        zero = zero_of(self.quant)
        value = average / f32(scale_of(self.quant)) + f32(zero)
        value = np.clip(np.rint(value), self.low, self.high)
        return value.astype(self.dtype.np)


def average_pool_recipe(x: TypedFact, quant: QParams, clamp: tuple[int, int]) -> AveragePoolRecipe:
    check_eight_bits("average pool", x)
    if len(x.qparams.scale) != 1:
        raise AnalysisError(f"onnxruntime's quantized average pool takes a per-tensor input, got {x}")
    return AveragePoolRecipe(x.qparams, quant, x.dtype, *clamp)


class ConcatRecipe:
    """QLinearConcat: each input copied when quantized as the output, else mapped by a table."""

    def __init__(self, inputs: list[TypedFact], quant: QParams):
        check_eight_bits("concatenation", *inputs)
        if len(quant.scale) != 1 or any(len(f.qparams.scale) != 1 for f in inputs):
            raise AnalysisError("onnxruntime's quantized concatenation takes per-tensor quantization")
        self.dtype: DatumType = inputs[0].dtype
        self.tables: list[TableRecipe | None] = [
            None if scale_of(f.qparams) == scale_of(quant) and zero_of(f.qparams) == zero_of(quant)
            else table_recipe(f, quant, None) for f in inputs]

    def rescaled(self, index: int, part: np.ndarray) -> np.ndarray:
        table = self.tables[index]
        return part if table is None else table(part)
