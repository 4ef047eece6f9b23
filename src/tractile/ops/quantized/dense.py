"""TFLite's integer matrix products: FULLY_CONNECTED (int8, uint8, 16x8; per-tensor or
per-channel weights) and BATCH_MATMUL (int8, int16), the recipes of a quantized core MatMul.

Integer products run on BLAS: operand products summed in float32 (when every partial
sum stays below 2**24) or float64 (below 2**53) are exact integers. Constant weights are
prepared once (transposed, offset, their column sums for the input zero point folded
into the bias), so a run is one matmul plus the requantization.

Two requantizations exist in TFLite. Its reference FULLY_CONNECTED kernel
(``flavour="reference"``, what ``OpResolverType.BUILTIN_REF`` runs) rescales the int32
accumulator in double precision and rounds halves away from zero; TFLite Micro, TFLite's
optimized kernels and every BATCH_MATMUL (``flavour="micro"``) use the 32-bit fixed-point
multiplier with double rounding (int16 activations: its 64-bit variant).
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import QParams, TypedFact
from .common import integer_limits, is_quantized, scale_of, scales_of, zero_of
from .fixedpoint import (
    Requantizer,
    multiply_by_quantized_multiplier_64,
    quantize_multiplier,
    round_half_away,
    wrap32,
)
from .onnxruntime import check_eight_bits, weight_zero
from .output import OutputStage

FLAVOURS = ("reference", "micro", "onnxruntime")

#: the largest double below 0.5: adding it (signed) then truncating rounds halves away from
#: zero exactly, as C's ``round`` does (adding 0.5 would round 0.49999999999999994 up)
HALF_BELOW = float(np.nextafter(0.5, 0.0))


def exact_matmul(a: np.ndarray, b: np.ndarray, bound: float) -> np.ndarray:
    """``a @ b`` of integer-valued operands, exact: float32 BLAS when ``bound`` < 2**24."""
    work = np.float32 if bound < (1 << 24) else np.float64
    return np.matmul(a.astype(work, copy=False), b.astype(work, copy=False))


class IntegerRescale:
    """Accumulators to output integers: TFLite's requantization in either flavour.

    ``wide`` (int16 activations, 64-bit accumulators) uses the int64 multiplier variant
    in the micro flavour.
    """

    def __init__(self, input_scale: float, weight_scales: np.ndarray, output_scale: float, per_channel: bool,
                 flavour: str, wide: bool = False):
        self.flavour = flavour
        self.wide = wide
        si, so = np.float64(input_scale), np.float64(output_scale)
        if flavour == "onnxruntime":  # float32 (s_in * s_w) / s_out, applied in float32
            self.scale = (np.float32(input_scale) * weight_scales.astype(np.float32)) / np.float32(output_scale)
            return
        if flavour == "reference":
            scale = (si * weight_scales.astype(np.float64)) / so
            self.scale = float(scale[0]) if scale.size == 1 else scale
            return
        if per_channel:
            reals = (si * weight_scales.astype(np.float64)) / so
        else:
            reals = np.array([np.float64(np.float32(input_scale) * weight_scales[0]) / so])
        pairs = [quantize_multiplier(r) for r in reals.tolist()]
        self.multiplier = np.array([m for m, _ in pairs], dtype=np.int64)
        self.shift = np.array([s for _, s in pairs], dtype=np.int64)
        if self.multiplier.size == 1:
            self.multiplier, self.shift = int(self.multiplier[0]), int(self.shift[0])
        self.requant = Requantizer.from_pairs(self.multiplier, self.shift)

    def __call__(self, acc: np.ndarray) -> np.ndarray:
        if self.flavour == "onnxruntime":  # the caller clamps to the type's range first: no overflow
            scaled = np.clip(acc.astype(np.float32) * self.scale, -2.0 ** 30, 2.0 ** 30)
            return np.rint(scaled).astype(np.int64)
        if self.flavour == "reference":
            return round_half_away(acc.astype(np.float64) * self.scale).astype(np.int64)
        if self.wide:
            return multiply_by_quantized_multiplier_64(acc, self.multiplier, self.shift)
        return self.requant(acc)


class IntegerDense:
    """A quantized product by constant (units, depth) weights, prepared once.

    The matmul runs on the raw input and the offset weights in an exact float type; the
    input zero-point correction (``x_zero * sum(weights)``) is folded into the bias. The
    reference flavour then rescales in double precision (one add, one multiply, a rounding
    of halves away from zero); the micro flavour requantizes in fixed point.
    ``low``/``high``: the output clamp (the fused activation's, within the type's range).
    """

    def __init__(self, x_q: QParams, w_q: QParams, y_q: QParams, dtype: DatumType, w: np.ndarray, bias,
                 low: int, high: int, flavour: str):
        weight_scales = scales_of(w_q)
        w_zero = zero_of(w_q) if weight_scales.size == 1 or flavour == "onnxruntime" else 0
        offset = w.astype(np.int64) - w_zero
        in_bound = {DatumType.I16: 32768, DatumType.U8: 255}.get(dtype, 128)
        bound = float(in_bound) * float(np.abs(offset).max(initial=0)) * w.shape[1]
        self.work = np.float32 if bound < (1 << 24) and flavour != "reference" else np.float64
        self.weights_t = np.ascontiguousarray(offset.T.astype(self.work))
        units = w.shape[0]
        total_bias = np.zeros(units, np.int64) if bias is None else np.asarray(bias).reshape(-1).astype(np.int64)
        total_bias = total_bias - zero_of(x_q) * offset.sum(axis=1)
        self.dtype = dtype.np
        self.zero = zero_of(y_q)
        self.low, self.high = low, high
        self.flavour = flavour
        self.rescale = IntegerRescale(scale_of(x_q), weight_scales, scale_of(y_q), weight_scales.size > 1,
                                      flavour, dtype == DatumType.I16)
        self.bias = total_bias
        self.bias_f = total_bias.astype(np.float64)
        # TFLite accumulates 8-bit products in int32, which wraps modulo 2^32: when the bound of
        # the sum (products and bias) leaves int32, the exact sum is wrapped the same way first
        self.wraps = dtype != DatumType.I16 and bound + float(np.abs(total_bias).max(initial=0)) >= (1 << 31) \
            or flavour == "onnxruntime"  # the general path: exact sums, float32 requantization
        if flavour == "micro" and dtype != DatumType.I16:
            self.output = OutputStage(self.rescale.requant, total_bias, self.zero, self.low, self.high, self.dtype,
                                      units, acc_bound=bound)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        if self.wraps:
            total = wrap32(np.rint(rows.astype(self.work) @ self.weights_t).astype(np.int64) + self.bias)
            return np.clip(self.rescale(total) + self.zero, self.low, self.high).astype(self.dtype)
        if self.flavour == "reference":
            scaled = np.matmul(rows, self.weights_t)
            scaled += self.bias_f
            scaled *= self.rescale.scale
            scaled += np.copysign(HALF_BELOW, scaled)
            np.trunc(scaled, out=scaled)
            scaled += self.zero
            np.maximum(scaled, self.low, out=scaled)
            out = np.empty(scaled.shape, self.dtype)
            np.minimum(scaled, self.high, out=out, casting="unsafe")
            return out
        acc = rows.astype(self.work) @ self.weights_t
        if self.dtype != np.int16:
            return self.output(acc)
        total = acc.astype(np.int64) + self.bias
        scaled = self.rescale(total) + self.zero
        return np.clip(scaled, self.low, self.high).astype(self.dtype)


def check_product_quantization(a: TypedFact, b: TypedFact, bias: TypedFact | None, quant: QParams,
                               flavour: str, b_units_axis: int) -> None:
    """AnalysisError unless ``a @ b (+ bias)`` can follow TFLite's integer recipe."""
    if flavour not in FLAVOURS:
        raise AnalysisError(f"flavour must be one of {FLAVOURS}, got {flavour!r}")
    if flavour == "onnxruntime":
        check_eight_bits("product", a, b)
        if bias is not None and bias.dtype != DatumType.I32:
            raise AnalysisError(f"onnxruntime's quantized product needs an int32 bias, got {bias}")
        weight_zero(b.qparams, "product")
        if len(a.qparams.scale) != 1 or len(b.qparams.scale) > 1 and (
                b.qparams.axis is None or b.qparams.axis % max(b.rank, 1) != b_units_axis % max(b.rank, 1)):
            raise AnalysisError(f"onnxruntime's quantized product takes a per-tensor input and weights per tensor "
                                f"or per output column, got {a} and {b}")
        return
    if not is_quantized(a.dtype) or a.qparams is None:
        raise AnalysisError(f"a quantized product needs a quantized first operand, got {a}")
    if b.dtype not in (DatumType.I8, DatumType.U8, DatumType.I16) or b.qparams is None:
        raise AnalysisError(f"a quantized product needs quantized weights, got {b}")
    if a.dtype == DatumType.U8 and b.dtype != DatumType.U8:
        raise AnalysisError(f"uint8 activations need uint8 weights, got {b}")
    if a.dtype == DatumType.I8 and b.dtype != DatumType.I8:
        raise AnalysisError(f"int8 activations need int8 weights, got {b}")
    scales = scales_of(b.qparams)
    if scales.size > 1:
        if b.qparams.axis is None or b.qparams.axis % max(b.rank, 1) != b_units_axis % max(b.rank, 1):
            raise AnalysisError(f"per-channel weights must be quantized along their output axis, got {b}")
        if any(int(z) != 0 for z in b.qparams.zero_point):
            raise AnalysisError(f"per-channel weights must have zero points 0, got {b}")
    if bias is not None and bias.dtype not in (DatumType.I32, DatumType.I64):
        raise AnalysisError(f"a quantized product needs an int32 (or int64) bias, got {bias}")
    if scale_of(quant, "the output") <= 0 or scale_of(a.qparams) <= 0 or float(scales.min(initial=1.0)) <= 0:
        raise AnalysisError("quantized products need positive scales")


