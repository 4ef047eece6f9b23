"""Data movement with TFLite semantics: CONCATENATION, PAD/PADV2, STRIDED_SLICE, SLICE, GATHER.

Quantized values pass through unchanged (TFLite requires int8 inputs and outputs to share
their quantization), except uint8 CONCATENATION, which rescales inputs quantized
differently from the output in float32 as TFLite does. PAD fills with the output zero
point (PADV2: with its constant value input).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError, RunError
from ..base import expect_inputs
from ..quantized.common import scale_of, zero_of
from .common import TflOp, check_activation
from .shape import normalize_axis


def _round_half_away_f32(values: np.ndarray) -> np.ndarray:
    return np.where(values >= 0, np.floor(values + np.float32(0.5)), np.ceil(values - np.float32(0.5)))


@dataclass(frozen=True)
class Concatenation(TflOp):
    """Concatenate the inputs along ``axis``."""

    axis: int = 0
    activation: str = "NONE"

    def output_facts(self, inputs):
        if not inputs:
            raise AnalysisError("CONCATENATION needs at least one input")
        check_activation(self.activation)
        if self.activation != "NONE":
            raise AnalysisError("CONCATENATION with a fused activation is not supported (TFLite refuses it)")
        first = inputs[0]
        axis = normalize_axis(self.axis, first.rank, "CONCATENATION axis")
        total = 0
        for index, fact in enumerate(inputs):
            if fact.dtype != first.dtype or fact.rank != first.rank:
                raise AnalysisError(f"CONCATENATION inputs differ: {first} and {fact}")
            for dim in range(first.rank):
                if dim != axis and fact.shape[dim] != first.shape[dim]:
                    raise AnalysisError(f"CONCATENATION inputs {first} and {fact} differ on axis {dim}")
            total = total + fact.shape[axis]
            if first.dtype in (DatumType.I8, DatumType.I16) and self.iq(index) != self.oq(0):
                raise AnalysisError(f"{first.dtype} CONCATENATION inputs must be quantized as the output")
        shape = tuple(total if i == axis else d for i, d in enumerate(first.shape))
        return [self.fact(0, first.dtype, shape)]

    def eval(self, inputs):
        axis = normalize_axis(self.axis, inputs[0].ndim)
        parts = list(inputs)
        if inputs[0].dtype == np.uint8 and self.oq(0) is not None:
            parts = [self._rescaled(part, index) for index, part in enumerate(parts)]
        return [np.concatenate(parts, axis=axis)]

    def _rescaled(self, part: np.ndarray, index: int) -> np.ndarray:
        in_q, out_q = self.iq(index), self.oq(0)
        if in_q is None or (scale_of(in_q) == scale_of(out_q) and zero_of(in_q) == zero_of(out_q)):
            return part
        scale = np.float32(np.float32(scale_of(in_q)) * (np.float32(1) / np.float32(scale_of(out_q))))
        bias = np.float32(np.float32(-zero_of(in_q)) * scale)
        value = _round_half_away_f32((part.astype(np.float32) * scale + bias).astype(np.float32))
        return np.clip(value.astype(np.int64) + zero_of(out_q), 0, 255).astype(np.uint8)


@dataclass(frozen=True)
class Pad(TflOp):
    """Pad with ``pads`` ((before, after) per axis); a second input holds the pad value (PADV2)."""

    pads: tuple = ()
    has_value: bool = False

    def output_facts(self, inputs):
        expect_inputs(inputs, 2 if self.has_value else 1, self)
        x = inputs[0]
        if len(self.pads) != x.rank or any(len(p) != 2 or min(p) < 0 for p in self.pads):
            raise AnalysisError(f"PAD needs non-negative (before, after) pads for each of {x.rank} axes, "
                                f"got {list(self.pads)}")
        if self.has_value:
            value = inputs[1]
            if value.dtype != x.dtype or value.volume != 1:
                raise AnalysisError(f"PADV2 constant value must be one {x.dtype}, got {value}")
            if x.dtype in (DatumType.I8, DatumType.U8, DatumType.I16) and self.iq(1) != self.oq(0):
                raise AnalysisError("PADV2: the constant value must be quantized as the output")
        shape = tuple(d + before + after for d, (before, after) in zip(x.shape, self.pads))
        return [self.fact(0, x.dtype, shape)]

    def eval(self, inputs):
        x = inputs[0]
        if self.has_value:
            value = inputs[1].reshape(-1)[0]
        elif x.dtype.kind in "iu" and self.oq(0) is not None:
            value = zero_of(self.oq(0))
        else:
            value = 0
        out = np.full(tuple(d + a + b for d, (a, b) in zip(x.shape, self.pads)), value, dtype=x.dtype)
        out[tuple(slice(a, a + d) for d, (a, _) in zip(x.shape, self.pads))] = x
        return [out]


def _bit(mask: int, index: int) -> bool:
    return bool(mask & (1 << index))


@dataclass(frozen=True)
class StridedSlice(TflOp):
    """TFLite's STRIDED_SLICE with constant ``begin``, ``end``, ``strides`` and the five masks."""

    begin: tuple = ()
    end: tuple = ()
    strides: tuple = ()
    begin_mask: int = 0
    end_mask: int = 0
    ellipsis_mask: int = 0
    new_axis_mask: int = 0
    shrink_axis_mask: int = 0
    offset: bool = False

    def _dense(self, shape: tuple):
        """Per effective axis: (size, start, stop, stride, begin?, end?, shrink?, new axis?)."""
        count = len(self.begin)
        if not (len(self.end) == len(self.strides) == count):
            raise AnalysisError("STRIDED_SLICE begin, end and strides must have the same length")
        if any(s == 0 for s in self.strides):
            raise AnalysisError("STRIDED_SLICE strides must be non-zero")
        added = sum(1 for i in range(count) if not _bit(self.ellipsis_mask, i) and _bit(self.new_axis_mask, i))
        dims = len(shape) + added
        ellipsis, new_axis = set(), set()
        ellipsis_start, expanded, i = dims, 0, 0
        while i < dims:
            if _bit(self.ellipsis_mask, i):
                ellipsis_start = i
                stop = max(i + 1, min(i + 1 + added + len(shape) - count, dims))
                expanded = stop - ellipsis_start - 1
                ellipsis.update(range(i, stop))
                i = stop
                continue
            if _bit(self.new_axis_mask, i - expanded):
                new_axis.add(i)
            i += 1
        axes, added_axes, added_ellipsis = [], 0, 0
        for i in range(dims):
            if i in ellipsis:
                added_ellipsis = max(0, i - ellipsis_start)
                axes.append((shape[i - added_axes], 0, 0, 1, True, True, False, False))
            elif i in new_axis:
                axes.append((1, 0, 1, 1, False, False, False, True))
                added_axes += 1
            elif i >= count + expanded:
                axes.append((shape[i - added_axes], 0, 0, 1, True, True, False, False))
            else:
                k = i - added_ellipsis
                axes.append((shape[i - added_axes], self.begin[k], self.end[k], self.strides[k],
                             _bit(self.begin_mask, k), _bit(self.end_mask, k), _bit(self.shrink_axis_mask, k),
                             False))
        return axes

    def _ranges(self, shape: tuple):
        ranges = []
        for size, start, stop, stride, begin_masked, end_masked, shrink, new in self._dense(shape):
            if not isinstance(size, int):
                raise AnalysisError("STRIDED_SLICE needs known dims")
            start = start + size if start < 0 else start
            start = min(max(start, 0), size) if stride > 0 else min(max(start, -1), size - 1)
            if begin_masked:
                start = 0 if stride > 0 else size - 1
            if shrink:
                stop = start if start >= size else start + 1
            else:
                stop = stop + start if self.offset else stop
                stop = stop + size if stop < 0 else stop
                stop = min(max(stop, 0), size) if stride > 0 else min(max(stop, -1), size - 1)
                if end_masked:
                    stop = size if stride > 0 else -1
            ranges.append((start, stop, stride, shrink, new))
        return ranges

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        shape = []
        for start, stop, stride, shrink, _ in self._ranges(tuple(x.shape)):
            if shrink:
                continue
            shape.append(len(range(start, stop, stride)))
        return [self.fact(0, x.dtype, tuple(shape))]

    def eval(self, inputs):
        x = inputs[0]
        ranges = self._ranges(x.shape)
        index, final = [], []
        for start, stop, stride, shrink, new in ranges:
            if new:
                index.append(np.newaxis)
                final.append(1)
                continue
            if shrink:
                index.append(slice(start, stop, 1))
                continue
            index.append(slice(start, stop if stop >= 0 else None, stride))
            final.append(len(range(start, stop, stride)))
        return [np.ascontiguousarray(x[tuple(index)]).reshape(final)]


