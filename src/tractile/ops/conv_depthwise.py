"""Depthwise convolution (one input channel per output channel) over 1-D and 2-D maps.

Every kernel tap becomes one multiply-add over a long run of each channel: the padded
input is laid out per channel as ``stride_h`` planes (the padded rows of one residue
modulo the row stride), each flattened, so that what a tap reads for the whole output is
one 1-D slice of a plane (of step ``stride_w``). The output is computed "wide", with as
many columns per row as the padded input has divided by the column stride (the extra
columns are dropped at the end), a block of channels at a time so that the accumulator and
its scratch stay in cache across the taps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .window import Window

BLOCK_ELEMENTS = 1 << 15  # accumulator elements per block of channels (128 KiB in f32)


@dataclass(frozen=True)
class DepthwisePlan:
    """The layout of one depthwise convolution for given input and kernel shapes."""

    strides: tuple[int, int]
    phase_rows: int  # rows of a plane
    width: int  # columns of the padded input, a multiple of the column stride
    plane: int  # elements of a plane, with the slack the last taps read past its rows
    begins: tuple[int, int]
    out: tuple[int, int]
    starts: tuple[tuple[int, int], ...]  # per tap (kernel row-major): plane, first element
    block: int  # channels per block

    @property
    def wide(self) -> int:
        """Elements of one channel of the wide output."""
        return self.out[0] * (self.width // self.strides[1])


def plan_depthwise(x_shape: tuple[int, ...], kernel: tuple[int, ...], window: Window, begins, out) -> DepthwisePlan:
    """Lay out a depthwise convolution of ``x_shape`` (N, C, [H,] W) with the (non-negative)
    begin pads and output dims that ``Window.concrete_pads`` gave; 1-D maps are rows of height 1."""
    if len(kernel) == 1:
        kernel, strides, dilations = (1, kernel[0]), (1, window.strides[0]), (1, window.dilations[0])
        begins, out = (0, begins[0]), (1, out[0])
    else:
        strides, dilations, begins, out = window.strides, window.dilations, tuple(begins), tuple(out)
    extent = [(out[axis] - 1) * strides[axis] + (kernel[axis] - 1) * dilations[axis] + 1 for axis in (0, 1)]
    phase_rows = -(-extent[0] // strides[0])
    width = -(-extent[1] // strides[1]) * strides[1]
    starts = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            row = i * dilations[0]
            starts.append((row % strides[0], (row // strides[0]) * width + j * dilations[1]))
    wide = out[0] * (width // strides[1])
    block = max(1, min(x_shape[1], BLOCK_ELEMENTS // max(wide, 1)))
    return DepthwisePlan(tuple(strides), phase_rows, width, phase_rows * width + (kernel[1] - 1) * dilations[1],
                         tuple(begins), tuple(out), tuple(starts), block)


def row_planes(x: np.ndarray, plan: DepthwisePlan) -> np.ndarray:
    """The zero-padded input as (N, C, row stride, plane elements), each plane flattened."""
    n, channels = x.shape[:2]
    sh = plan.strides[0]
    spatial = x.shape[2:] if x.ndim == 4 else (1, x.shape[2])
    x4 = x.reshape(n, channels, *spatial)
    top, left = plan.begins
    h = min(spatial[0], plan.phase_rows * sh - top)
    w = min(spatial[1], plan.width - left)
    planes = np.zeros((n, channels, sh, plan.plane), x.dtype)
    for phase in range(sh):
        grid = planes[:, :, phase, :plan.phase_rows * plan.width].reshape(n, channels, plan.phase_rows, plan.width)
        first = (phase - top) % sh  # the first input row landing in this plane
        rows = len(range(first, h, sh))
        row = (first + top) // sh
        grid[:, :, row:row + rows, left:left + w] = x4[:, :, first:h:sh, :w]
    return planes


def depthwise(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, plan: DepthwisePlan,
              activation=None) -> np.ndarray:
    """Depthwise convolution of ``x`` (N, C, [H,] W) by ``w`` (C, 1, [kh,] kw), bias and
    activation included; returns a fresh (N, C, *out) array."""
    n, channels = x.shape[:2]
    planes = row_planes(x, plan)
    out_rows, out_cols = plan.out
    sw = plan.strides[1]
    wide, row_length = plan.wide, plan.width // sw
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
                view = source[:, phase, first:first + wide * sw:sw]
                if tap == 0:
                    np.multiply(view, weights[:, tap], out=acc)
                else:
                    np.multiply(view, weights[:, tap], out=scratch)
                    acc += scratch
            if bias is not None:
                acc += bias[start:stop, None]
            result = acc if activation is None else activation.apply_inplace(acc)
            y[image, start:stop] = result.reshape(count, out_rows, row_length)[:, :, :out_cols]
    return y.reshape((n, channels, *plan.out[4 - x.ndim:]))
