"""Depthwise convolution (one input channel per output channel) over 1-D and 2-D maps.

Every kernel tap becomes one multiply-add over a long contiguous run of each channel: the
padded input is laid out per channel as ``stride_h * stride_w`` phase planes (the padded
rows and columns of one residue modulo the strides), each flattened, so that what a tap
reads for the whole output is one contiguous slice of a plane. The output is computed
"wide", with as many columns per row as a plane has (the extra columns are dropped at the
end), a block of channels at a time: the accumulator and its scratch stay in L2 or L3 across the
taps, and each tap costs two NumPy calls per block (1-2 us each), so blocks are large.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .activations import Relu
from .window import Window

#: accumulator elements per block of channels (512 KiB in f32); on MobileNet's layers 1 << 17
#: ran 5-12% faster than 1 << 15 (fewer calls) and 1 << 18 or more no faster
BLOCK_ELEMENTS = 1 << 17
#: small maps of many channels (MobileNet's last layers) run channels-last: per tap one
#: multiply-add over (rows, columns, channels), no phase planes (20-25% faster there)
CHANNELS_LAST_POSITIONS = 1024  # output positions per channel, at most
CHANNELS_LAST_CHANNELS = 64  # channels, at least


@dataclass(frozen=True)
class DepthwisePlan:
    """The layout of one depthwise convolution for given input and kernel shapes."""

    strides: tuple[int, int]
    phase_rows: int  # rows of a plane
    phase_cols: int  # columns of a plane, and of a wide output row
    plane: int  # elements of a plane, with the slack the last taps read past its rows
    begins: tuple[int, int]
    out: tuple[int, int]
    starts: tuple[tuple[int, int], ...]  # per tap (kernel row-major): plane, first element
    block: int  # channels per block
    offsets: tuple[tuple[int, int], ...] = ()  # per tap: row and column in the padded input
    extent: tuple[int, int] = (0, 0)  # rows and columns of the padded input the taps read

    @property
    def wide(self) -> int:
        """Elements of one channel of the wide output."""
        return self.out[0] * self.phase_cols


def plan_depthwise(x_shape: tuple[int, ...], kernel: tuple[int, ...], window: Window, begins, out) -> DepthwisePlan:
    """Lay out a depthwise convolution of ``x_shape`` (N, C, [H,] W) with the (non-negative)
    begin pads and output dims that ``Window.concrete_pads`` gave; 1-D maps are rows of height 1."""
    if len(kernel) == 1:
        kernel, strides, dilations = (1, kernel[0]), (1, window.strides[0]), (1, window.dilations[0])
        begins, out = (0, begins[0]), (1, out[0])
    else:
        strides, dilations, begins, out = window.strides, window.dilations, tuple(begins), tuple(out)
    extent = [(out[axis] - 1) * strides[axis] + (kernel[axis] - 1) * dilations[axis] + 1 for axis in (0, 1)]
    phase_rows, phase_cols = -(-extent[0] // strides[0]), -(-extent[1] // strides[1])
    starts, offsets = [], []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            row, col = i * dilations[0], j * dilations[1]
            starts.append(((row % strides[0]) * strides[1] + col % strides[1],
                           (row // strides[0]) * phase_cols + col // strides[1]))
            offsets.append((row, col))
    wide = out[0] * phase_cols
    block = max(1, min(x_shape[1], BLOCK_ELEMENTS // max(wide, 1)))
    slack = (kernel[1] - 1) * dilations[1] // strides[1]
    return DepthwisePlan(tuple(strides), phase_rows, phase_cols, phase_rows * phase_cols + slack,
                         tuple(begins), tuple(out), tuple(starts), block, tuple(offsets), (extent[0], extent[1]))


def phase_planes(x: np.ndarray, plan: DepthwisePlan) -> np.ndarray:
    """The zero-padded input as (N, C, phases, plane elements), each phase plane flattened."""
    n, channels = x.shape[:2]
    sh, sw = plan.strides
    spatial = x.shape[2:] if x.ndim == 4 else (1, x.shape[2])
    x4 = x.reshape(n, channels, *spatial)
    top, left = plan.begins
    h = min(spatial[0], plan.phase_rows * sh - top)
    w = min(spatial[1], plan.phase_cols * sw - left)
    planes = np.zeros((n, channels, sh * sw, plan.plane), x.dtype)
    body = plan.phase_rows * plan.phase_cols
    for a in range(sh):
        first_row = (a - top) % sh  # the first input row landing in phase row a
        rows = len(range(first_row, h, sh))
        row = (first_row + top) // sh
        for b in range(sw):
            first_col = (b - left) % sw
            cols = len(range(first_col, w, sw))
            col = (first_col + left) // sw
            grid = planes[:, :, a * sw + b, :body].reshape(n, channels, plan.phase_rows, plan.phase_cols)
            grid[:, :, row:row + rows, col:col + cols] = x4[:, :, first_row:h:sh, first_col:w:sw]
    return planes


def _store(result: np.ndarray, target: np.ndarray, activation) -> None:
    """Write ``result`` (a view of the caller's scratch) into ``target`` through the activation:
    a ReLU is applied by the copy itself (one pass fewer: 0-20% faster on MobileNet's
    phase-plane layers; no faster channels-last, which keeps its copy), others in place first."""
    if type(activation) is Relu:
        np.maximum(result, 0, out=target)
    else:
        target[...] = result if activation is None else activation.apply_inplace(result)


def depthwise(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, plan: DepthwisePlan,
              activation=None) -> np.ndarray:
    """Depthwise convolution of ``x`` (N, C, [H,] W) by ``w`` (C, 1, [kh,] kw), bias and
    activation included; returns a fresh (N, C, *out) array."""
    n, channels = x.shape[:2]
    if plan.out[0] * plan.out[1] <= CHANNELS_LAST_POSITIONS and channels >= CHANNELS_LAST_CHANNELS:
        return depthwise_channels_last(x, w, bias, plan, activation)
    planes = phase_planes(x, plan)
    out_rows, out_cols = plan.out
    wide = plan.wide
    kernel = w.reshape(channels, -1).astype(x.dtype, copy=False)
    y = np.empty((n, channels, out_rows, out_cols), x.dtype)
    block = plan.block
    acc_buffer = np.empty(block * wide, x.dtype)
    scratch_buffer = np.empty(block * wide, x.dtype)
    for image in range(n):
        for start in range(0, channels, block):
            stop = min(start + block, channels)
            count = stop - start
            acc = acc_buffer[:count * wide].reshape(count, wide)
            scratch = scratch_buffer[:count * wide].reshape(count, wide)
            source = planes[image, start:stop]
            weights = kernel[start:stop, :, None]
            for tap, (phase, first) in enumerate(plan.starts):
                view = source[:, phase, first:first + wide]
                if tap == 0:
                    np.multiply(view, weights[:, tap], out=acc)
                else:
                    np.multiply(view, weights[:, tap], out=scratch)
                    acc += scratch
            if bias is not None:
                acc += bias[start:stop, None]
            _store(acc.reshape(count, out_rows, plan.phase_cols)[:, :, :out_cols], y[image, start:stop], activation)
    return y.reshape((n, channels, *plan.out[4 - x.ndim:]))


def depthwise_channels_last(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, plan: DepthwisePlan,
                            activation=None) -> np.ndarray:
    """The convolution :func:`depthwise` computes, the same operations in the same order (so
    the same values), with channels innermost: the padded image is laid out (rows, columns,
    channels) once, and each tap multiplies a strided (out rows, out columns, channels) view
    of it by the tap's weights per channel. Suits small maps of many channels, where a plane
    per channel would be short."""
    n, channels = x.shape[:2]
    spatial = x.shape[2:] if x.ndim == 4 else (1, x.shape[2])
    x4 = x.reshape(n, channels, *spatial)
    (sh, sw), (top, left), (out_rows, out_cols) = plan.strides, plan.begins, plan.out
    rows, cols = min(spatial[0], plan.extent[0] - top), min(spatial[1], plan.extent[1] - left)
    kernel = np.ascontiguousarray(w.reshape(channels, -1).T, dtype=x.dtype)  # (taps, channels)
    padded = np.zeros((*plan.extent, channels), x.dtype)
    acc = np.empty((out_rows, out_cols, channels), x.dtype)
    scratch = np.empty_like(acc)
    y = np.empty((n, channels, out_rows, out_cols), x.dtype)
    for image in range(n):
        if rows > 0 and cols > 0:
            padded[top:top + rows, left:left + cols] = x4[image, :, :rows, :cols].transpose(1, 2, 0)
        for tap, (row, col) in enumerate(plan.offsets):
            view = padded[row:row + (out_rows - 1) * sh + 1:sh, col:col + (out_cols - 1) * sw + 1:sw]
            if tap == 0:
                np.multiply(view, kernel[0], out=acc)
            else:
                np.multiply(view, kernel[tap], out=scratch)
                acc += scratch
        if bias is not None:
            acc += bias
        result = acc if activation is None else activation.apply_inplace(acc)
        y[image] = result.transpose(2, 0, 1)
    return y.reshape((n, channels, *plan.out[4 - x.ndim:]))
