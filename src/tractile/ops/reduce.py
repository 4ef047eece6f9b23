"""Reductions over axes (ReduceMean, ReduceSum, ... with ONNX's keepdims and axes rules)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dim import fresh_symbol
from ..errors import AnalysisError
from ..fact import TypedFact
from .base import Op, expect_inputs
from .nn import normalize_axis

_REDUCERS = {
    "mean": lambda x, axes, keep: np.mean(x, axis=axes, keepdims=keep),
    "sum": lambda x, axes, keep: np.sum(x, axis=axes, keepdims=keep),
    "max": lambda x, axes, keep: np.max(x, axis=axes, keepdims=keep) if x.size else _empty(x, axes, keep, "max"),
    "min": lambda x, axes, keep: np.min(x, axis=axes, keepdims=keep) if x.size else _empty(x, axes, keep, "min"),
    "prod": lambda x, axes, keep: np.prod(x, axis=axes, keepdims=keep),
}


def _empty(x, axes, keep, kind):
    shape = np.sum(np.zeros(x.shape, np.float32), axis=axes, keepdims=keep).shape
    if x.dtype.kind == "f":
        return np.full(shape, -np.inf if kind == "max" else np.inf, dtype=x.dtype)
    info = np.iinfo(x.dtype)
    return np.full(shape, info.min if kind == "max" else info.max, dtype=x.dtype)


_RUNTIME_AXES = ("runtime",)


@dataclass(frozen=True)
class Reduce(Op):
    """Reduce with ``reducer`` over the axes held by input 1 (or ``axes``, or all axes).

    ``noop_with_empty_axes``: with no axes given, return the input unchanged.
    """

    reducer: str
    axes: tuple[int, ...] | None = None
    keepdims: bool = True
    noop_with_empty_axes: bool = False

    @property
    def name(self) -> str:  # type: ignore[override]
        return "Reduce" + self.reducer.capitalize()

    def _axes(self, rank: int, inputs) -> tuple[int, ...] | None:
        axes = self.axes
        if len(inputs) > 1:
            value = inputs[1] if isinstance(inputs[1], np.ndarray) else inputs[1].konst
            if value is None:
                return _RUNTIME_AXES
            axes = tuple(int(a) for a in value.ravel())
        if not axes:
            return None if self.noop_with_empty_axes else tuple(range(rank))
        return tuple(sorted({normalize_axis(a, rank, f"{self.name} axis") for a in axes}))

    def output_facts(self, inputs):
        expect_inputs(inputs, (1, 2), self)
        if self.reducer not in _REDUCERS:
            raise AnalysisError(f"unknown reducer {self.reducer!r}")
        x = inputs[0]
        axes = self._axes(x.rank, inputs)
        if axes is _RUNTIME_AXES:
            count = inputs[1].shape[0] if inputs[1].rank == 1 else None
            if not isinstance(count, int):
                raise AnalysisError(f"{self.name} axes must be a 1-d tensor of known length, got {inputs[1]}")
            if self.keepdims or (count == 0 and self.noop_with_empty_axes):
                rank = x.rank
            else:
                rank = x.rank - count if count else 0
            return [TypedFact(x.dtype, [fresh_symbol() for _ in range(rank)])]
        if axes is None:
            return [TypedFact(x.dtype, x.shape)]
        if self.keepdims:
            shape = [1 if i in axes else d for i, d in enumerate(x.shape)]
        else:
            shape = [d for i, d in enumerate(x.shape) if i not in axes]
        return [TypedFact(x.dtype, shape)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        if self.keepdims:
            s.equals(inputs[0].rank, outputs[0].rank)

    def eval(self, inputs):
        x = inputs[0]
        axes = self._axes(x.ndim, inputs)
        if axes is None:
            return [x]
        work = x.astype(np.float32) if x.dtype == np.float16 and self.reducer in ("mean", "sum") else x
        result = _REDUCERS[self.reducer](work, axes, self.keepdims)
        return [np.asarray(result).astype(x.dtype, copy=False)]

    def cost(self, inputs):
        return {"flops": inputs[0].volume}
