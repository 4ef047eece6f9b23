"""Convolution over N,C,spatial... tensors: im2col + BLAS, 1x1 as matmul, depthwise per tap
(conv_depthwise); over N,H,W,C tensors, float or quantized, in conv_nhwc."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..errors import AnalysisError
from ..fact import QParams, TypedFact
from .activations import Activation
from .base import Op, expect_inputs
from .conv_depthwise import DepthwisePlan, depthwise, plan_depthwise
from .conv_nhwc import DATA_FORMATS, Prepared, convolve_nhwc, is_depthwise, kernel_dims, nhwc_facts, to_ohwi
from .quantized.common import cached_recipe, recipe_of, with_recipe
from .quantized.conv import conv_quant
from .quantized.hybrid import HybridConv, hybrid_conv, is_hybrid
from .window import Window, pad_spatial, taps, window_view


@dataclass(frozen=True)
class Conv(Op):
    """Convolution: inputs X (N,C,...), W (M,C/group,...), optional bias B (M), as ONNX's.

    ``window.kernel`` may be empty: it is then read from W's shape. ``activation``
    is an activation fused by the optimizer, applied in place on the output.

    ``data_format`` "NHWC" takes X as (N,H,W,C) and gives (N,OH,OW,M), with W as
    ``kernel_format`` says: "OHWI" (TFLite's CONV_2D), "HWIO" (TFLite's depthwise weights
    [KH,KW,1,C*M] with ``group`` C) or "OIHW". ``quant``: the output's quantization; set, X
    and W are quantized tensors (their facts' qparams), the bias int32 or int64, and the
    convolution follows TFLite's integer recipe (``ops.quantized.conv``), a fused activation
    being a Clip in the output's integers (NHWC only); ``flavour="onnxruntime"``: onnxruntime's
    (int8 or uint8, float32 requantization, ``ops.quantized.onnxruntime``). A float NHWC X
    by constant int8 quantized W with ``quant`` None is LiteRT's hybrid convolution
    (``ops.quantized.hybrid.HybridConv``: images quantized on the fly).
    """

    weight_inputs = (1, 2)

    window: Window
    group: int = 1
    activation: Activation | None = None
    data_format: str = "NCHW"
    kernel_format: str = "OIHW"
    quant: QParams | None = None
    flavour: str = "reference"

    def _window(self, kernel_shape) -> Window:
        return self.window.for_kernel(kernel_shape)

    def _geometry(self, x_shape: tuple, w_shape: tuple):
        """(window, begin pads or None, end pads, output spatial dims, bias shape) for these
        shapes, computed once per shape pair: small, frequent calls (streaming) pay little."""
        cache = self.__dict__.get("_geometries")
        if cache is None:
            cache = self.__dict__["_geometries"] = {}
        key = (x_shape, w_shape)
        found = cache.get(key)
        if found is None:
            window = self._window(w_shape[2:])
            begins, ends, out = window.concrete_pads(x_shape[2:])
            padded = any(begins) or any(ends)
            found = (window, begins if padded else None, ends, out, (-1,) + (1,) * len(out))
            if len(cache) > 64:
                cache.clear()
            cache[key] = found
        return found

    def _recipe(self, inputs: list[TypedFact]):
        return cached_recipe(self, inputs, lambda: conv_quant(
            "Conv", inputs[0], inputs[1], inputs[2] if len(inputs) > 2 else None, self.quant, self.activation,
            flavour=self.flavour))

    def prepared(self, inputs):
        if self.quant is None:
            return with_recipe(self, self._hybrid(inputs)) if self.is_hybrid(inputs) else self
        return with_recipe(self, self._recipe(inputs))

    def is_hybrid(self, inputs: list[TypedFact]) -> bool:
        """A float NHWC input by int8 quantized weights: LiteRT's hybrid convolution (each image
        quantized whole: it is not computed by rows nor streamed)."""
        return self.quant is None and self.data_format == "NHWC" and is_hybrid(inputs[0], inputs[1])

    def _hybrid(self, inputs: list[TypedFact]) -> HybridConv:
        w = inputs[1]
        if w.konst is None:
            raise AnalysisError(f"a hybrid convolution needs constant int8 weights, got {w}")
        depthwise = is_depthwise(self, inputs[0].shape[3], w.shape)
        return cached_recipe(self, inputs, lambda: hybrid_conv(
            to_ohwi(w.konst, self.kernel_format), w, inputs[2] if len(inputs) > 2 else None, self.group, depthwise,
            self.window.dilations or (1, 1), 3 if self.kernel_format == "HWIO" else 0))

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 3), self)
        if self.data_format not in DATA_FORMATS:
            raise AnalysisError(f"data_format must be one of {', '.join(DATA_FORMATS)}, got {self.data_format!r}")
        if self.group < 1:
            raise AnalysisError(f"group must be >= 1, got {self.group}")
        if self.data_format == "NHWC":
            fact = nhwc_facts(self, inputs)
            if self.quant is not None:
                self._recipe(inputs)
            elif self.is_hybrid(inputs):
                self._hybrid(inputs)
            return [fact]
        if self.kernel_format != "OIHW" or self.quant is not None:
            raise AnalysisError("an NCHW Conv takes OIHW kernels and no quantization (NHWC does)")
        x, w = inputs[0], inputs[1]
        if x.rank < 3 or w.rank != x.rank:
            raise AnalysisError(f"Conv needs input and kernel of the same rank >= 3, got input {x} and kernel {w}")
        if x.dtype != w.dtype:
            raise AnalysisError(f"input is {x.dtype} but the kernel is {w.dtype}")
        if x.shape[1] != w.shape[1] * self.group:
            raise AnalysisError(f"input 0 has {x.shape[1]} channels, the kernel expects {w.shape[1] * self.group} "
                                f"(input {x}; kernel {w})")
        if isinstance(w.shape[0], int) and w.shape[0] % self.group:
            raise AnalysisError(f"{w.shape[0]} output channels cannot be split in {self.group} groups")
        if len(inputs) == 3 and inputs[2].shape != (w.shape[0],):
            raise AnalysisError(f"bias should have shape ({w.shape[0]},), got {inputs[2]}")
        window = self._window(w.shape[2:]) if all(isinstance(k, int) for k in w.shape[2:]) else None
        if window is None:
            raise AnalysisError(f"kernel spatial dims must be known, got {w}")
        spatial = window.output_dims(x.shape[2:])
        return [TypedFact(x.dtype, (x.shape[0], w.shape[0], *spatial))]

    def rules(self, s, inputs, outputs):
        x, w, y = inputs[0], inputs[1], outputs[0]
        if self.data_format == "NHWC":
            s.equals(x.datum_type, y.datum_type)
            s.equals_all(x.rank, w.rank, y.rank, 4)
            s.equals(y.shape[0], x.shape[0])
            return
        s.equals_all(x.datum_type, w.datum_type, y.datum_type)
        s.equals_all(x.rank, w.rank, y.rank)
        s.equals(y.shape[0], x.shape[0])
        s.equals(y.shape[1], w.shape[0])
        s.equals(x.shape[1], self.group * w.shape[1], why="input 0 has {} channels, the kernel expects {}")
        if len(inputs) == 3:
            s.equals(inputs[2].rank, 1)
            s.equals(inputs[2].shape[0], w.shape[0], why="the kernel has {} output channels, the bias {}")

    def eval(self, inputs):
        x, w = inputs[0], inputs[1]
        bias = inputs[2] if len(inputs) > 2 else None
        if self.data_format == "NHWC":
            if w.dtype == np.int8 and x.dtype.kind == "f" and self.quant is None:
                return [self._run_hybrid(x, w)]
            return [convolve_nhwc(self, x, w, bias, self._prepared_weights(x, w, bias))]
        if x.dtype.kind == "f" and x.dtype.itemsize < 4 or x.dtype.kind == "V":
            # half-precision sums drift: accumulate in f32, round once
            return [y.astype(x.dtype) for y in self.eval([t.astype(np.float32) for t in inputs])]
        window, begins, ends, out, bias_shape = self._geometry(x.shape, w.shape)
        if (self.group == x.shape[1] and w.shape[1] == 1 and (self.group > 1 or w.shape[0] == 1)
                and x.dtype.kind == "f" and x.ndim in (3, 4)
                and (begins is None or min(begins) >= 0)):
            if self.group != w.shape[0]:  # a channel multiplier: each input channel feeds several outputs
                x = np.repeat(x, w.shape[0] // self.group, axis=1)
            return [depthwise(x, w, bias, self._depthwise_plan(x.shape, w.shape), self.activation)]
        if (begins is None and self.group == 1 and x.ndim == 3 and x.shape[0] == 1 and out[0] <= 16
                and x.dtype == np.float32 and window.strides[0] == 1):
            return [self._few_frames(x, w, bias, window.dilations[0], out[0])]
        if (self.group == 1 and x.ndim == 3 and x.shape[0] == 1 and x.dtype == np.float32 and w.shape[2] > 1
                and window.strides[0] == 1 and (begins is None or begins[0] >= 0)):
            return [self._taps_1d(x, w, bias, 0 if begins is None else begins[0], window.dilations[0], out[0])]
        xp = pad_spatial(x, begins, ends, 0) if begins is not None else x
        y = convolve(xp, w, window, out, self.group)
        if bias is not None:
            y += bias.reshape(bias_shape).astype(y.dtype, copy=False)
        if self.activation is not None:
            y = self.activation.apply_inplace(y)
        return [y]

    def _run_hybrid(self, x: np.ndarray, w: np.ndarray) -> np.ndarray:
        recipe: HybridConv = recipe_of(self)
        window = self.window.for_kernel(kernel_dims(w.shape, self.kernel_format)[2:])
        begins, ends, _ = window.concrete_pads(tuple(x.shape[1:3]))
        y = recipe(x, window.strides, window.dilations, (begins[0], begins[1], ends[0], ends[1]))
        return self.activation.apply_inplace(y) if self.activation is not None else y

    def _prepared_weights(self, x: np.ndarray, w: np.ndarray, bias) -> Prepared:
        """The NHWC weights (and quantized output stage) prepared once per weight and bias arrays."""
        recipe = recipe_of(self) if self.quant is not None else None
        key = (x.dtype, x.shape[3], id(recipe))
        cached = self.__dict__.get("_nhwc_weights")
        if cached is not None and cached[0] is w and cached[1] is bias and cached[2] == key:
            return cached[3]
        prepared = Prepared(self, recipe, x.dtype, w, bias, is_depthwise(self, x.shape[3], w.shape))
        self.__dict__["_nhwc_weights"] = (w, bias, key, prepared)
        return prepared

    def _depthwise_plan(self, x_shape: tuple, w_shape: tuple) -> DepthwisePlan:
        cache = self.__dict__.get("_depthwise_plans")
        if cache is None:
            cache = self.__dict__["_depthwise_plans"] = {}
        key = (x_shape, w_shape)
        plan = cache.get(key)
        if plan is None:
            window, begins, _, out, _ = self._geometry(x_shape, w_shape)
            plan = plan_depthwise(x_shape, w_shape[2:], window, begins or [0] * len(out), out)
            if len(cache) > 64:
                cache.clear()
            cache[key] = plan
        return plan

    def _few_frames(self, x: np.ndarray, w: np.ndarray, bias, dilation: int, frames: int) -> np.ndarray:
        """A 1-D convolution producing a few frames (a streaming push): one matrix product
        over the gathered taps, with no im2col of a padded copy."""
        m, channels, kernel = w.shape
        if kernel == 1:
            y = np.matmul(w.reshape(m, channels), x[0, :, :frames])
        elif frames == 1:
            taps = x[0, :, :(kernel - 1) * dilation + 1:dilation]
            y = np.matmul(w.reshape(m, channels * kernel), taps.reshape(-1, 1))
        else:
            taps = np.empty((channels, kernel, frames), np.float32)
            for tap in range(kernel):
                taps[:, tap] = x[0, :, tap * dilation:tap * dilation + frames]
            y = np.matmul(w.reshape(m, channels * kernel), taps.reshape(channels * kernel, frames))
        if bias is not None:
            y += bias[:, None]
        if self.activation is not None:
            y = self.activation.apply_inplace(y)
        return y[None]

    def _taps_1d(self, x: np.ndarray, w: np.ndarray, bias, begin: int, dilation: int, frames: int) -> np.ndarray:
        """A 1-D convolution of one sequence as one matrix product over its taps gathered into
        rows (zeros where the padding is), a row of ones bringing the bias into the product."""
        m, channels, kernel = w.shape
        length = x.shape[2]
        cols = np.empty((channels * kernel + 1, frames), np.float32)
        taps = cols[:-1].reshape(channels, kernel, frames)
        for tap in range(kernel):
            shift = tap * dilation - begin
            low, high = min(max(0, -shift), frames), max(min(frames, length - shift), 0)
            taps[:, tap, :low] = 0
            taps[:, tap, high:] = 0
            if high > low:
                taps[:, tap, low:high] = x[0, :, low + shift:high + shift]
        cols[-1] = 1
        y = np.matmul(self._weights_with_bias(w, bias), cols)
        if self.activation is not None:
            y = self.activation.apply_inplace(y)
        return y[None]

    def _weights_with_bias(self, w: np.ndarray, bias) -> np.ndarray:
        """``[W | b]`` as (M, C*k + 1), cached while the same weight and bias arrays come back."""
        cached = self.__dict__.get("_with_bias")
        if cached is not None and cached[0] is w and cached[1] is bias:
            return cached[2]
        m = w.shape[0]
        joined = np.empty((m, w[0].size + 1), np.float32)
        joined[:, :-1] = w.reshape(m, -1)
        joined[:, -1] = 0 if bias is None else bias
        if not w.flags.writeable and (bias is None or not bias.flags.writeable):  # constants: keep
            self.__dict__["_with_bias"] = (w, bias, joined)
        return joined

    def cost(self, inputs):
        w = inputs[1]
        out = self.output_facts(inputs)[0]
        kernel = 1
        if self.data_format == "NHWC":
            _, depth, k_h, k_w = kernel_dims(w.shape, self.kernel_format)
            return {"flops": 2 * out.volume * depth * k_h * k_w}
        for dim in w.shape[1:]:
            kernel = kernel * dim
        return {"flops": 2 * out.volume * kernel}


def convolve(xp: np.ndarray, w: np.ndarray, window: Window, out: tuple[int, ...], group: int) -> np.ndarray:
    """Convolve an already padded input; returns a fresh (N, M, *out) array."""
    n, channels = xp.shape[:2]
    m = w.shape[0]
    length = math.prod(out)
    if group == 1:
        return _dense(xp, w, window, out).reshape((n, m, *out))
    if w.shape[1] == 1 and m == channels and xp.dtype.kind == "f":
        return _depthwise(xp, w, window, out)
    per_in, per_out = channels // group, m // group
    y = np.empty((n, m, length), dtype=np.result_type(xp.dtype, w.dtype))
    for g in range(group):
        part = xp[:, g * per_in:(g + 1) * per_in]
        y[:, g * per_out:(g + 1) * per_out] = _dense(part, w[g * per_out:(g + 1) * per_out], window, out)
    return y.reshape((n, m, *out))


def _dense(xp, w, window: Window, out) -> np.ndarray:
    n, channels = xp.shape[:2]
    m = w.shape[0]
    pointwise = all(k == 1 for k in window.kernel) and all(s == 1 for s in window.strides)
    if pointwise:
        cols = xp.reshape(n, channels, -1)
    else:
        if not xp.flags.c_contiguous and xp.size <= 1 << 16:
            xp = np.ascontiguousarray(xp)
        view = window_view(xp, window, out)
        cols = view.reshape(n, channels * math.prod(window.kernel), -1)
    kernel = w.reshape(m, -1)
    if xp.dtype.kind in "iu":
        return np.matmul(kernel.astype(np.float64), cols.astype(np.float64)).astype(np.result_type(xp, w))
    if n == 1:
        return np.matmul(kernel, cols[0])[None]
    return np.matmul(kernel, cols)


def _depthwise(xp, w, window: Window, out) -> np.ndarray:
    n, channels = xp.shape[:2]
    y = np.zeros((n, channels, *out), dtype=xp.dtype)
    spatial_ones = (1,) * len(out)
    scratch = np.empty_like(y)
    for tap, view in taps(xp, window, out):
        weights = w[(slice(None), 0) + tap].reshape((channels, *spatial_ones))
        np.multiply(view, weights, out=scratch)
        y += scratch
    return y


def with_activation(op: Conv, activation: Activation) -> Conv:
    return replace(op, activation=activation)


def check_group(group: int) -> int:
    if group < 1:
        raise AnalysisError(f"group must be >= 1, got {group}")
    return group
