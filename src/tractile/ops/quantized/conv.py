"""The integer recipe of the quantized convolutions (TFLite's CONV_2D, DEPTHWISE_CONV_2D and
TRANSPOSE_CONV): int8 with per-channel weights, uint8 (per tensor), int16 activations with int8
weights and int32 or int64 biases.

Inputs are offset by their zero point (padded taps are exact zeros, as in TFLite's kernels,
which skip them), the weights by theirs (uint8). Integer products are summed on BLAS in float32
when every partial sum provably stays below 2**24, else in float64 (exact below 2**53). The
int32 (or int64, for int16 activations with int64 biases) accumulators are then requantized with
TFLite's fixed-point multipliers: per channel from ``double(s_in) * double(s_w) / double(s_out)``
(int8, int16), or per tensor from the float32 product ``s_in * s_w`` (uint8, as TFLite's legacy
path computes it).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import QParams, TypedFact
from .common import integer_limits, scale_of, scales_of, zero_of
from .fixedpoint import Requantizer, multiply_by_quantized_multiplier_64
from .onnxruntime import FloatRequant, check_eight_bits, product_scales, weight_zero
from .output import OutputStage


def conv_requantizer(input_q, weight_q, output_q) -> Requantizer:
    """Per-channel multipliers ``double(s_in) * double(s_w[c]) / double(s_out)`` (TFLite's conv prepare)."""
    scales = scales_of(weight_q).astype(np.float64)
    return Requantizer(np.float64(scale_of(input_q)) * scales / np.float64(scale_of(output_q)))


def legacy_requantizer(input_q, weight_q, output_q) -> Requantizer:
    """The uint8 multiplier: the float32 product ``s_in * s_w`` over ``double(s_out)``."""
    product = np.float32(np.float32(scale_of(input_q)) * np.float32(scale_of(weight_q)))
    return Requantizer([np.float64(product) / np.float64(scale_of(output_q))])


def clamp_of(activation, dtype: DatumType) -> tuple[int, int]:
    """The output clamp of a quantized op: the type's range met with a fused Clip's integer bounds."""
    low, high = integer_limits(dtype)
    if activation is None:
        return low, high
    if type(activation).__name__ != "Clip" or getattr(activation, "dynamic_low", False) \
            or getattr(activation, "dynamic_high", False):
        raise AnalysisError(f"a quantized op can only fuse a Clip, got {activation.name}")
    if activation.low is not None:
        low = max(low, math.ceil(activation.low))
    if activation.high is not None:
        high = min(high, math.floor(activation.high))
    return low, high


@dataclass(frozen=True)
class ConvQuant:
    """What a quantized convolution derives from its facts: the input type, zero points (the
    weights' only when quantized per tensor), the requantizer, the output clamp, and whether
    the accumulators are int64 (``wide``: int16 inputs with an int64 bias or none)."""

    dtype: DatumType
    x_zero: int
    w_zero: int
    zero: int
    low: int
    high: int
    requant: Requantizer
    wide: bool
    #: onnxruntime's float32 multipliers (flavour "onnxruntime"), else None: TFLite's fixed point
    scales: np.ndarray | None = None


def conv_quant(what: str, x: TypedFact, w: TypedFact, bias: TypedFact | None, quant: QParams,
               activation=None, transposed: bool = False, flavour: str = "reference") -> ConvQuant:
    """The recipe of a quantized convolution ``what`` (for messages) of these facts; checks the
    types TFLite supports (TRANSPOSE_CONV: int8 and int16 inputs only), or onnxruntime's
    (``flavour="onnxruntime"``: int8 or uint8 inputs and weights, float32 requantization)."""
    if flavour == "onnxruntime" and not transposed:
        return _onnxruntime_conv_quant(what, x, w, bias, quant, activation)
    allowed = (DatumType.I8, DatumType.I16) if transposed else (DatumType.I8, DatumType.U8, DatumType.I16)
    if x.dtype not in allowed:
        raise AnalysisError(f"quantized {what} supports {' and '.join(map(str, allowed))} inputs, got {x}")
    expected = DatumType.U8 if x.dtype == DatumType.U8 else DatumType.I8
    if w.dtype != expected:
        raise AnalysisError(f"quantized {what}: {x.dtype} inputs need {expected} weights, got {w}")
    if x.qparams is None or w.qparams is None:
        raise AnalysisError(f"quantized {what} needs quantized input and weights, got {x} and {w}")
    if bias is not None and bias.dtype not in (DatumType.I32, DatumType.I64):
        raise AnalysisError(f"quantized {what} needs an int32 or int64 bias, got {bias}")
    per_channel = len(w.qparams.scale) > 1
    if x.dtype == DatumType.U8 and per_channel:
        raise AnalysisError(f"uint8 {what} is quantized per tensor")
    if x.dtype == DatumType.I16 and (zero_of(x.qparams) or zero_of(quant)):
        raise AnalysisError(f"int16 {what} needs zero points 0")
    requant = legacy_requantizer(x.qparams, w.qparams, quant) if x.dtype == DatumType.U8 else \
        conv_requantizer(x.qparams, w.qparams, quant)
    low, high = clamp_of(activation, x.dtype)
    wide = x.dtype == DatumType.I16 and (bias is None or bias.dtype == DatumType.I64)
    return ConvQuant(x.dtype, zero_of(x.qparams), 0 if per_channel else zero_of(w.qparams), zero_of(quant), low,
                     high, requant, wide)


def _onnxruntime_conv_quant(what: str, x: TypedFact, w: TypedFact, bias: TypedFact | None, quant: QParams,
                           activation) -> ConvQuant:
    check_eight_bits(what, x, w)
    if bias is not None and bias.dtype != DatumType.I32:
        raise AnalysisError(f"onnxruntime's quantized {what} needs an int32 bias, got {bias}")
    if len(x.qparams.scale) != 1:
        raise AnalysisError(f"onnxruntime's quantized {what} takes a per-tensor input, got {x}")
    scales = product_scales(x.qparams, w.qparams, quant)
    low, high = clamp_of(activation, x.dtype)
    return ConvQuant(x.dtype, zero_of(x.qparams), weight_zero(w.qparams, what), zero_of(quant), low, high,
                     Requantizer(scales.astype(np.float64)), False, scales)


class QuantizedStage:
    """What a quantized convolution needs besides its weights: the work type of its exact
    sums and the output stage (bias with the input zero-point correction folded in,
    requantization, clamp).

    ``weight_sums`` are the per-filter sums of the offset weights: the convolution runs on
    the raw input (padded with its zero point) and ``x_zero * weight_sums`` comes off the bias.
    """

    def __init__(self, cq: ConvQuant, weights: np.ndarray, bias: np.ndarray | None, weight_sums: np.ndarray,
                 taps_count: int):
        self.quant = cq
        self.x_zero = cq.x_zero
        in_bound = {DatumType.I16: 32768, DatumType.U8: 255}.get(cq.dtype, 128)
        w_bound = float(np.abs(weights.astype(np.int64) - cq.w_zero).max(initial=0))
        self.work = np.float32 if in_bound * w_bound * taps_count < (1 << 24) else np.float64
        total_bias = np.zeros(len(weight_sums), np.int64) if bias is None else bias.reshape(-1).astype(np.int64)
        self.bias = total_bias - self.x_zero * weight_sums
        self.wide = cq.wide
        self.dtype = cq.dtype.np
        self.output = OutputStage(cq.requant, self.bias, cq.zero, cq.low, cq.high, cq.dtype.np, len(weight_sums),
                                  acc_bound=in_bound * w_bound * taps_count)

    def finish(self, acc: np.ndarray) -> np.ndarray:
        """Float-held exact sums (N, H, W, filters) to the output integers."""
        if self.quant.scales is not None:
            total = acc.astype(np.int64) + self.bias
            cq = self.quant
            return FloatRequant(cq.scales, cq.zero, cq.low, cq.high, cq.dtype)(total)
        if not self.wide:
            n, height, width, filters = acc.shape
            return self.output(acc.reshape(n * height, width * filters), width).reshape(acc.shape)
        cq = self.quant
        total = acc.astype(np.int64) + self.bias
        total = multiply_by_quantized_multiplier_64(total, cq.requant.multipliers, cq.requant.shifts)
        return np.clip(total + cq.zero, cq.low, cq.high).astype(self.dtype)


def requantize_sums(cq: ConvQuant, acc: np.ndarray) -> np.ndarray:
    """int64 accumulators (bias included, channels last) to the output integers (TRANSPOSE_CONV)."""
    if cq.wide:
        scaled = multiply_by_quantized_multiplier_64(acc, cq.requant.multipliers, cq.requant.shifts)
    else:
        scaled = cq.requant(acc)
    return np.clip(scaled + cq.zero, cq.low, cq.high).astype(cq.dtype.np)
