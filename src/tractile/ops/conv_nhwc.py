"""Convolution over N,H,W,C tensors (the core :class:`~tractile.ops.conv.Conv` with
``data_format="NHWC"``): float, and quantized with TFLite's integer recipe
(:mod:`tractile.ops.quantized.conv`).

Kernels come as ``kernel_format`` says: "OHWI" (TFLite's CONV_2D), "HWIO" (TFLite's
DEPTHWISE_CONV_2D weights seen as [KH, KW, 1, C*M], groups = C) or "OIHW" (ONNX); each is
brought once to (O, KH, KW, I) for the matmul over image patches, or to (KH, KW, C*M) for the
per-channel sums of a depthwise convolution.
"""
from __future__ import annotations

import numpy as np

from ..errors import AnalysisError
from ..fact import TypedFact
from .quantized.conv import QuantizedStage
from .quantized.hybrid import is_hybrid
from .window import Window, strided_view

KERNEL_FORMATS = ("OIHW", "OHWI", "HWIO")
DATA_FORMATS = ("NCHW", "NHWC")


def kernel_dims(shape, kernel_format: str) -> tuple:
    """(output channels, input channels per group, kernel height, kernel width) of a kernel shape."""
    if kernel_format == "OHWI":
        return shape[0], shape[3], shape[1], shape[2]
    if kernel_format == "HWIO":
        return shape[3], shape[2], shape[0], shape[1]
    return shape[0], shape[1], shape[2], shape[3]


def to_ohwi(w: np.ndarray, kernel_format: str) -> np.ndarray:
    if kernel_format == "OHWI":
        return w
    if kernel_format == "HWIO":
        return w.transpose(3, 0, 1, 2)
    return w.transpose(0, 2, 3, 1)


def nhwc_facts(op, inputs: list[TypedFact]) -> TypedFact:
    """The output fact of an NHWC convolution (checks shapes and types)."""
    x, w = inputs[0], inputs[1]
    if op.kernel_format not in KERNEL_FORMATS:
        raise AnalysisError(f"kernel_format must be one of {', '.join(KERNEL_FORMATS)}, got {op.kernel_format!r}")
    if x.rank != 4 or w.rank != 4:
        raise AnalysisError(f"an NHWC Conv needs 4-d input and kernel, got input {x} and kernel {w}")
    filters, depth, k_h, k_w = kernel_dims(w.shape, op.kernel_format)
    if not all(isinstance(d, int) for d in (filters, depth, k_h, k_w)):
        raise AnalysisError(f"kernel dims must be known, got {w}")
    if x.shape[3] != depth * op.group:
        raise AnalysisError(f"input 0 has {x.shape[3]} channels, the kernel expects {depth * op.group} "
                            f"(input {x}; kernel {w}, {op.kernel_format}, group {op.group})")
    if filters % op.group:
        raise AnalysisError(f"{filters} output channels cannot be split in {op.group} groups")
    if len(inputs) == 3 and inputs[2].volume != filters:
        raise AnalysisError(f"bias should hold {filters} values, got {inputs[2]}")
    if op.quant is None and not is_hybrid(x, w):
        if not x.dtype.is_float or w.dtype != x.dtype:
            raise AnalysisError(f"an NHWC Conv without quantization needs float input and kernel of one type, got "
                                f"{x} and {w}")
    out_h, out_w = op.window.for_kernel((k_h, k_w)).output_dims(tuple(x.shape[1:3]))
    return TypedFact(x.dtype, (x.shape[0], out_h, out_w, filters), qparams=op.quant)


def geometry(window: Window, x_shape: tuple) -> tuple[list[int], list[int], tuple[int, int]]:
    """Begin pads, end pads and output (height, width) of a window over an NHWC input."""
    return window.concrete_pads(tuple(x_shape[1:3]))


def pad_hw(x: np.ndarray, begins, ends, value, dtype=None) -> np.ndarray:
    """Pad the H and W axes of an NHWC tensor (only the pads a window reaches), converting to ``dtype``."""
    top, left = begins
    bottom, right = ends
    dtype = x.dtype if dtype is None else dtype
    if not (top or bottom or left or right):
        return x.astype(dtype, copy=False)
    n, h, w, c = x.shape
    out = np.full((n, h + top + bottom, w + left + right, c), value, dtype=dtype)
    out[:, top:top + h, left:left + w] = x
    return out


def patches(xp: np.ndarray, window: Window, out: tuple[int, int]) -> np.ndarray:
    """A strided view (N, OH, OW, KH, KW, C) of a padded NHWC input (no copy)."""
    n, _, _, c = xp.shape
    s = xp.strides
    (k_h, k_w), (s_h, s_w), (d_h, d_w) = window.kernel, window.strides, window.dilations
    return strided_view(xp, (n, out[0], out[1], k_h, k_w, c), (s[0], s[1] * s_h, s[2] * s_w, s[1] * d_h, s[2] * d_w,
                                                                s[3]))


def taps(xp: np.ndarray, window: Window, out: tuple[int, int]):
    """Yield a view (N, OH, OW, C) of a padded NHWC input for every kernel tap."""
    (k_h, k_w), (s_h, s_w), (d_h, d_w) = window.kernel, window.strides, window.dilations
    for kh in range(k_h):
        top = kh * d_h
        for kw in range(k_w):
            left = kw * d_w
            yield xp[:, top:top + (out[0] - 1) * s_h + 1:s_h, left:left + (out[1] - 1) * s_w + 1:s_w]


