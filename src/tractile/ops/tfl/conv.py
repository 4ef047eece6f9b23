"""CONV_2D and DEPTHWISE_CONV_2D on NHWC tensors, float and per-channel quantized.

Convolutions are im2col (a strided view of the padded input) times the weights on BLAS;
1x1 stride-1 convolutions are plain matmuls; depthwise convolutions are per-tap
multiply-adds. Quantized inputs are padded with their zero point, so padded taps add
nothing, as in TFLite's kernels that skip them.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...datum import DatumType
from ...errors import AnalysisError
from ..base import expect_inputs
from .common import (TflOp, activation_range, apply_float_activation, check_activation, is_quantized,
                     same_padding, scale_of, scales_of, zero_of)
from .fixedpoint import Requantizer


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


def pad_hw(x: np.ndarray, rows, cols, value) -> np.ndarray:
    """Pad the H and W axes of an NHWC tensor (only the pads a window reaches)."""
    (_, top, bottom), (_, left, right) = rows, cols
    if not (top or bottom or left or right):
        return x
    n, h, w, c = x.shape
    out = np.full((n, h + top + bottom, w + left + right, c), value, dtype=x.dtype)
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


def conv_requantizer(input_q, weight_q, output_q) -> Requantizer:
    """Per-channel multipliers ``double(s_in) * double(s_w[c]) / double(s_out)`` (TFLite's conv prepare)."""
    scales = scales_of(weight_q).astype(np.float64)
    return Requantizer(np.float64(scale_of(input_q)) * scales / np.float64(scale_of(output_q)))


class _QuantizedConv:
    """Shared parts of the quantized convolutions: parameters and the output stage."""

    @cached_property
    def _quant(self):
        dtype = self.out_dtype(0, DatumType.I8)
        low, high = activation_range(self.activation, self.oq(0), dtype)
        return conv_requantizer(self.iq(0), self.iq(1), self.oq(0)), zero_of(self.iq(0)), zero_of(self.oq(0)), \
            low, high, dtype

    def _finish(self, acc: np.ndarray, bias) -> np.ndarray:
        requant, _, y_zero, low, high, dtype = self._quant
        if bias is not None:
            acc += bias.astype(np.int64)
        scaled = requant(acc)
        scaled += y_zero
        return np.clip(scaled, low, high).astype(dtype.np)


@dataclass(frozen=True)
class Conv2D(_QuantizedConv, TflOp):
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
        _check_types(self, x, w)
        return [self.fact(0, x.dtype, (x.shape[0], rows[0], cols[0], w.shape[0]))]

    def _weights(self, w: np.ndarray, work, x_zero: int):
        cache = self.__dict__.get("_weights_cache")
        if cache is not None and cache[0] is w and cache[1] == work:
            return cache[2]
        groups_w = w.reshape(w.shape[0], -1)
        prepared = (np.ascontiguousarray(groups_w.T.astype(work)), x_zero * groups_w.astype(np.int64).sum(axis=1))
        self.__dict__["_weights_cache"] = (w, work, prepared)
        return prepared

    def eval(self, inputs):
        x, w = inputs[0], inputs[1]
        bias = inputs[2].reshape(-1) if self.has_bias else None
        n, height, width, channels = x.shape
        filters, kernel_h, kernel_w, depth = w.shape
        rows, cols = self.window.geometry(height, width, kernel_h, kernel_w)
        quantized = x.dtype.kind != "f"
        x_zero = self._quant[1] if quantized else 0
        xp = pad_hw(x, rows, cols, x_zero)
        out_h, out_w = rows[0], cols[0]
        groups = channels // depth
        taps_count = kernel_h * kernel_w * depth
        if quantized:
            info = np.iinfo(x.dtype)
            bound = float(max(-info.min, info.max)) * 128.0 * taps_count
            work = np.float32 if bound < (1 << 24) else np.float64
        else:
            work = x.dtype
        kernel_t, correction = self._weights(w, work, x_zero)
        per_group = filters // groups
        out = np.empty((n * out_h * out_w, filters), dtype=work)
        for group in range(groups):
            part = xp[..., group * depth:(group + 1) * depth] if groups > 1 else xp
            if kernel_h == kernel_w == 1 and self.window.stride_h == self.window.stride_w == 1:
                cols_matrix = part.reshape(-1, depth)
            else:
                cols_matrix = patches(part, self.window, kernel_h, kernel_w, out_h, out_w).reshape(-1, taps_count)
            if cols_matrix.dtype != work:
                cols_matrix = cols_matrix.astype(work)
            target = slice(group * per_group, (group + 1) * per_group)
            np.matmul(cols_matrix, kernel_t[:, target], out=out[:, target]) if groups > 1 else \
                np.matmul(cols_matrix, kernel_t, out=out)
        out = out.reshape(n, out_h, out_w, filters)
        if not quantized:
            if bias is not None:
                out += bias
            return [apply_float_activation(out, self.activation)]
        acc = out.astype(np.int64)
        acc -= correction
        return [self._finish(acc, bias)]

    def cost(self, inputs):
        out = self.output_facts(inputs)[0]
        w = inputs[1]
        return {"flops": 2 * out.volume * w.shape[1] * w.shape[2] * w.shape[3]}


@dataclass(frozen=True)
class DepthwiseConv2D(_QuantizedConv, TflOp):
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
        _check_types(self, x, w)
        return [self.fact(0, x.dtype, (x.shape[0], rows[0], cols[0], out_channels))]

    def eval(self, inputs):
        x, w = inputs[0], inputs[1]
        bias = inputs[2].reshape(-1) if self.has_bias else None
        _, kernel_h, kernel_w, out_channels = w.shape
        rows, cols = self.window.geometry(x.shape[1], x.shape[2], kernel_h, kernel_w)
        quantized = x.dtype.kind != "f"
        multiplier = out_channels // x.shape[3]
        if quantized:
            x_zero = self._quant[1]
            xp = pad_hw(x, rows, cols, x_zero).astype(np.float32)
            xp -= x_zero
            weights = w.astype(np.float32)
        else:
            xp = pad_hw(x, rows, cols, 0)
            weights = w
        if multiplier > 1:
            xp = np.repeat(xp, multiplier, axis=3)
        out_h, out_w = rows[0], cols[0]
        acc = np.zeros((x.shape[0], out_h, out_w, out_channels), dtype=xp.dtype)
        scratch = np.empty_like(acc)
        for kh, kw, view in taps(xp, self.window, kernel_h, kernel_w, out_h, out_w):
            np.multiply(view, weights[0, kh, kw], out=scratch)
            acc += scratch
        if not quantized:
            if bias is not None:
                acc += bias
            return [apply_float_activation(acc, self.activation)]
        return [self._finish(acc.astype(np.int64), bias)]

    def cost(self, inputs):
        out = self.output_facts(inputs)[0]
        w = inputs[1]
        return {"flops": 2 * out.volume * w.shape[1] * w.shape[2]}


def _check_types(op: TflOp, x, w) -> None:
    if x.dtype.is_float:
        if w.dtype != x.dtype:
            raise AnalysisError(f"float input with {w.dtype} weights (hybrid kernels) is not supported")
        return
    if not is_quantized(x.dtype) or w.dtype not in (DatumType.I8, DatumType.U8):
        raise AnalysisError(f"unsupported input/weight types {x.dtype}/{w.dtype}")
    if op.iq(0) is None or op.iq(1) is None or op.oq(0) is None:
        raise AnalysisError(f"quantized {op.name} needs quantized input, weights and output")
    if x.dtype == DatumType.I16:
        raise AnalysisError("int16 activations are not supported by this convolution")
