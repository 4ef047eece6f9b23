"""Ops that read entries at indices or under a mask: Gather, GatherElements, GatherND, Compress, OneHot,
and DynamicUpdateSlice (writes a block at indices).

Indices may be negative (counted from the end of their axis); an index outside its axis
is a :class:`RunError` naming it. ``Gather`` also runs on symbolic values, so
``Shape -> Gather`` picks symbolic dims.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..dim import TDim, fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .axes import (
    checked_indices,
    expect_integer,
    moved_qparams,
    resolve_axis,
    run_scalar,
    scalar_value,
    with_known_value,
)
from .base import Op, check_alloc, expect_inputs


@dataclass(frozen=True)
class Gather(Op):
    """Take entries of input 0 along ``axis`` at the (possibly negative) indices of input 1.

    ``batch_dims`` (TensorFlow's): the first axes of data and indices are shared batch axes;
    each batch gathers from its own entries.
    """

    axis: int = 0
    batch_dims: int = 0

    def _batch(self, axis: int, indices_rank: int, error=AnalysisError) -> int:
        batch = self.batch_dims + indices_rank if self.batch_dims < 0 else self.batch_dims
        if not 0 <= batch <= min(axis, indices_rank):
            raise error(f"Gather batch_dims {self.batch_dims} does not fit axis {axis} and indices of rank "
                        f"{indices_rank}")
        return batch

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        data, indices = inputs
        expect_integer(indices, "Gather indices")
        axis = resolve_axis(self.axis, data.rank, "Gather axis")
        batch = self._batch(axis, indices.rank)
        shape = (*data.shape[:axis], *indices.shape[batch:], *data.shape[axis + 1:])
        grown = indices.rank - batch - 1
        qparams = moved_qparams(data, lambda a: a if a < axis else a + grown if a > axis else None)
        fact = TypedFact(data.dtype, shape, qparams=qparams)
        value = data.known_value()
        if value is not None and value.dtype == object and indices.konst is not None and not batch:
            size = data.shape[axis]
            positions = indices.konst.astype(np.int64)
            if positions.size and (positions.min() < -size or positions.max() >= size):
                raise AnalysisError(f"Gather indices {positions.tolist()} are out of range for axis {axis} of {data}")
            with_known_value(fact, np.asarray(np.take(value, positions, axis=axis), dtype=object))
        return [fact]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.sum_equals_zero(outputs[0].rank, -1 * inputs[0].rank, -1 * inputs[1].rank, 1)

    def eval(self, inputs):
        data, indices = inputs
        axis = resolve_axis(self.axis, data.ndim, "Gather axis", RunError)
        positions = checked_indices(indices, data.shape[axis], "Gather")
        batch = self._batch(axis, indices.ndim, RunError)
        if not batch:
            return [np.asarray(np.take(data, positions, axis=axis))]
        if data.shape[:batch] != indices.shape[:batch]:
            raise RunError(f"Gather batch axes differ: data {data.shape}, indices {indices.shape}")
        flat_data = data.reshape((-1,) + data.shape[batch:])
        flat_positions = positions.reshape((-1,) + indices.shape[batch:])
        parts = [np.take(d, i, axis=axis - batch) for d, i in zip(flat_data, flat_positions)]
        shape = data.shape[:axis] + indices.shape[batch:] + data.shape[axis + 1:]
        return [np.stack(parts).reshape(shape) if parts else np.zeros(shape, data.dtype)]


@dataclass(frozen=True)
class GatherElements(Op):
    """``out[i][j][k] = data[index[i][j][k]][j][k]`` (for ``axis`` 0): indices and output share a shape."""

    axis: int = 0

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        data, indices = inputs
        expect_integer(indices, "GatherElements indices")
        if data.rank != indices.rank:
            raise AnalysisError(f"GatherElements data {data} and indices {indices} must have the same rank")
        axis = resolve_axis(self.axis, data.rank, "GatherElements axis")
        for other, (d, i) in enumerate(zip(data.shape, indices.shape)):
            if other != axis and isinstance(d, int) and isinstance(i, int) and i > d:
                raise AnalysisError(f"GatherElements indices {indices} are larger than data {data} on axis {other}")
        return [TypedFact(data.dtype, indices.shape)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals_shape(inputs[1], outputs[0])
        s.equals(inputs[0].rank, inputs[1].rank,
                 why="GatherElements data and indices must have the same rank (ranks {} and {})")

    def eval(self, inputs):
        data, indices = inputs
        axis = resolve_axis(self.axis, data.ndim, "GatherElements axis", RunError)
        window = tuple(slice(None) if a == axis else slice(0, n) for a, n in enumerate(indices.shape))
        positions = checked_indices(indices, data.shape[axis], "GatherElements")
        return [np.take_along_axis(data[window], positions, axis=axis)]


def _gather_nd_shape(data: TypedFact, indices: TypedFact, batch_dims: int) -> list:
    if indices.rank < 1:
        raise AnalysisError(f"GatherND indices must have rank 1 or more, got {indices}")
    depth = indices.shape[-1]
    if not isinstance(depth, int):
        raise AnalysisError(f"GatherND indices need a known last dimension, got {indices}")
    if not 0 <= batch_dims < min(data.rank, indices.rank):
        raise AnalysisError(f"GatherND batch_dims {batch_dims} must be below the ranks of {data} and {indices}")
    if batch_dims + depth > data.rank:
        raise AnalysisError(f"GatherND indices {indices} address {depth} axes past the {batch_dims} batch axes "
                            f"but data {data} has rank {data.rank}")
    for axis in range(batch_dims):
        a, b = data.shape[axis], indices.shape[axis]
        if isinstance(a, int) and isinstance(b, int) and a != b:
            raise AnalysisError(f"GatherND batch axis {axis} differs: data {data}, indices {indices}")
    return [*indices.shape[:-1], *data.shape[batch_dims + depth:]]


@dataclass(frozen=True)
class GatherND(Op):
    """Gather slices of ``data`` addressed by the last axis of ``indices`` (after ``batch_dims`` shared axes)."""

    batch_dims: int = 0

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        data, indices = inputs
        expect_integer(indices, "GatherND indices")
        return [TypedFact(data.dtype, _gather_nd_shape(data, indices, self.batch_dims), qparams=moved_qparams(data))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        data, indices = inputs
        batch = self.batch_dims
        depth = indices.shape[-1]
        batch_count = int(np.prod(data.shape[:batch], dtype=np.int64))
        if indices.shape[:batch] != data.shape[:batch]:
            raise RunError(f"GatherND batch axes differ: data {data.shape}, indices {indices.shape}")
        flat_data = data.reshape(batch_count, *data.shape[batch:])
        flat_indices = indices.reshape(batch_count, -1, depth)
        address = [np.arange(batch_count)[:, None]]
        for column in range(depth):
            address.append(checked_indices(flat_indices[..., column], data.shape[batch + column], "GatherND"))
        gathered = flat_data[tuple(address)]
        return [gathered.reshape(*indices.shape[:-1], *data.shape[batch + depth:])]


@dataclass(frozen=True)
class DynamicUpdateSlice(Op):
    """Input 0 with input 1 written over it from the start indices held by input 2 (one per
    axis, each clamped so the update fits: XLA's and TFLite's DYNAMIC_UPDATE_SLICE)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        data, update, starts = inputs
        expect_integer(starts, "DynamicUpdateSlice start indices")
        if update.dtype != data.dtype or update.rank != data.rank:
            raise AnalysisError(f"DynamicUpdateSlice update {update} must have the type and rank of {data}")
        if starts.rank != 1 or starts.shape[0] != data.rank:
            raise AnalysisError(f"DynamicUpdateSlice needs one start index per axis of {data}, got {starts}")
        for axis, (d, u) in enumerate(zip(data.shape, update.shape)):
            if isinstance(d, int) and isinstance(u, int) and u > d:
                raise AnalysisError(f"DynamicUpdateSlice update {update} is larger than {data} on axis {axis}")
        return [TypedFact(data.dtype, data.shape, qparams=data.qparams)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals_shape(inputs[0], outputs[0])

    def eval(self, inputs):
        data, update, starts = inputs
        starts = [int(v) for v in starts.reshape(-1)]
        if len(starts) != data.ndim or any(u > d for u, d in zip(update.shape, data.shape)):
            raise RunError(f"DynamicUpdateSlice cannot write {update.shape} into {data.shape} from {starts}")
        out = np.array(data, copy=True)
        where = tuple(slice(s, s + u) for s, u in
                      ((min(max(start, 0), d - u), u) for start, d, u in zip(starts, data.shape, update.shape)))
        out[where] = update
        return [out]


@dataclass(frozen=True)
class Compress(Op):
    """Keep the slices along ``axis`` (of the flattened input if None) where the bool condition is true."""

    axis: int | None = None

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        data, condition = inputs
        if condition.rank != 1:
            raise AnalysisError(f"Compress condition must be 1-d, got {condition}")
        if condition.dtype != DatumType.BOOL:
            raise AnalysisError(f"Compress condition must be bool, got {condition}")
        count = fresh_symbol()
        if condition.konst is not None:
            count = int(np.count_nonzero(condition.konst))
        if self.axis is None:
            return [TypedFact(data.dtype, [count])]
        axis = resolve_axis(self.axis, data.rank, "Compress axis")
        shape = list(data.shape)
        shape[axis] = count
        return [TypedFact(data.dtype, shape)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        if self.axis is not None:
            s.equals(inputs[0].rank, outputs[0].rank)

    def eval(self, inputs):
        data, condition = inputs
        source = data.reshape(-1) if self.axis is None else data
        axis = 0 if self.axis is None else resolve_axis(self.axis, data.ndim, "Compress axis", RunError)
        if condition.shape[0] > source.shape[axis]:
            raise RunError(f"Compress condition has {condition.shape[0]} entries for an axis of size "
                           f"{source.shape[axis]}")
        return [np.compress(condition.astype(bool), source, axis=axis)]


@dataclass(frozen=True)
class OneHot(Op):
    """One-hot encoding: inputs indices, depth (scalar) and values ``[off, on]``; the new axis is ``axis``.

    Negative indices count from ``depth``; indices outside ``[-depth, depth)`` give all-off rows.
    """

    axis: int = -1

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        indices, depth_fact, values = inputs
        if values.rank != 1 or values.shape[0] != 2:
            raise AnalysisError(f"OneHot values must hold [off, on], got {values}")
        axis = resolve_axis(self.axis, indices.rank + 1, "OneHot axis")
        depth = scalar_value(depth_fact, "OneHot depth")
        if depth is None:
            depth = fresh_symbol()
        elif not isinstance(depth, TDim):
            depth = int(depth)
            if depth < 1:
                raise AnalysisError(f"OneHot depth is {depth}: it must be positive")
        shape = list(indices.shape)
        shape.insert(axis, depth)
        return [TypedFact(values.dtype, shape)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[2].datum_type, outputs[0].datum_type)
        s.sum_equals_zero(outputs[0].rank, -1 * inputs[0].rank, -1)

    def eval(self, inputs):
        indices, depth, values = inputs
        depth = int(run_scalar(depth, "OneHot depth"))
        if depth < 1:
            raise RunError(f"OneHot depth is {depth}: it must be positive")
        axis = resolve_axis(self.axis, indices.ndim + 1, "OneHot axis", RunError)
        shape = list(indices.shape)
        shape.insert(axis, depth)
        check_alloc(shape, values.dtype, "OneHot")
        positions = indices.astype(np.int64)
        positions = np.where(positions < 0, positions + depth, positions)
        hot = np.expand_dims(positions, axis) == np.arange(depth).reshape([-1] + [1] * (indices.ndim - axis))
        return [np.where(hot, values[1], values[0]).astype(values.dtype, copy=False)]
