"""CONV_2D and DEPTHWISE_CONV_2D on NHWC tensors: float, int8 (per channel), uint8, int16x8.

Quantized inputs are offset by their zero point while converted to the float work type
(so padded taps are exact zeros, as in TFLite's kernels that skip them), and the
weights are prepared once: offset by their zero point (uint8), transposed for the
matmul, in the work type. Integer products are summed on BLAS in float32 when every
partial sum provably stays below 2**24, else float64 (exact below 2**53). The int32
(or int64, for int16 activations with int64 biases) accumulators are then requantized
in place with TFLite's fixed-point multipliers: per channel from ``double(s_in) *
double(s_w) / double(s_out)`` (int8, int16), or per tensor from the float32 product
``s_in * s_w`` (uint8, as TFLite's legacy path computes it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...datum import DatumType
from ...errors import AnalysisError
from ..base import expect_inputs
from ..quantized.common import activation_range, scale_of, scales_of, zero_of
from ..quantized.fixedpoint import Requantizer, multiply_by_quantized_multiplier_64
from ..quantized.output import OutputStage
from .common import TflOp, apply_float_activation, check_activation, same_padding


@dataclass(frozen=True)
class Window2D:
    """TFLite window options: padding (SAME/VALID), strides and dilations (height, width)."""

    padding: str = "SAME"
    stride_h: int = 1
    stride_w: int = 1
    dilation_h: int = 1
    dilation_w: int = 1

    def check(self) -> None:
        if min(self.stride_h, self.stride_w, self.dilation_h, self.dilation_w) < 1:
            raise AnalysisError(f"strides and dilations must be positive, got {self}")

    def geometry(self, height, width, kernel_h: int, kernel_w: int):
        """((out_h, pad_top, pad_bottom), (out_w, pad_left, pad_right))."""
        if not isinstance(height, int) or not isinstance(width, int):
            raise AnalysisError("spatial dims must be known")
        return (same_padding(height, kernel_h, self.stride_h, self.dilation_h, self.padding),
                same_padding(width, kernel_w, self.stride_w, self.dilation_w, self.padding))


def pad_hw(x: np.ndarray, rows, cols, value, dtype=None) -> np.ndarray:
    """Pad the H and W axes of an NHWC tensor (only the pads a window reaches), converting to ``dtype``."""
    (_, top, bottom), (_, left, right) = rows, cols
    dtype = x.dtype if dtype is None else dtype
    if not (top or bottom or left or right):
        return x.astype(dtype, copy=False)
    n, h, w, c = x.shape
    out = np.full((n, h + top + bottom, w + left + right, c), value, dtype=dtype)
    out[:, top:top + h, left:left + w] = x
    return out


def patches(xp: np.ndarray, window: Window2D, kernel_h: int, kernel_w: int, out_h: int, out_w: int) -> np.ndarray:
    """A strided view (N, OH, OW, KH, KW, C) of a padded NHWC input (no copy)."""
    n, _, _, c = xp.shape
    s = xp.strides
    return as_strided(xp, shape=(n, out_h, out_w, kernel_h, kernel_w, c),
                      strides=(s[0], s[1] * window.stride_h, s[2] * window.stride_w, s[1] * window.dilation_h,
                               s[2] * window.dilation_w, s[3]), writeable=False)


def taps(xp: np.ndarray, window: Window2D, kernel_h: int, kernel_w: int, out_h: int, out_w: int):
    """Yield (kh, kw, view (N, OH, OW, C)) for every kernel tap."""
    for kh in range(kernel_h):
        top = kh * window.dilation_h
        for kw in range(kernel_w):
            left = kw * window.dilation_w
            yield kh, kw, xp[:, top:top + (out_h - 1) * window.stride_h + 1:window.stride_h,
                             left:left + (out_w - 1) * window.stride_w + 1:window.stride_w]


def depthwise_sums(xp: np.ndarray, weights: np.ndarray, window: Window2D, out_h: int, out_w: int,
                   tiled: dict | None = None) -> np.ndarray:
    """Per-channel window sums of a padded input (N,H,W,C) with weights (KH,KW,C).

    Small outputs take one contraction over a strided view. Large ones accumulate one
    multiply-add per kernel tap over whole output rows (W*C values, the weights tiled
    along W once and kept in ``tiled``); a width stride first splits the input in
    column phases so that every tap reads contiguous rows.
    """
    kernel_h, kernel_w, channels = weights.shape
    n = xp.shape[0]
    if out_h * out_w <= 256:
        view = patches(xp, window, kernel_h, kernel_w, out_h, out_w)
        return np.einsum("nhwijc,ijc->nhwc", view, weights)
    key = ("tiled", out_w)
    if tiled is None or key not in tiled:
        rows = np.ascontiguousarray(np.tile(weights, (1, 1, out_w)))
        if tiled is None:
            tiled = {}
        tiled[key] = rows
    rows = tiled[key]
    stride_h, stride_w = window.stride_h, window.stride_w
    phases = {}
    acc = scratch = None
    for kh in range(kernel_h):
        top = kh * window.dilation_h
        for kw in range(kernel_w):
            left = kw * window.dilation_w
            if stride_w == 1:
                source, column = xp, left
            else:
                phase = left % stride_w
                if phase not in phases:
                    phases[phase] = np.ascontiguousarray(xp[:, :, phase::stride_w])
                source, column = phases[phase], left // stride_w
            view = source[:, top:top + (out_h - 1) * stride_h + 1:stride_h, column:column + out_w]
            view = view.reshape(n, out_h, out_w * channels)
            if acc is None:
                acc = view * rows[kh, kw]
                scratch = np.empty_like(acc)
            else:
                np.multiply(view, rows[kh, kw], out=scratch)
                acc += scratch
    return acc.reshape(n, out_h, out_w, channels)


def conv_requantizer(input_q, weight_q, output_q) -> Requantizer:
    """Per-channel multipliers ``double(s_in) * double(s_w[c]) / double(s_out)`` (TFLite's conv prepare)."""
    scales = scales_of(weight_q).astype(np.float64)
    return Requantizer(np.float64(scale_of(input_q)) * scales / np.float64(scale_of(output_q)))


def legacy_requantizer(input_q, weight_q, output_q) -> Requantizer:
    """The uint8 multiplier: the float32 product ``s_in * s_w`` over ``double(s_out)``."""
    product = np.float32(np.float32(scale_of(input_q)) * np.float32(scale_of(weight_q)))
    return Requantizer([np.float64(product) / np.float64(scale_of(output_q))])


class QuantizedStage:
    """What a quantized convolution needs besides its weights: the input zero point, the
    work type of its exact sums, and the output stage (bias with the input zero-point
    correction folded in, requantization, clamp).

    ``weight_sums`` are the per-filter sums of the offset weights: the convolution runs on
    the raw input (padded with its zero point) and ``x_zero * weight_sums`` comes off the bias.
    """

    def __init__(self, op, dtype: DatumType, weights: np.ndarray, bias: np.ndarray | None, weight_sums: np.ndarray,
                 taps_count: int):
        in_q, w_q, out_q = op.iq(0), op.iq(1), op.oq(0)
        self.x_zero = zero_of(in_q)
        self.w_zero = zero_of(w_q) if len(w_q.scale) == 1 else 0
        low, high = activation_range(op.activation, out_q, dtype)
        uint8 = dtype == DatumType.U8
        requant = legacy_requantizer(in_q, w_q, out_q) if uint8 else conv_requantizer(in_q, w_q, out_q)
        in_bound = {DatumType.I16: 32768, DatumType.U8: 255}.get(dtype, 128)
        w_bound = float(np.abs(weights.astype(np.int64) - self.w_zero).max(initial=0))
        self.work = np.float32 if in_bound * w_bound * taps_count < (1 << 24) else np.float64
        total_bias = np.zeros(len(weight_sums), np.int64) if bias is None else bias.reshape(-1).astype(np.int64)
        total_bias = total_bias - self.x_zero * weight_sums
        self.wide = dtype == DatumType.I16 and (bias is None or bias.dtype == np.int64)
        if self.wide:
            self.requant, self.bias, self.zero, self.low, self.high = requant, total_bias, zero_of(out_q), low, high
        self.dtype = dtype.np
        self.output = OutputStage(requant, total_bias, zero_of(out_q), low, high, dtype.np, len(weight_sums),
                                  acc_bound=in_bound * w_bound * taps_count)

    def finish(self, acc: np.ndarray) -> np.ndarray:
        """Float-held exact sums (N, H, W, filters) to the output integers."""
        if not self.wide:
            n, height, width, filters = acc.shape
            return self.output(acc.reshape(n * height, width * filters), width).reshape(acc.shape)
        total = acc.astype(np.int64) + self.bias
        total = multiply_by_quantized_multiplier_64(total, self.requant.multipliers, self.requant.shifts)
        return np.clip(total + self.zero, self.low, self.high).astype(self.dtype)

    def padded_input(self, x: np.ndarray, rows, cols) -> np.ndarray:
        """The raw input in the work type, padded with its zero point."""
        return pad_hw(x, rows, cols, self.x_zero, self.work)


class _Convolution(TflOp):
    """Shared checks and preparation of CONV_2D and DEPTHWISE_CONV_2D."""

    def _check_types(self, x, w) -> None:
        if x.dtype.is_float:
            if w.dtype != x.dtype:
                raise AnalysisError(f"float input with {w.dtype} weights (hybrid kernels) is not supported")
            return
        if x.dtype not in (DatumType.I8, DatumType.U8, DatumType.I16):
            raise AnalysisError(f"unsupported input type {x.dtype}")
        expected = DatumType.U8 if x.dtype == DatumType.U8 else DatumType.I8
        if w.dtype != expected:
            raise AnalysisError(f"{x.dtype} inputs need {expected} weights, got {w.dtype}")
        if self.iq(0) is None or self.iq(1) is None or self.oq(0) is None:
            raise AnalysisError(f"quantized {self.name} needs quantized input, weights and output")
        if x.dtype == DatumType.U8 and len(self.iq(1).scale) > 1:
            raise AnalysisError("uint8 convolutions are quantized per tensor")
        if x.dtype == DatumType.I16 and (zero_of(self.iq(0)) or zero_of(self.oq(0))):
            raise AnalysisError("int16 convolutions need zero points 0")

    def _cached(self, key, w: np.ndarray, bias, build):
        """Weights prepared once per (weight array, bias array) pair."""
        cache = self.__dict__.get("_prepared")
        if cache is not None and cache[0] is w and cache[1] is bias and cache[2] == key:
            return cache[3]
        prepared = build()
        self.__dict__["_prepared"] = (w, bias, key, prepared)
        return prepared


@dataclass(frozen=True)
class Conv2D(_Convolution):
    """CONV_2D: x (N,H,W,C), weights (O,KH,KW,C/groups), optional bias (O)."""

    window: Window2D = Window2D()
    activation: str = "NONE"
    has_bias: bool = True

    def output_facts(self, inputs):
        expect_inputs(inputs, 3 if self.has_bias else 2, self)
        check_activation(self.activation)
        self.window.check()
        self.check_quantization(inputs)
        x, w = inputs[0], inputs[1]
        if x.rank != 4 or w.rank != 4:
            raise AnalysisError(f"CONV_2D needs 4-d input and weights, got {x} and {w}")
        channels = x.shape[3]
        if isinstance(channels, int) and (w.shape[3] == 0 or channels % w.shape[3]):
            raise AnalysisError(f"input has {channels} channels, not a multiple of the weights' {w.shape[3]}")
        groups = channels // w.shape[3] if isinstance(channels, int) else 1
        if w.shape[0] % groups:
            raise AnalysisError(f"{w.shape[0]} filters cannot be split in {groups} groups")
        if self.has_bias and inputs[2].volume != w.shape[0]:
            raise AnalysisError(f"bias {inputs[2]} should hold {w.shape[0]} values")
        rows, cols = self.window.geometry(x.shape[1], x.shape[2], w.shape[1], w.shape[2])
        self._check_types(x, w)
        return [self.fact(0, x.dtype, (x.shape[0], rows[0], cols[0], w.shape[0]))]

    def _prepare(self, x: np.ndarray, w: np.ndarray, bias):
        def build():
            flat = w.reshape(w.shape[0], -1)
            if x.dtype.kind == "f":
                return None, np.ascontiguousarray(flat.T), x.dtype
            zero = zero_of(self.iq(1)) if len(self.iq(1).scale) == 1 else 0
            offset = flat.astype(np.int64) - zero
            stage = QuantizedStage(self, DatumType.from_numpy(x.dtype), w, bias, offset.sum(axis=1), flat.shape[1])
            return stage, np.ascontiguousarray(offset.T.astype(stage.work)), stage.work
        return self._cached(x.dtype, w, bias, build)

    def eval(self, inputs):
        x, w = inputs[0], inputs[1]
        bias = inputs[2] if self.has_bias else None
        stage, kernel, work = self._prepare(x, w, bias)
        n, height, width, channels = x.shape
        filters, kernel_h, kernel_w, depth = w.shape
        rows, cols = self.window.geometry(height, width, kernel_h, kernel_w)
        out_h, out_w = rows[0], cols[0]
        xp = pad_hw(x, rows, cols, 0) if stage is None else stage.padded_input(x, rows, cols)
        groups = channels // depth
        taps_count = kernel_h * kernel_w * depth
        pointwise = kernel_h == kernel_w == 1 and self.window.stride_h == self.window.stride_w == 1
        if groups == 1:
            matrix = xp.reshape(-1, depth) if pointwise else \
                patches(xp, self.window, kernel_h, kernel_w, out_h, out_w).reshape(-1, taps_count)
            out = matrix @ kernel
        else:
            out = np.empty((n * out_h * out_w, filters), dtype=work)
            per_group = filters // groups
            for group in range(groups):
                part = xp[..., group * depth:(group + 1) * depth]
                matrix = part.reshape(-1, depth) if pointwise else \
                    patches(part, self.window, kernel_h, kernel_w, out_h, out_w).reshape(-1, taps_count)
                target = slice(group * per_group, (group + 1) * per_group)
                np.matmul(matrix, kernel[:, target], out=out[:, target])
        out = out.reshape(n, out_h, out_w, filters)
        if stage is None:
            if bias is not None:
                out += bias.reshape(-1)
            return [apply_float_activation(out, self.activation)]
        return [stage.finish(out)]

    def cost(self, inputs):
        out = self.output_facts(inputs)[0]
        w = inputs[1]
        return {"flops": 2 * out.volume * w.shape[1] * w.shape[2] * w.shape[3]}


@dataclass(frozen=True)
class DepthwiseConv2D(_Convolution):
    """DEPTHWISE_CONV_2D: x (N,H,W,C), weights (1,KH,KW,C*M), optional bias (C*M)."""

    window: Window2D = Window2D()
    depth_multiplier: int = 1
    activation: str = "NONE"
    has_bias: bool = True

    def output_facts(self, inputs):
        expect_inputs(inputs, 3 if self.has_bias else 2, self)
        check_activation(self.activation)
        self.window.check()
        self.check_quantization(inputs)
        x, w = inputs[0], inputs[1]
        if x.rank != 4 or w.rank != 4 or w.shape[0] != 1:
            raise AnalysisError(f"DEPTHWISE_CONV_2D needs 4-d input and (1,KH,KW,C*M) weights, got {x} and {w}")
        out_channels = w.shape[3]
        channels = x.shape[3]
        if isinstance(channels, int) and (channels == 0 or out_channels % channels):
            raise AnalysisError(f"weights have {out_channels} channels, not a multiple of the input's {channels}")
        if self.has_bias and inputs[2].volume != out_channels:
            raise AnalysisError(f"bias {inputs[2]} should hold {out_channels} values")
        rows, cols = self.window.geometry(x.shape[1], x.shape[2], w.shape[1], w.shape[2])
        self._check_types(x, w)
        return [self.fact(0, x.dtype, (x.shape[0], rows[0], cols[0], out_channels))]

    def _prepare(self, x: np.ndarray, w: np.ndarray, bias):
        def build():
            if x.dtype.kind == "f":
                return None, w[0], x.dtype, {}
            zero = zero_of(self.iq(1)) if len(self.iq(1).scale) == 1 else 0
            offset = w[0].astype(np.int64) - zero
            stage = QuantizedStage(self, DatumType.from_numpy(x.dtype), w, bias, offset.sum(axis=(0, 1)),
                                   w.shape[1] * w.shape[2])
            return stage, offset.astype(stage.work), stage.work, {}
        return self._cached(x.dtype, w, bias, build)

    def eval(self, inputs):
        x, w = inputs[0], inputs[1]
        bias = inputs[2] if self.has_bias else None
        stage, weights, work, tiled = self._prepare(x, w, bias)
        _, kernel_h, kernel_w, out_channels = w.shape
        rows, cols = self.window.geometry(x.shape[1], x.shape[2], kernel_h, kernel_w)
        out_h, out_w = rows[0], cols[0]
        xp = pad_hw(x, rows, cols, 0) if stage is None else stage.padded_input(x, rows, cols)
        channels = x.shape[3]
        if channels == 1:
            matrix = patches(xp, self.window, kernel_h, kernel_w, out_h, out_w).reshape(-1, kernel_h * kernel_w)
            acc = (matrix @ weights.reshape(-1, out_channels)).reshape(x.shape[0], out_h, out_w, out_channels)
        else:
            if out_channels != channels:
                xp = np.repeat(xp, out_channels // channels, axis=3)
            acc = depthwise_sums(xp, weights, self.window, out_h, out_w, tiled)
        if stage is None:
            if bias is not None:
                acc += bias.reshape(-1)
            return [apply_float_activation(acc, self.activation)]
        return [stage.finish(acc)]

    def cost(self, inputs):
        out = self.output_facts(inputs)[0]
        w = inputs[1]
        return {"flops": 2 * out.volume * w.shape[1] * w.shape[2]}
