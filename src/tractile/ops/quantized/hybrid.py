"""LiteRT's hybrid (dynamic-range) arithmetic: float activations, int8 weights.

What ``converter.optimizations = [DEFAULT]`` without a representative dataset produces:
weights int8 (per-tensor or per-channel, zero points 0), activations float32. Each row of
activations (one batch of a FULLY_CONNECTED, LSTM or SVDF input; the whole image of a
convolution) is quantized on the fly to int8, symmetrically (scale max|x| / 127) or, with
``asymmetric_quantize_inputs``, over [min(x, 0), max(x, 0)] with a nudged zero point
(``BatchQuantizeFloats``); the int32 products are then scaled back to float by the row's
scale times the weights' scale(s) and added to the float bias. Every float operation
follows LiteRT's reference kernels in float32 (or double where they use double), so the
results are LiteRT's to the last bit but for the order of float sums.
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import TypedFact
from .common import scales_of
from .fixedpoint import round_half_away


def is_hybrid(x: TypedFact, weights: TypedFact) -> bool:
    """A float activation against int8 quantized weights: LiteRT's hybrid kernels."""
    return x.dtype == DatumType.F32 and weights.dtype == DatumType.I8 and weights.qparams is not None


def check_hybrid_weights(weights: TypedFact, what: str = "weights", units_axis: int = 0) -> np.ndarray:
    """The weights' scales (one, or one per output unit along ``units_axis``); an
    AnalysisError unless they are symmetric int8."""
    q = weights.qparams
    if weights.dtype != DatumType.I8 or q is None:
        raise AnalysisError(f"hybrid {what} must be quantized int8, got {weights}")
    if any(int(z) != 0 for z in q.zero_point):
        raise AnalysisError(f"hybrid {what} must be symmetric (zero point 0), got {weights}")
    scales = scales_of(q)
    if scales.size > 1 and (q.axis is None or q.axis % weights.rank != units_axis % weights.rank):
        raise AnalysisError(f"hybrid {what} must be quantized per output unit (axis {units_axis}), got {weights}")
    return scales


