"""Transposed convolution over N,H,W,C tensors (the core ConvTranspose with
``data_format="NHWC"``, TFLite's TRANSPOSE_CONV): float, and quantized (int8 with per-channel
weights, int16 activations) with the convolutions' recipe (:mod:`tractile.ops.quantized.conv`).

Each input pixel's products with the kernel (one matmul) are scattered into the output (one
strided add per kernel tap) and cropped by the begin pads; contributions falling outside the
output are dropped, as in TFLite's reference kernel. Quantized sums are exact (float64 BLAS),
then requantized per output channel.
"""
from __future__ import annotations

import numpy as np

from ..errors import AnalysisError
from .quantized.conv import requantize_sums


def tflite_padding(out_size: int, in_size: int, kernel: int, stride: int, padding: str) -> int:
    """The begin pad TFLite derives for a transposed convolution, after checking that an output of
    ``out_size`` is what ``padding`` ("SAME" or "VALID") gives for ``in_size``."""
    if padding == "SAME":
        expected = (out_size + stride - 1) // stride
    else:
        expected = (out_size - kernel + stride) // stride
    if expected != in_size:
        raise AnalysisError(f"TRANSPOSE_CONV: an output of {out_size} with kernel {kernel}, stride {stride} and "
                            f"{padding} padding needs an input of {expected}, got {in_size}")
    return max((in_size - 1) * stride + kernel - out_size, 0) // 2


def to_ohwi(w: np.ndarray, kernel_format: str) -> np.ndarray:
    """The kernel as (output channels, KH, KW, input channels)."""
    return w if kernel_format == "OHWI" else w.transpose(1, 2, 3, 0)


def scatter(x: np.ndarray, w: np.ndarray, work, begins, sizes, strides) -> np.ndarray:
    """The transposed convolution of ``x`` (N,H,W,I) by ``w`` (O,KH,KW,I), in ``work``, cropped
    from ``begins`` to ``sizes`` (N, OH, OW, O)."""
    n, height, width, depth = x.shape
    filters, kernel_h, kernel_w, _ = w.shape
    (stride_h, stride_w), (top, left), (out_h, out_w) = strides, begins, sizes
    products = x.reshape(-1, depth).astype(work) @ w.reshape(-1, depth).T.astype(work)
    products = products.reshape(n, height, width, filters, kernel_h, kernel_w)
    canvas_h = max((height - 1) * stride_h + kernel_h, top + out_h)
    canvas_w = max((width - 1) * stride_w + kernel_w, left + out_w)
    canvas = np.zeros((n, canvas_h, canvas_w, filters), dtype=work)
    for kh in range(kernel_h):
        for kw in range(kernel_w):
            canvas[:, kh:kh + (height - 1) * stride_h + 1:stride_h,
                   kw:kw + (width - 1) * stride_w + 1:stride_w] += products[..., kh, kw]
    return canvas[:, top:top + out_h, left:left + out_w]


def transpose_conv_nhwc(op, x: np.ndarray, w: np.ndarray, bias, begins, sizes, recipe) -> np.ndarray:
    """The NHWC transposed convolution (bias, fused activation and quantization included)."""
    kernel = to_ohwi(w, op.kernel_format)
    strides = op.window.for_kernel(kernel.shape[1:3]).strides
    if recipe is None:
        out = np.ascontiguousarray(scatter(x, kernel, x.dtype, begins, sizes, strides))
        if bias is not None:
            out += bias.reshape(-1)
        return out if op.activation is None else op.activation.apply_inplace(out)
    shifted = x.astype(np.int64) - recipe.x_zero
    acc = scatter(shifted, kernel, np.float64, begins, sizes, strides).astype(np.int64)
    if bias is not None:
        acc += bias.reshape(-1).astype(np.int64)
    return requantize_sums(recipe, acc)
