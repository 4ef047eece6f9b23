"""TRANSPOSE_CONV on NHWC tensors: float, int8 (per channel) and int16x8.

Each input pixel's products with the kernel (one matmul) are scattered into the output
(one strided add per kernel tap), offset by the SAME/VALID padding TFLite derives from
the output size; contributions falling outside the output are dropped, as in TFLite's
reference kernel. Quantized sums are exact (float64 BLAS), then requantized per output
channel like CONV_2D.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ...datum import DatumType
from ...dim import fresh_symbol
from ...errors import AnalysisError, RunError
from ..base import expect_inputs
from ..quantized.common import activation_range, zero_of
from ..quantized.fixedpoint import Requantizer, multiply_by_quantized_multiplier_64
from .common import TflOp, apply_float_activation, check_activation
from .conv import Window2D, conv_requantizer


def transpose_padding(out_size: int, in_size: int, kernel: int, stride: int, padding: str) -> int:
    """The padding TFLite derives for a transposed convolution (and a check of the sizes)."""
    if padding == "SAME":
        expected = (out_size + stride - 1) // stride
    else:
        expected = (out_size - kernel + stride) // stride
    if expected != in_size:
        raise AnalysisError(f"TRANSPOSE_CONV: an output of {out_size} with kernel {kernel}, stride {stride} and "
                            f"{padding} padding needs an input of {expected}, got {in_size}")
    return max((in_size - 1) * stride + kernel - out_size, 0) // 2


@dataclass(frozen=True)
class TransposeConv(TflOp):
    """TRANSPOSE_CONV: x (N,H,W,I), weights (O,KH,KW,I), optional bias (O); ``output_shape`` (N,OH,OW,O).

    With ``shape_input``, the output shape is not a constant but the last input (4 int32, as
    TFLite Micro's tests feed it): analysis knows the output's height and width only when that
    value is known, and each run checks the shape it is given against the input's."""

    output_shape: tuple = ()
    window: Window2D = Window2D()
    activation: str = "NONE"
    has_bias: bool = False
    shape_input: bool = False

    def _given_shape(self, inputs) -> tuple | None:
        if not self.shape_input:
            return tuple(self.output_shape)
        known = inputs[-1].known_value()
        return None if known is None else tuple(int(v) for v in np.asarray(known).reshape(-1))

    def output_facts(self, inputs):
        expect_inputs(inputs, (3 if self.has_bias else 2) + self.shape_input, self)
        check_activation(self.activation)
        self.window.check()
        x, w = inputs[0], inputs[1]
        shape = self._given_shape(inputs)
        if shape is None:
            return self._run_time_shape_facts(inputs)
        if x.rank != 4 or w.rank != 4 or len(shape) != 4:
            raise AnalysisError(f"TRANSPOSE_CONV needs 4-d input, weights and output shape, got {x}, {w}, "
                                f"{list(shape)}")
        batch, out_h, out_w, channels = shape
        if w.shape[3] != x.shape[3] or w.shape[0] != channels or batch != x.shape[0]:
            raise AnalysisError(f"TRANSPOSE_CONV weights {w} do not fit input {x} and output {list(shape)}")
        if self.window.dilation_h != 1 or self.window.dilation_w != 1:
            raise AnalysisError("TRANSPOSE_CONV has no dilations")
        transpose_padding(out_h, x.shape[1], w.shape[1], self.window.stride_h, self.window.padding)
        transpose_padding(out_w, x.shape[2], w.shape[2], self.window.stride_w, self.window.padding)
        if self.has_bias and inputs[2].volume != channels:
            raise AnalysisError(f"bias {inputs[2]} should hold {channels} values")
        if x.dtype.is_float:
            if w.dtype != x.dtype:
                raise AnalysisError(f"float input with {w.dtype} weights (hybrid kernels) is not supported")
        elif x.dtype not in (DatumType.I8, DatumType.I16) or w.dtype != DatumType.I8 or \
                None in (self.iq(0), self.iq(1), self.oq(0)):
            raise AnalysisError(f"TRANSPOSE_CONV supports float, int8 and int16 inputs with quantized int8 weights, "
                                f"got {x} and {w}")
        return [self.fact(0, x.dtype, shape)]

    def _run_time_shape_facts(self, inputs):
        x, w, shape = inputs[0], inputs[1], inputs[-1]
        if x.rank != 4 or w.rank != 4 or shape.rank != 1 or shape.shape[0] != 4:
            raise AnalysisError(f"TRANSPOSE_CONV needs 4-d input and weights and an output shape of 4 values, got "
                                f"{x}, {w} and {shape}")
        if w.shape[3] != x.shape[3]:
            raise AnalysisError(f"TRANSPOSE_CONV weights {w} do not fit input {x}")
        if self.has_bias and inputs[2].volume != w.shape[0]:
            raise AnalysisError(f"bias {inputs[2]} should hold {w.shape[0]} values")
        if not x.dtype.is_float and (x.dtype not in (DatumType.I8, DatumType.I16) or w.dtype != DatumType.I8
                                     or None in (self.iq(0), self.iq(1), self.oq(0))):
            raise AnalysisError(f"TRANSPOSE_CONV supports float, int8 and int16 inputs with quantized int8 weights, "
                                f"got {x} and {w}")
        return [self.fact(0, x.dtype, (x.shape[0], fresh_symbol(), fresh_symbol(), w.shape[0]))]

    def _run_shape(self, inputs) -> tuple:
        if not self.shape_input:
            return tuple(self.output_shape)
        x, w = inputs[0], inputs[1]
        shape = tuple(int(v) for v in np.asarray(inputs[-1]).reshape(-1))
        if len(shape) != 4 or shape[0] != x.shape[0] or shape[3] != w.shape[0]:
            raise RunError(f"TRANSPOSE_CONV: the output shape {list(shape)} does not fit the input {list(x.shape)} "
                           f"and weights {list(w.shape)} (batch {x.shape[0]}, {w.shape[0]} channels)")
        try:
            transpose_padding(shape[1], x.shape[1], w.shape[1], self.window.stride_h, self.window.padding)
            transpose_padding(shape[2], x.shape[2], w.shape[2], self.window.stride_w, self.window.padding)
        except AnalysisError as error:
            raise RunError(str(error)) from None
        return shape

    def _scatter(self, x: np.ndarray, w: np.ndarray, work, shape: tuple) -> np.ndarray:
        n, height, width, depth = x.shape
        filters, kernel_h, kernel_w, _ = w.shape
        _, out_h, out_w, _ = shape
        stride_h, stride_w = self.window.stride_h, self.window.stride_w
        pad_top = transpose_padding(out_h, height, kernel_h, stride_h, self.window.padding)
        pad_left = transpose_padding(out_w, width, kernel_w, stride_w, self.window.padding)
        products = x.reshape(-1, depth).astype(work) @ w.reshape(-1, depth).T.astype(work)
        products = products.reshape(n, height, width, filters, kernel_h, kernel_w)
        canvas_h = max((height - 1) * stride_h + kernel_h, pad_top + out_h)
        canvas_w = max((width - 1) * stride_w + kernel_w, pad_left + out_w)
        canvas = np.zeros((n, canvas_h, canvas_w, filters), dtype=work)
        for kh in range(kernel_h):
            for kw in range(kernel_w):
                canvas[:, kh:kh + (height - 1) * stride_h + 1:stride_h,
                       kw:kw + (width - 1) * stride_w + 1:stride_w] += products[..., kh, kw]
        return canvas[:, pad_top:pad_top + out_h, pad_left:pad_left + out_w]

    def eval(self, inputs):
        x, w = inputs[0], inputs[1]
        shape = self._run_shape(inputs)
        bias = inputs[2].reshape(-1) if self.has_bias else None
        if x.dtype.kind == "f":
            out = np.ascontiguousarray(self._scatter(x, w, x.dtype, shape))
            if bias is not None:
                out += bias
            return [apply_float_activation(out, self.activation)]
        shifted = x.astype(np.int64) - zero_of(self.iq(0))
        acc = self._scatter(shifted, w, np.float64, shape).astype(np.int64)
        if bias is not None:
            acc += bias.astype(np.int64)
        dtype = DatumType.from_numpy(x.dtype)
        requant = self._requant
        if dtype == DatumType.I16 and (bias is None or bias.dtype == np.int64):
            scaled = multiply_by_quantized_multiplier_64(acc, requant.multipliers, requant.shifts)
        else:
            scaled = requant(acc)
        low, high = activation_range(self.activation, self.oq(0), dtype)
        return [np.clip(scaled + zero_of(self.oq(0)), low, high).astype(x.dtype)]

    @cached_property
    def _requant(self) -> Requantizer:
        return conv_requantizer(self.iq(0), self.iq(1), self.oq(0))

    def cost(self, inputs):
        x, w = inputs[0], inputs[1]
        return {"flops": 2 * x.volume * w.shape[0] * w.shape[1] * w.shape[2]}