def quantize_rows(rows: np.ndarray, asymmetric: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row of float32 ``rows`` to int8 as LiteRT's BatchQuantizeFloats: the int8 values,
    each row's scale (float32) and zero point (int32, 0 when symmetric)."""
    rows = np.asarray(rows, dtype=np.float32)
    count = rows.shape[0]
    low = rows.min(axis=1, initial=np.float32(np.inf)) if rows.size else np.zeros(count, np.float32)
    high = rows.max(axis=1, initial=np.float32(-np.inf)) if rows.size else np.zeros(count, np.float32)
    if not asymmetric:
        span = np.maximum(np.abs(low), np.abs(high)).astype(np.float32)
        empty = span == 0
        safe = np.where(empty, np.float32(1), span)
        factors = np.where(empty, np.float32(1), safe / np.float32(127)).astype(np.float32)
        inverse = (np.float32(127) / safe).astype(np.float32)
        scaled = rows * inverse[:, None]
        values = np.clip(round_half_away(scaled.astype(np.float64)), -127, 127)
        values[empty] = 0
        return values.astype(np.int8), factors, np.zeros(count, np.int32)
    rmin = np.minimum(np.float32(0), low).astype(np.float64)
    rmax = np.maximum(np.float32(0), high).astype(np.float64)
    empty = rmin == rmax
    scale = np.where(empty, 1.0, (rmax - rmin) / 255.0)
    from_min, from_max = -128.0 - rmin / scale, 127.0 - rmax / scale
    use_min = (128.0 + np.abs(rmin / scale)) < (127.0 + np.abs(rmax / scale))
    zero = np.where(use_min, from_min, from_max)
    offsets = np.where(zero <= -128.0, -128, np.where(zero >= 127.0, 127, round_half_away(zero))).astype(np.int32)
    offsets[empty] = 0
    factors = np.where(empty, 1.0, scale).astype(np.float32)
    inverse = (np.float32(1) / factors).astype(np.float32)
    shifted = offsets.astype(np.float32)[:, None] + rows * inverse[:, None]
    values = np.clip(round_half_away(shifted.astype(np.float64)), -128, 127)
    values[empty] = 0
    return values.astype(np.int8), factors, offsets


def integer_products(values: np.ndarray, weights_t: np.ndarray) -> np.ndarray:
    """``values @ weights_t`` of int8 operands (weights_t: (depth, units) float), exact, as int64."""
    depth = values.shape[1]
    work = np.float32 if 128 * 128 * depth < (1 << 24) else np.float64
    return np.matmul(values.astype(work), weights_t.astype(work, copy=False)).astype(np.int64)


class HybridDense:
    """A hybrid product by constant int8 weights (units, depth): LiteRT's EvalHybridDense.

    ``scales``: the weights' scale (one value) or per-unit scales (each product is scaled
    by the row's factor times its unit's scale).
    """

    def __init__(self, weights: np.ndarray, scales: np.ndarray, bias, asymmetric: bool):
        self.units, self.depth = weights.shape
        self.weights = np.ascontiguousarray(weights, dtype=np.int8)
        self.weights_t = np.ascontiguousarray(weights.T.astype(np.float32))
        self.row_sums = weights.astype(np.int64).sum(axis=1)
        self.scales = np.asarray(scales, dtype=np.float32).reshape(-1)
        self.per_channel = self.scales.size > 1
        self.bias = None if bias is None else np.asarray(bias, dtype=np.float32).reshape(-1)
        self.asymmetric = asymmetric

    def row_scales(self, factors: np.ndarray) -> np.ndarray:
        """Per (row, unit) scales of the integer products (float32)."""
        if not self.per_channel:
            return (factors * self.scales[0]).astype(np.float32)[:, None]
        return (factors[:, None] * self.scales[None, :]).astype(np.float32)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        values, factors, offsets = quantize_rows(rows, self.asymmetric)
        dots = integer_products(values, self.weights_t)
        if self.asymmetric:
            dots -= offsets.astype(np.int64)[:, None] * self.row_sums[None, :]
        out = dots.astype(np.float32) * self.row_scales(factors)
        return ((self.bias if self.bias is not None else np.float32(0)) + out).astype(np.float32, copy=False)


class HybridConv:
    """LiteRT's hybrid CONV_2D and DEPTHWISE_CONV_2D over NHWC float input: the hook a core
    convolution calls for a float input and int8 weights.

    Per channel (``HybridConvPerChannel``, ``DepthwiseConvHybridPerChannel``): each batch's
    whole image is quantized asymmetrically; the int32 sums skip padded positions (the
    quantized zero point stands for them); each output channel's sum is scaled back by its
    weights' scale and the image's factor, then given the float bias. Per tensor
    (``asymmetric`` False, LiteRT's ``HybridConv``): each image is quantized symmetrically and
    its factor multiplied by the weights' one scale before scaling the sums.
    ``weights``: (out channels, kernel h, kernel w, in channels per group), int8, with
    ``scales`` one per out channel (or one); ``groups`` splits the input channels
    (depthwise: ``groups`` = channels, ``depthwise`` True, as LiteRT's separate kernel
    multiplies the two scales first).
    """

    def __init__(self, weights: np.ndarray, scales: np.ndarray, bias, groups: int = 1, depthwise: bool = False,
                 asymmetric: bool = True):
        self.weights = np.asarray(weights, dtype=np.int8)
        out_channels = self.weights.shape[0]
        self.scales = np.broadcast_to(np.asarray(scales, np.float32).reshape(-1), (out_channels,)).astype(np.float32)
        self.bias = None if bias is None else np.asarray(bias, np.float32).reshape(-1)
        self.groups = groups
        self.depthwise = depthwise
        self.asymmetric = asymmetric

    @property
    def scales_first(self) -> bool:
        """Whether the image's factor and the weights' scale are multiplied before the sums are."""
        return self.depthwise or not self.asymmetric

    def __call__(self, x: np.ndarray, strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0)) -> np.ndarray:
        """``x`` (N, H, W, C) float32; ``pads``: (top, left, bottom, right). The output before
        the fused activation, (N, OH, OW, out channels) float32."""
        batch = x.shape[0]
        values, factors, offsets = quantize_rows(x.reshape(batch, -1), asymmetric=self.asymmetric)
        centred = values.reshape(x.shape).astype(np.float64) - offsets.reshape(-1, 1, 1, 1)
        top, left, bottom, right = pads
        centred = np.pad(centred, ((0, 0), (top, bottom), (left, right), (0, 0)))
        out_c, kh, kw, per_group = self.weights.shape
        sh, sw = strides
        dh, dw = dilations
        oh = (centred.shape[1] - (kh - 1) * dh - 1) // sh + 1
        ow = (centred.shape[2] - (kw - 1) * dw - 1) // sw + 1
        per_out = out_c // self.groups
        acc = np.zeros((batch, oh, ow, out_c), np.float64)
        for group in range(self.groups):
            channels = centred[..., group * per_group:(group + 1) * per_group]
            weights = self.weights[group * per_out:(group + 1) * per_out].astype(np.float64)
            for i in range(kh):
                for j in range(kw):
                    window = channels[:, i * dh:i * dh + (oh - 1) * sh + 1:sh, j * dw:j * dw + (ow - 1) * sw + 1:sw]
                    acc[..., group * per_out:(group + 1) * per_out] += window @ weights[:, i, j, :].T
        sums = acc.astype(np.int64).astype(np.float32)
        factors = factors.reshape(-1, 1, 1, 1)
        if self.scales_first:
            out = sums * (self.scales * factors).astype(np.float32)
        else:
            out = (sums * self.scales).astype(np.float32) * factors
        if self.bias is not None:
            out = out + self.bias
        return out.astype(np.float32)