def clamp_of(quant: QParams, dtype: DatumType, clip: tuple[float, float] | None) -> tuple[int, int]:
    """The output clamp: the type's range, narrowed by a fused Clip's integer bounds."""
    low, high = integer_limits(dtype)
    if clip is not None:
        low, high = max(low, int(np.ceil(clip[0]))), min(high, int(np.floor(clip[1])))
    return low, high


class ProductRecipe:
    """A quantized ``a @ b (+ bias)``: constant weights are packed once (per weight array);
    computed operands (BATCH_MATMUL) run through an exact product with zero points removed.

    ``transpose_a``/``transpose_b``: the operands' last two axes are swapped first.
    """

    def __init__(self, a: TypedFact, b: TypedFact, quant: QParams, clamp: tuple[int, int], flavour: str,
                 transpose_a: bool, transpose_b: bool):
        self.a_q, self.b_q, self.quant = a.qparams, b.qparams, quant
        self.dtype = a.dtype
        self.low, self.high = clamp
        self.flavour = flavour
        self.transpose_a, self.transpose_b = transpose_a, transpose_b
        self._packed: tuple | None = None

    def dense(self, weights: np.ndarray, bias) -> IntegerDense:
        """The weights (units, depth) packed for rows of ``a`` (cached per weight array)."""
        packed = self._packed
        if packed is not None and packed[0] is weights and packed[1] is bias:
            return packed[2]
        w = weights if self.transpose_b else weights.T
        dense = IntegerDense(self.a_q, self.b_q, self.quant, self.dtype, w, bias, self.low, self.high, self.flavour)
        self._packed = (weights, bias, dense)
        return dense

    def __call__(self, a: np.ndarray, b: np.ndarray, bias=None) -> np.ndarray:
        if b.ndim == 2 and not self.transpose_a:
            depth = b.shape[1] if self.transpose_b else b.shape[0]
            kernel = self.dense(b, bias)
            rows = a.reshape(-1, depth) if depth else a.reshape(-1, 0)
            out = kernel(rows)
            return out.reshape(*a.shape[:-1], out.shape[-1])
        return self._batched(a, b, bias)

    def _batched(self, a: np.ndarray, b: np.ndarray, bias) -> np.ndarray:
        if self.transpose_a:
            a = np.swapaxes(a, -1, -2)
        if self.transpose_b:
            b = np.swapaxes(b, -1, -2)
        a_off = a.astype(np.int64) - zero_of(self.a_q)
        b_off = b.astype(np.int64) - zero_of(self.b_q)
        depth = a.shape[-1]
        bound = float(np.abs(a_off).max(initial=0)) * float(np.abs(b_off).max(initial=0)) * depth
        if bound >= 2.0 ** 53:
            acc = np.matmul(a_off, b_off)
        else:
            acc = np.rint(exact_matmul(a_off, b_off, bound)).astype(np.int64)
        if bias is not None:
            acc = acc + np.asarray(bias, dtype=np.int64)
        scales = scales_of(self.b_q)
        rescale = IntegerRescale(scale_of(self.a_q), scales, scale_of(self.quant), scales.size > 1, self.flavour,
                                 self.dtype == DatumType.I16)
        out = rescale(acc) + zero_of(self.quant)
        return np.clip(out, self.low, self.high).astype(self.dtype.np)