def depthwise_sums(xp: np.ndarray, weights: np.ndarray, window: Window, out: tuple[int, int],
                   tiled: dict | None = None) -> np.ndarray:
    """Per-channel window sums of a padded input (N,H,W,C) with weights (KH,KW,C).

    Small outputs take one contraction over a strided view. Large ones accumulate one
    multiply-add per kernel tap over whole output rows (W*C values, the weights tiled
    along W once and kept in ``tiled``); a width stride first splits the input in
    column phases so that every tap reads contiguous rows.
    """
    kernel_h, kernel_w, channels = weights.shape
    out_h, out_w = out
    n = xp.shape[0]
    if out_h * out_w <= 256:
        return np.einsum("nhwijc,ijc->nhwc", patches(xp, window, out), weights)
    key = ("tiled", out_w)
    if tiled is None:
        tiled = {}
    if key not in tiled:
        tiled[key] = np.ascontiguousarray(np.tile(weights, (1, 1, out_w)))
    rows = tiled[key]
    (stride_h, stride_w), (dil_h, dil_w) = window.strides, window.dilations
    phases: dict[int, np.ndarray] = {}
    acc = scratch = None
    for kh in range(kernel_h):
        top = kh * dil_h
        for kw in range(kernel_w):
            left = kw * dil_w
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
    assert acc is not None
    return acc.reshape(n, out_h, out_w, channels)


def is_depthwise(op, x_channels: int, w_shape: tuple) -> bool:
    """One input channel per group and every channel its own group (a depthwise convolution)."""
    _, depth, _, _ = kernel_dims(w_shape, op.kernel_format)
    return depth == 1 and op.group == x_channels


class Prepared:
    """Weights (and the quantized output stage) of one NHWC convolution, built once per
    weight and bias arrays: ``kernel`` is (KH*KW*I, O) for the patch matmul, or (KH, KW, C*M)
    for a depthwise convolution; ``stage`` None for float."""

    def __init__(self, op, recipe, x_dtype, w: np.ndarray, bias, depthwise: bool):
        self.tiled: dict = {}
        ohwi = to_ohwi(w, op.kernel_format)
        filters = ohwi.shape[0]
        self.stage = None
        if depthwise:
            kernel = ohwi[..., 0].transpose(1, 2, 0)
            if recipe is None:
                self.kernel, self.work = kernel, x_dtype
                return
            offset = kernel.astype(np.int64) - recipe.w_zero
            taps = kernel.shape[0] * kernel.shape[1]
            self.stage = QuantizedStage(recipe, kernel, bias, offset.sum(axis=(0, 1)), taps)
        else:
            flat = ohwi.reshape(filters, -1)
            if recipe is None:
                self.kernel, self.work = np.ascontiguousarray(flat.T), x_dtype
                return
            offset = flat.astype(np.int64) - recipe.w_zero
            self.stage = QuantizedStage(recipe, flat, bias, offset.sum(axis=1), flat.shape[1])
            offset = np.ascontiguousarray(offset.T)
        self.work = self.stage.work
        self.kernel = offset.astype(self.work)


def convolve_nhwc(op, x: np.ndarray, w: np.ndarray, bias, prepared: Prepared) -> np.ndarray:
    """The convolution of ``x`` (N,H,W,C); float results get the bias and fused activation."""
    window = op.window.for_kernel(kernel_dims(w.shape, op.kernel_format)[2:])
    begins, ends, out = geometry(window, x.shape)
    stage, kernel = prepared.stage, prepared.kernel
    xp = pad_hw(x, begins, ends, 0) if stage is None else pad_hw(x, begins, ends, stage.x_zero, stage.work)
    n, _, _, channels = x.shape
    out_h, out_w = out
    if is_depthwise(op, channels, w.shape):
        out_channels = kernel.shape[2]
        if channels == 1:
            matrix = patches(xp, window, out).reshape(-1, kernel.shape[0] * kernel.shape[1])
            acc = (matrix @ kernel.reshape(-1, out_channels)).reshape(n, out_h, out_w, out_channels)
        else:
            if out_channels != channels:
                xp = np.repeat(xp, out_channels // channels, axis=3)
            acc = depthwise_sums(xp, kernel, window, out, prepared.tiled)
    else:
        acc = _patch_matmul(op, xp, kernel, window, out, channels, prepared.work)
    if stage is not None:
        return stage.finish(acc)
    if bias is not None:
        acc += bias.reshape(-1)
    if op.activation is not None:
        acc = op.activation.apply_inplace(acc)
    return acc


def _patch_matmul(op, xp: np.ndarray, kernel: np.ndarray, window: Window, out, channels: int, work) -> np.ndarray:
    n = xp.shape[0]
    filters = kernel.shape[1]
    depth = channels // op.group
    taps_count = kernel.shape[0]
    pointwise = window.kernel == (1, 1) and window.strides == (1, 1)
    if op.group == 1:
        matrix = xp.reshape(-1, depth) if pointwise else patches(xp, window, out).reshape(-1, taps_count)
        result = matrix @ kernel
    else:
        result = np.empty((n * out[0] * out[1], filters), dtype=work)
        per_group = filters // op.group
        for group in range(op.group):
            part = xp[..., group * depth:(group + 1) * depth]
            matrix = part.reshape(-1, depth) if pointwise else patches(part, window, out).reshape(-1, taps_count)
            target = slice(group * per_group, (group + 1) * per_group)
            np.matmul(matrix, kernel[:, target], out=result[:, target])
    return result.reshape(n, out[0], out[1], filters)