def hybrid_conv(weights_ohwi: np.ndarray, weights: TypedFact, bias: TypedFact | None, groups: int, depthwise: bool,
                dilations: tuple, units_axis: int = 0) -> HybridConv:
    """The recipe of a core NHWC convolution of a float input by constant int8 ``weights``
    (their values brought to (out channels, KH, KW, in channels per group) as
    ``weights_ohwi``; ``units_axis`` the output channels' axis in ``weights``), as LiteRT
    runs it: per channel when the weights' scales differ from each other (and always for a
    depthwise one), else per tensor. An AnalysisError for what LiteRT's hybrid kernels do not
    compute: zero points, grouped convolutions, per-tensor depthwise weights (LiteRT reads
    past their one scale), dilated CONV_2D (LiteRT's hybrid CONV_2D ignores its dilations), a
    non-constant or non-float bias."""
    out_channels = weights_ohwi.shape[0]
    scales = check_hybrid_weights(weights, "convolution weights", units_axis)
    if depthwise and scales.size != out_channels:
        raise AnalysisError(f"a hybrid depthwise convolution needs one weight scale per output channel "
                            f"({out_channels}), got {weights}: LiteRT's kernel reads one per channel")
    if not depthwise and groups != 1:
        raise AnalysisError(f"a hybrid convolution cannot have groups ({groups}): LiteRT's has none")
    if not depthwise and any(d != 1 for d in dilations):
        raise AnalysisError(f"a hybrid CONV_2D with dilations {tuple(dilations)}: LiteRT's hybrid kernels ignore "
                            "dilations, so their result is not the dilated convolution's")
    if bias is not None and (bias.konst is None or bias.dtype != DatumType.F32 or bias.volume != out_channels):
        raise AnalysisError(f"a hybrid convolution needs a constant float32 bias per output channel, got {bias}")
    distinct = scales.size > 1 and bool(np.any(scales != scales[0]))
    return HybridConv(weights_ohwi, scales, None if bias is None else bias.konst, groups, depthwise,
                      asymmetric=depthwise or distinct)
