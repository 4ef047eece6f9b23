"""TFLite's RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR arithmetic on NHWC tensors, used by
core :class:`~tractile.ops.image.Resize` with ``arithmetic="tflite"``.

Source coordinates are computed per output row and column in float32 as TFLite does
(``align_corners``, ``half_pixel_centers``); float and uint8 bilinear interpolation
weigh the four taps in float32 (uint8 adds 0.5 and truncates); int8 and int16 bilinear use
TFLite's integer kernel (coordinates in 1/1024 steps, a 20-bit rounding).
"""
from __future__ import annotations

import numpy as np


def _f32(value) -> np.float32:
    return np.float32(value)


def _float_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return _f32(in_size - 1) / _f32(out_size - 1)
    return _f32(in_size) / _f32(out_size)


def bilinear_float_taps(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """(source coordinate, lower index, upper index) per output position, in float32."""
    scale = _float_scale(in_size, out_size, align_corners)
    positions = np.arange(out_size, dtype=np.float32)
    if half_pixel:
        source = ((positions + _f32(0.5)) * scale - _f32(0.5)).astype(np.float32)
    else:
        source = (positions * scale).astype(np.float32)
    lower = np.maximum(np.floor(source).astype(np.int64), 0)
    upper = np.minimum(np.ceil(source).astype(np.int64), in_size - 1)
    return source, lower, upper


def bilinear_integer_taps(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """(source coordinate in 1/1024, lower, upper) per output position (ResizeBilinearInteger)."""
    if align_corners and out_size > 1:
        scale = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale = ((1 << 10) * in_size + out_size // 2) // out_size
    positions = np.arange(out_size, dtype=np.int64)
    source = positions * scale + (scale // 2 - (1 << 9) if half_pixel else 0)
    lower = np.maximum(np.where(source >= 0, source >> 10, -((-source) >> 10)), 0)
    raised = source + (1 << 10) - 1
    upper = np.minimum(np.where(raised >= 0, raised >> 10, -((-raised) >> 10)), in_size - 1)
    return source, lower, upper


def nearest_taps(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    scale = _float_scale(in_size, out_size, align_corners)
    offset = _f32(0.5) if half_pixel else _f32(0)
    source = ((np.arange(out_size, dtype=np.float32) + offset) * scale).astype(np.float32)
    if align_corners:
        index = np.where(source >= 0, np.floor(source + _f32(0.5)), np.ceil(source - _f32(0.5)))
    else:
        index = np.floor(source)
    index = np.minimum(index.astype(np.int64), in_size - 1)
    return np.maximum(index, 0) if half_pixel else index


def tflite_resize(x: np.ndarray, out_h: int, out_w: int, bilinear: bool, align_corners: bool,
                  half_pixel: bool) -> np.ndarray:
    """Resize axes 1 and 2 of an NHWC tensor to (out_h, out_w) as TFLite's reference kernels do."""
    _, in_h, in_w, _ = x.shape
    modes = (align_corners, half_pixel)
    if not bilinear:
        rows, cols = nearest_taps(in_h, out_h, *modes), nearest_taps(in_w, out_w, *modes)
        return np.ascontiguousarray(x[:, rows][:, :, cols])
    if x.dtype == np.int8 or x.dtype == np.int16:
        return _integer(x, out_h, out_w, modes)
    return _float(x, out_h, out_w, modes)


def _integer(x: np.ndarray, out_h: int, out_w: int, modes) -> np.ndarray:
    _, in_h, in_w, _ = x.shape
    ys, y0, y1 = bilinear_integer_taps(in_h, out_h, *modes)
    xs, x0, x1 = bilinear_integer_taps(in_w, out_w, *modes)
    dy = (ys - (y0 << 10))[None, :, None, None]
    dx = (xs - (x0 << 10))[None, None, :, None]
    values = x.astype(np.int64)
    top, bottom = values[:, y0], values[:, y1]
    total = (top[:, :, x0] * ((1 << 10) - dy) * ((1 << 10) - dx) + bottom[:, :, x0] * dy * ((1 << 10) - dx)
             + top[:, :, x1] * ((1 << 10) - dy) * dx + bottom[:, :, x1] * dy * dx)
    rounded = total + np.where(total > 0, 1 << 19, -(1 << 19))
    quotient = np.where(rounded >= 0, rounded >> 20, -((-rounded) >> 20))
    return quotient.astype(x.dtype)


def _float(x: np.ndarray, out_h: int, out_w: int, modes) -> np.ndarray:
    _, in_h, in_w, _ = x.shape
    ys, y0, y1 = bilinear_float_taps(in_h, out_h, *modes)
    xs, x0, x1 = bilinear_float_taps(in_w, out_w, *modes)
    dy = (ys - y0.astype(np.float32)).astype(np.float32)[None, :, None, None]
    dx = (xs - x0.astype(np.float32)).astype(np.float32)[None, None, :, None]
    one = _f32(1)
    values = x.astype(np.float32)
    top, bottom = values[:, y0], values[:, y1]
    total = top[:, :, x0] * (one - dy) * (one - dx)
    total = total + bottom[:, :, x0] * dy * (one - dx)
    total = total + top[:, :, x1] * (one - dy) * dx
    total = total + bottom[:, :, x1] * dy * dx
    if x.dtype.kind == "f":
        return total.astype(x.dtype)
    total = total + _f32(0.5)
    return np.trunc(total).astype(x.dtype)
