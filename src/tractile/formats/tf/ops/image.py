"""TensorFlow image resizing (ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic) onto core Resize.

The NHWC input is resized along axes 1 and 2 to the ``size`` input. TensorFlow's
``align_corners`` and ``half_pixel_centers`` attributes pick the coordinate transformation:

* bilinear: ``align_corners`` -> align_corners, ``half_pixel_centers`` -> half_pixel, else asymmetric;
* nearest: the source index is ``floor`` of the scaled position (``round``, halves up, with
  ``align_corners``), the position being ``(x + 0.5) * scale`` with ``half_pixel_centers``;
* bicubic: Keys' kernel with a = -0.5 and weights renormalised inside the image with
  ``half_pixel_centers``, a = -0.75 with clamped edges otherwise, the fractional position
  rounded to 1/1024 as TensorFlow's weight table does.
"""
from __future__ import annotations

import numpy as np

from ....datum import DatumType
from ....ops.cast import Cast
from ....ops.einsum import Einsum
from ....ops.image import Resize
from ..registry import TfNode, Translated, tf_op
from .array import as_int64

_EMPTY_F32 = np.zeros(0, np.float32)


def _coordinates(node: TfNode) -> tuple[bool, bool]:
    align_corners = node.bool("align_corners", False)
    half_pixel = node.bool("half_pixel_centers", False)
    if align_corners and half_pixel:
        raise node.error("align_corners and half_pixel_centers cannot both be set")
    return align_corners, half_pixel


def _resize(node: TfNode, op: Resize, as_float: bool):
    x = [node.input(0)]
    if as_float and node.type("T") != DatumType.F32:  # TensorFlow's linear resizes output float32
        x = node.wire("as_float", Cast(DatumType.F32), x)
    sizes = as_int64(node, 1, "size", "size")
    if isinstance(sizes, np.ndarray) and sizes.shape != (2,):
        raise node.error(f"size should hold 2 values (height, width), got {sizes.tolist()}")
    return Translated(op, x + [_EMPTY_F32, _EMPTY_F32, sizes])


@tf_op("ResizeBilinear")
def resize_bilinear(node: TfNode):
    align_corners, half_pixel = _coordinates(node)
    mode = "align_corners" if align_corners else "half_pixel" if half_pixel else "asymmetric"
    return _resize(node, Resize("linear", mode, axes=(1, 2)), True)


@tf_op("ResizeNearestNeighbor")
def resize_nearest(node: TfNode):
    align_corners, half_pixel = _coordinates(node)
    mode = "align_corners" if align_corners else "tf_half_pixel_for_nn" if half_pixel else "asymmetric"
    rounding = "round_prefer_ceil" if align_corners else "floor"
    return _resize(node, Resize("nearest", mode, rounding, axes=(1, 2)), False)


#: TensorFlow reads its cubic weights from a table of the fractional position in 1/1024 steps
_CUBIC_TABLE_STEPS = 1024


def cubic_weights(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """TensorFlow's bicubic resampling of one axis as an (out_size, in_size) float32 matrix."""
    a = np.float32(-0.5 if half_pixel else -0.75)
    steps = np.arange(_CUBIC_TABLE_STEPS + 1, dtype=np.float32) / np.float32(_CUBIC_TABLE_STEPS)
    near = ((a + 2) * steps - (a + 3)) * steps * steps + 1  # weight at distance t
    beyond = steps + np.float32(1)
    far = ((a * beyond - 5 * a) * beyond + 8 * a) * beyond - 4 * a  # weight at distance t + 1
    if align_corners and out_size > 1:
        scale = np.float32(in_size - 1) / np.float32(out_size - 1)
    else:
        scale = np.float32(in_size) / np.float32(out_size)
    out = np.arange(out_size, dtype=np.float32)
    where = (out + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else out * scale
    base = np.floor(where)
    offset = np.rint((where - base) * np.float32(_CUBIC_TABLE_STEPS)).astype(np.int64)
    rest = _CUBIC_TABLE_STEPS - offset
    taps = np.stack([far[offset], near[offset], near[rest], far[rest]], axis=1).astype(np.float32)
    indices = base.astype(np.int64)[:, None] + np.arange(-1, 3)
    if half_pixel:  # taps outside the image are dropped and the others renormalised
        taps = np.where((indices >= 0) & (indices < in_size), taps, np.float32(0))
        taps = (taps / taps.sum(axis=1, keepdims=True)).astype(np.float32)
    matrix = np.zeros((out_size, in_size), np.float32)
    np.add.at(matrix, (np.repeat(np.arange(out_size), 4), np.clip(indices, 0, in_size - 1).reshape(-1)),
              taps.reshape(-1))
    return matrix


@tf_op("ResizeBicubic")
def resize_bicubic(node: TfNode):
    """Two products by per-axis weight matrices when the sizes are known when loading (TensorFlow's
    exact weights), else core Resize (cubic, whose weights differ from TensorFlow's table by ~1e-4)."""
    align_corners, half_pixel = _coordinates(node)
    fact, sizes = node.input_fact(0), node.const(1)
    dims = fact.shape.dims[1:3] if fact.rank == 4 else ()
    if sizes is None or len(dims) != 2 or not all(isinstance(d, int) for d in dims):
        if half_pixel:
            op = Resize("cubic", "half_pixel", cubic_coeff_a=-0.5, exclude_outside=True, axes=(1, 2))
        else:
            op = Resize("cubic", "align_corners" if align_corners else "asymmetric", cubic_coeff_a=-0.75,
                        axes=(1, 2))
        return _resize(node, op, True)
    height, width = (int(v) for v in np.asarray(sizes).reshape(-1))
    rows = cubic_weights(dims[0], height, align_corners, half_pixel)
    columns = cubic_weights(dims[1], width, align_corners, half_pixel)
    x = [node.input(0)]
    if node.type("T") != DatumType.F32:
        x = node.wire("as_float", Cast(DatumType.F32), x)
    x = node.wire("rows", Einsum("oh,nhwc->nowc"), [rows] + x)
    return Translated(Einsum("pw,nowc->nopc"), [columns] + x)
