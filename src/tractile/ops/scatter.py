"""Ops that write updates into a copy of their data: ScatterElements, ScatterND, TensorScatter.

``reduction`` says how an update meets what is already there: ``none`` (replace; with
repeated indices the last update wins), ``add``, ``mul``, ``max`` or ``min`` (applied
once per update, repeated indices included).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .axes import checked_indices, expect_integer, resolve_axis, widened
from .base import Op, expect_inputs

_REDUCTIONS = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _check_reduction(reduction: str) -> None:
    if reduction != "none" and reduction not in _REDUCTIONS:
        raise AnalysisError(f"scatter reduction {reduction!r} is not one of none, add, mul, max, min")


def _write(data: np.ndarray, address: tuple, updates: np.ndarray, reduction: str) -> np.ndarray:
    if reduction == "none":
        out = data.copy()
        out[address] = updates
        return out
    out = widened(data).copy()
    _REDUCTIONS[reduction].at(out, address, widened(updates).astype(out.dtype, copy=False))
    return out.astype(data.dtype, copy=False)


@dataclass(frozen=True)
class ScatterElements(Op):
    """Inputs data, indices, updates (indices and updates share a shape): ``out[idx[i,j]][j] = upd[i,j]``."""

    axis: int = 0
    reduction: str = "none"

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        _check_reduction(self.reduction)
        data, indices, updates = inputs
        expect_integer(indices, "ScatterElements indices")
        if updates.dtype != data.dtype:
            raise AnalysisError(f"ScatterElements updates {updates} and data {data} differ in datum type")
        if not data.rank == indices.rank == updates.rank:
            raise AnalysisError(f"ScatterElements data {data}, indices {indices} and updates {updates} must have "
                                "the same rank")
        if indices.shape != updates.shape and all(isinstance(d, int) for d in indices.shape + updates.shape):
            raise AnalysisError(f"ScatterElements indices {indices} and updates {updates} differ in shape")
        resolve_axis(self.axis, data.rank, "ScatterElements axis")
        return [TypedFact(data.dtype, data.shape)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[2].datum_type, outputs[0].datum_type)
        s.equals_shape(inputs[0], outputs[0])
        s.equals_all(inputs[0].rank, inputs[1].rank, inputs[2].rank,
                     why="ScatterElements data, indices and updates must have the same rank (ranks {} and {})")

    def eval(self, inputs):
        data, indices, updates = inputs
        axis = resolve_axis(self.axis, data.ndim, "ScatterElements axis", RunError)
        if indices.shape != updates.shape:
            raise RunError(f"ScatterElements indices {indices.shape} and updates {updates.shape} differ in shape")
        if any(i > d for a, (i, d) in enumerate(zip(indices.shape, data.shape)) if a != axis):
            raise RunError(f"ScatterElements indices {indices.shape} do not fit in data {data.shape}")
        address = list(np.ix_(*[np.arange(n) for n in indices.shape])) if indices.ndim else []
        if indices.ndim:
            address[axis] = checked_indices(indices, data.shape[axis], "ScatterElements")
        return [_write(data, tuple(address), updates, self.reduction)]


@dataclass(frozen=True)
class ScatterND(Op):
    """Write ``updates`` at the slices of ``data`` addressed by the last axis of ``indices``."""

    reduction: str = "none"

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        _check_reduction(self.reduction)
        data, indices, updates = inputs
        expect_integer(indices, "ScatterND indices")
        if updates.dtype != data.dtype:
            raise AnalysisError(f"ScatterND updates {updates} and data {data} differ in datum type")
        if indices.rank < 1 or not isinstance(indices.shape[-1], int):
            raise AnalysisError(f"ScatterND indices need rank 1 or more and a known last dimension, got {indices}")
        depth = indices.shape[-1]
        if depth > data.rank:
            raise AnalysisError(f"ScatterND indices {indices} address {depth} axes of data {data}")
        expected = (*indices.shape[:-1], *data.shape[depth:])
        if len(expected) != updates.rank or any(isinstance(a, int) and isinstance(b, int) and a != b
                                                for a, b in zip(expected, updates.shape)):
            raise AnalysisError(f"ScatterND updates {updates} should have shape ({','.join(map(str, expected))})")
        return [TypedFact(data.dtype, data.shape)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[2].datum_type, outputs[0].datum_type)
        s.equals_shape(inputs[0], outputs[0])

    def eval(self, inputs):
        data, indices, updates = inputs
        depth = indices.shape[-1]
        expected = (*indices.shape[:-1], *data.shape[depth:])
        if updates.shape != expected:
            raise RunError(f"ScatterND updates have shape {updates.shape}, expected {expected}")
        address = tuple(checked_indices(indices[..., column], data.shape[column], "ScatterND")
                        for column in range(depth))
        return [_write(data, address, updates, self.reduction)]


@dataclass(frozen=True)
class TensorScatter(Op):
    """KV-cache update: write ``update`` into a copy of ``past_cache`` along ``axis``, from each batch
    entry's write index (input 2, zeros if absent); ``circular`` wraps around the axis."""

    axis: int = -2
    circular: bool = False

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 3), self)
        cache, update = inputs[:2]
        if cache.dtype != update.dtype or cache.rank != update.rank:
            raise AnalysisError(f"TensorScatter cache {cache} and update {update} differ in datum type or rank")
        axis = resolve_axis(self.axis, cache.rank, "TensorScatter axis")
        if axis == 0:
            raise AnalysisError("TensorScatter axis cannot be the batch axis 0")
        for other, (a, b) in enumerate(zip(cache.shape, update.shape)):
            if other != axis and isinstance(a, int) and isinstance(b, int) and a != b:
                raise AnalysisError(f"TensorScatter cache {cache} and update {update} differ on axis {other}")
        if len(inputs) == 3 and (inputs[2].rank != 1 or inputs[2].dtype != DatumType.I64):
            raise AnalysisError(f"TensorScatter write_indices must be a 1-d i64 tensor, got {inputs[2]}")
        return [TypedFact(cache.dtype, cache.shape)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals_shape(inputs[0], outputs[0])

    def eval(self, inputs):
        cache, update = inputs[:2]
        axis = resolve_axis(self.axis, cache.ndim, "TensorScatter axis", RunError)
        batch, capacity, length = cache.shape[0], cache.shape[axis], update.shape[axis]
        starts = inputs[2].astype(np.int64) if len(inputs) == 3 else np.zeros(batch, np.int64)
        if starts.shape != (batch,):
            raise RunError(f"TensorScatter write_indices have shape {starts.shape}, expected ({batch},)")
        positions = starts[:, None] + np.arange(length)[None, :]
        if self.circular:
            positions = positions % capacity if capacity else positions
        elif positions.size and (starts.min() < 0 or positions.max() >= capacity):
            raise RunError(f"TensorScatter writes at {starts.tolist()} + {length} steps past the cache axis of "
                           f"size {capacity}")
        out = cache.copy()
        target = np.moveaxis(out, axis, 1)
        target[np.arange(batch)[:, None], positions] = np.moveaxis(update, axis, 1)
        return [out]