@dataclass(frozen=True)
class Slice(TflOp):
    """SLICE with constant ``begin`` and ``size`` (-1: to the end of the axis)."""

    begin: tuple = ()
    size: tuple = ()

    def _bounds(self, shape):
        if len(self.begin) != len(shape) or len(self.size) != len(shape):
            raise AnalysisError(f"SLICE begin {list(self.begin)} and size {list(self.size)} must have "
                                f"{len(shape)} entries")
        bounds = []
        for dim, start, size in zip(shape, self.begin, self.size):
            stop = dim if size == -1 else start + size
            if start < 0 or size < -1 or (isinstance(dim, int) and stop > dim):
                raise AnalysisError(f"SLICE begin {list(self.begin)} size {list(self.size)} do not fit {list(shape)}")
            bounds.append((start, stop))
        return bounds

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        return [self.fact(0, x.dtype, tuple(stop - start for start, stop in self._bounds(x.shape)))]

    def eval(self, inputs):
        x = inputs[0]
        return [np.ascontiguousarray(x[tuple(slice(a, b) for a, b in self._bounds(x.shape))])]


@dataclass(frozen=True)
class Gather(TflOp):
    """GATHER of ``params`` (input 0) at ``indices`` (input 1) along ``axis``, over ``batch_dims``."""

    axis: int = 0
    batch_dims: int = 0

    def _axes(self, params_rank: int, indices_rank: int) -> tuple[int, int]:
        axis = normalize_axis(self.axis, params_rank, "GATHER axis")
        batch = self.batch_dims + indices_rank if self.batch_dims < 0 else self.batch_dims
        if not 0 <= batch <= min(axis, indices_rank):
            raise AnalysisError(f"GATHER batch_dims {self.batch_dims} does not fit axis {axis} and "
                                f"indices of rank {indices_rank}")
        return axis, batch

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        params, indices = inputs
        if indices.dtype not in (DatumType.I32, DatumType.I64, DatumType.I16):
            raise AnalysisError(f"GATHER indices must be integers, got {indices}")
        axis, batch = self._axes(params.rank, indices.rank)
        shape = (*params.shape[:axis], *indices.shape[batch:], *params.shape[axis + 1:])
        return [self.fact(0, params.dtype, shape)]

    def eval(self, inputs):
        params, indices = inputs
        axis, batch = self._axes(params.ndim, indices.ndim)
        size = params.shape[axis]
        if indices.size and (indices.min() < 0 or indices.max() >= size):
            raise RunError(f"GATHER index out of range [0, {size}) along axis {axis}")
        if batch == 0:
            return [np.take(params, indices.astype(np.int64), axis=axis)]
        batch_shape = params.shape[:batch]
        flat_params = params.reshape((-1,) + params.shape[batch:])
        flat_indices = indices.reshape((-1,) + indices.shape[batch:])
        parts = [np.take(p, i.astype(np.int64), axis=axis - batch) for p, i in zip(flat_params, flat_indices)]
        out = np.stack(parts) if parts else np.empty((0,), params.dtype)
        return [out.reshape(batch_shape + out.shape[1:])]
