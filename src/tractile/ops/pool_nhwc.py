"""Pooling over N,H,W,C tensors (the core pools with ``data_format="NHWC"``): max, average
(float, or quantized with TFLite's rounding) and TFLite's L2 pooling (an Lp pool averaged over
the taps inside the input). Padding taps are skipped, as TFLite's kernels skip them."""
from __future__ import annotations

import numpy as np

from ..datum import DatumType
from .conv_nhwc import pad_hw, taps
from .quantized.conv import clamp_of
from .quantized.onnxruntime import AveragePoolRecipe, dequantized_values
from .window import Window


def lowest(dtype: np.dtype):
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return np.asarray(-np.inf).astype(dtype)


def activate(y: np.ndarray, activation) -> np.ndarray:
    """A fused activation on a pooled result: in place on floats, a clamp to a Clip's bounds on integers."""
    if activation is None:
        return y
    if y.dtype.kind == "f":
        return activation.apply_inplace(y)
    low, high = clamp_of(activation, DatumType.from_numpy(y.dtype))
    return np.clip(y, low, high).astype(y.dtype)


def max_pool(x: np.ndarray, window: Window, activation) -> np.ndarray:
    begins, ends, out = window.concrete_pads(tuple(x.shape[1:3]))
    xp = pad_hw(x, begins, ends, lowest(x.dtype))
    result = None
    for view in taps(xp, window, out):
        result = view.copy() if result is None else np.maximum(result, view, out=result)
    assert result is not None
    return activate(result, activation)


def window_sums(x: np.ndarray, window: Window, work, square: bool = False) -> np.ndarray:
    """Sums over each window (zeros in the padding), in ``work``; of the squares with ``square``."""
    begins, ends, out = window.concrete_pads(tuple(x.shape[1:3]))
    xp = pad_hw(x, begins, ends, 0).astype(work, copy=False)
    if square:
        xp = xp * xp
    total = np.zeros((x.shape[0], out[0], out[1], x.shape[3]), dtype=work)
    for view in taps(xp, window, out):
        total += view
    return total


def tap_counts(op, spatial: tuple) -> np.ndarray:
    """How many taps of each output position the average divides by, as (OH, OW, 1) float64."""
    cache = op.__dict__.setdefault("_tap_counts", {})
    counts = cache.get(spatial)
    if counts is None:
        begins, ends, out = op.window.concrete_pads(spatial)
        counts = op._counts(spatial, begins, ends, out)[0, 0][..., None]
        if len(cache) > 32:
            cache.clear()
        cache[spatial] = counts
    return counts


def average_pool(op, x: np.ndarray, recipe) -> np.ndarray:
    counts = tap_counts(op, tuple(x.shape[1:3]))
    if isinstance(recipe, AveragePoolRecipe):
        if covers_input(op.window, tuple(x.shape[1:3])):
            return recipe.whole(x)
        values = dequantized_values(recipe.x_q, recipe.dtype)[x.astype(np.int64) - lowest(x.dtype)]
        return recipe.finish(window_sums(values, op.window, np.float32), counts.astype(np.float32))
    if recipe is not None:
        return recipe.average(window_sums(x, op.window, np.int64), counts.astype(np.int64))
    total = window_sums(x, op.window, x.dtype)
    return activate((total / counts.astype(x.dtype)).astype(x.dtype, copy=False), op.activation)


def covers_input(window: Window, spatial: tuple) -> bool:
    """The window is the whole (H, W) plane, without padding (onnxruntime then pools globally)."""
    begins, ends, _ = window.concrete_pads(spatial)
    return tuple(window.kernel) == tuple(spatial) and not any(begins) and not any(ends)


def mean_lp_pool(op, x: np.ndarray) -> np.ndarray:
    """TFLite's L2_POOL_2D (p = 2): the root of the mean of the squares over the taps inside the input."""
    counts = tap_counts(op, tuple(x.shape[1:3]))
    total = window_sums(x, op.window, x.dtype, square=True)
    average = total / counts.astype(x.dtype)
    return np.sqrt(average).astype(x.dtype, copy=False)
