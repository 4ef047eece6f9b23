"""Ops that rank or search values: ArgMax/ArgMin, TopK, NonZero, Unique.

Ties are broken by the lowest index (ONNX): stable sorts everywhere. Outputs whose
size depends on the data (NonZero, Unique) get fresh symbols bound at run time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..dim import fresh_symbol, volume
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .axes import resolve_axis, run_scalar, scalar_value, widened
from .base import Op, expect_inputs

I64 = DatumType.I64


@dataclass(frozen=True)
class ArgReduce(Op):
    """Index (``dtype``: i64 or i32) of the largest (``kind="max"``) or smallest value along ``axis``.

    ``select_last_index`` picks the last of equal extremes instead of the first.
    """

    kind: str
    axis: int = 0
    keepdims: bool = True
    select_last_index: bool = False
    dtype: DatumType = I64

    @property
    def name(self) -> str:  # type: ignore[override]
        return "Arg" + self.kind.capitalize()

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        if self.kind not in ("max", "min"):
            raise AnalysisError(f"ArgReduce kind must be max or min, got {self.kind!r}")
        x = inputs[0]
        axis = resolve_axis(self.axis, x.rank, f"{self.name} axis")
        if x.shape[axis] == 0:
            raise AnalysisError(f"{self.name} over axis {axis} of {x}: the axis is empty")
        if self.dtype not in (I64, DatumType.I32):
            raise AnalysisError(f"{self.name} gives i64 or i32 indices, not {self.dtype}")
        shape = list(x.shape)
        if self.keepdims:
            shape[axis] = 1
        else:
            del shape[axis]
        return [TypedFact(self.dtype, shape)]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, self.dtype)
        if self.keepdims:
            s.equals(inputs[0].rank, outputs[0].rank)
        else:
            s.sum_equals_zero(outputs[0].rank, -1 * inputs[0].rank, 1)

    def eval(self, inputs):
        x = widened(inputs[0])
        axis = resolve_axis(self.axis, x.ndim, f"{self.name} axis", RunError)
        if x.shape[axis] == 0:
            raise RunError(f"{self.name} over an empty axis {axis} (input shape {x.shape})")
        find = np.argmax if self.kind == "max" else np.argmin
        if self.select_last_index:
            index = x.shape[axis] - 1 - find(np.flip(x, axis), axis=axis)
        else:
            index = find(x, axis=axis)
        index = np.asarray(index, dtype=self.dtype.np)
        return [np.expand_dims(index, axis) if self.keepdims else index]


def _stable_order(x: np.ndarray, axis: int, largest: bool) -> np.ndarray:
    """Indices sorting ``x`` along ``axis``, ties by the lowest index, descending if ``largest``."""
    if not largest:
        return np.argsort(x, axis=axis, kind="stable")
    size = x.shape[axis]
    # ascending stable sort of the reversed axis, read backwards: descending with lowest index first
    order = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return size - 1 - np.flip(order, axis)


@dataclass(frozen=True)
class TopK(Op):
    """The ``k`` (input 1) largest or smallest values along ``axis``, and their indices (i64).

    Equal values come in index order. The result is always sorted (``sorted=False`` allows any order).
    """

    axis: int = -1
    largest: bool = True
    sorted: bool = True

    @property
    def nboutputs(self) -> int:
        return 2

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        x, k_fact = inputs
        if k_fact.dtype != I64:
            raise AnalysisError(f"TopK's k must be i64, got {k_fact}")
        axis = resolve_axis(self.axis, x.rank, "TopK axis")
        k = scalar_value(k_fact, "TopK's k")
        if k is None:
            k = fresh_symbol()
        elif isinstance(k, int):
            if k < 0:
                raise AnalysisError(f"TopK's k is {k}: it must not be negative")
            if isinstance(x.shape[axis], int) and k > x.shape[axis]:
                raise AnalysisError(f"TopK's k is {k} but axis {axis} of {x} has only {x.shape[axis]} values")
        shape = list(x.shape)
        shape[axis] = k
        return [TypedFact(x.dtype, shape), TypedFact(I64, shape)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(outputs[1].datum_type, I64)
        s.equals_all(inputs[0].rank, outputs[0].rank, outputs[1].rank)

    def eval(self, inputs):
        x = inputs[0]
        k = int(run_scalar(inputs[1], "TopK's k"))
        axis = resolve_axis(self.axis, x.ndim, "TopK axis", RunError)
        if not 0 <= k <= x.shape[axis]:
            raise RunError(f"TopK's k is {k} but axis {axis} of the input (shape {x.shape}) has "
                           f"{x.shape[axis]} values")
        order = _stable_order(widened(x), axis, self.largest)
        indices = np.take(order, np.arange(k), axis=axis).astype(np.int64)
        return [np.take_along_axis(x, indices, axis=axis), indices]


@dataclass(frozen=True)
class NonZero(Op):
    """Indices (i64, shape ``rank x count``) of the non-zero elements, in row-major order."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        count = 0 if 0 in x.shape else fresh_symbol()
        return [TypedFact(I64, (x.rank, count))]

    def rules(self, s, inputs, outputs):
        s.equals(outputs[0].datum_type, I64)
        s.equals(outputs[0].rank, 2)
        s.equals(outputs[0].shape[0], inputs[0].rank)

    def eval(self, inputs):
        x = inputs[0]
        if x.ndim == 0:
            return [np.zeros((0, int(bool(x))), dtype=np.int64)]
        return [np.asarray(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)]


@dataclass(frozen=True)
class Unique(Op):
    """Unique values (or sub-tensors along ``axis``), first-occurrence indices, inverse indices, counts.

    With ``sorted`` the unique entries come in ascending order, else in order of first occurrence.
    """

    axis: int | None = None
    sorted: bool = True

    @property
    def nboutputs(self) -> int:
        return 4

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if self.axis is None:
            total = volume(x.shape)
            count = 0 if total == 0 else fresh_symbol()
            values_shape: list = [count]
        else:
            axis = resolve_axis(self.axis, x.rank, "Unique axis")
            total = x.shape[axis]
            count = 0 if total == 0 else fresh_symbol()
            values_shape = list(x.shape)
            values_shape[axis] = count
        return [TypedFact(x.dtype, values_shape), TypedFact(I64, [count]), TypedFact(I64, [total]),
                TypedFact(I64, [count])]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        for output in outputs[1:]:
            s.equals(output.datum_type, I64)
            s.equals(output.rank, 1)

    def eval(self, inputs):
        x = inputs[0]
        if self.axis is None:
            flat = x.reshape(-1)
            keys = widened(flat)
            axis = 0
        else:
            axis = resolve_axis(self.axis, x.ndim, "Unique axis", RunError)
            flat = x
            moved = np.moveaxis(widened(x), axis, 0)
            keys = moved.reshape(moved.shape[0], -1)
        if keys.shape[0] == 0:
            empty = np.zeros(0, np.int64)
            return [np.take(flat, empty, axis=axis), empty, empty, empty]
        _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True,
                                              axis=None if self.axis is None else 0)
        first, inverse, counts = (np.asarray(a, np.int64).reshape(-1) for a in (first, inverse, counts))
        if not self.sorted:
            order = np.argsort(first, kind="stable")
            position = np.empty_like(order)
            position[order] = np.arange(order.size)
            first, counts, inverse = first[order], counts[order], position[inverse]
        return [np.take(flat, first, axis=axis), first, inverse, counts]
