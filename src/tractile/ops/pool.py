"""Pooling over the spatial axes of N,C,... tensors."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AnalysisError
from ..fact import TypedFact
from .base import Op, expect_inputs
from .window import Window, pad_spatial, taps


def _pool_facts(op, inputs, window: Window):
    expect_inputs(inputs, 1, op)
    x = inputs[0]
    if x.rank != window.rank + 2:
        raise AnalysisError(f"{op.name} with a {window.rank}-d kernel needs a rank {window.rank + 2} input, got {x}")
    return TypedFact(x.dtype, (*x.shape[:2], *window.output_dims(x.shape[2:])))


def _lowest(dtype: np.dtype):
    if dtype.kind == "f":
        return -np.inf
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return np.asarray(-np.inf).astype(dtype)


@dataclass(frozen=True)
class MaxPool(Op):
    window: Window

    def output_facts(self, inputs):
        return [_pool_facts(self, inputs, self.window)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)
        s.equals(inputs[0].shape[0], outputs[0].shape[0])
        s.equals(inputs[0].shape[1], outputs[0].shape[1])

    def eval(self, inputs):
        x = inputs[0]
        begins, ends, out = self.window.concrete_pads(x.shape[2:])
        xp = pad_spatial(x, begins, ends, _lowest(x.dtype))
        y = None
        for _, view in taps(xp, self.window, out):
            if y is None:
                y = view.copy()
            else:
                np.maximum(y, view, out=y)
        return [y]


@dataclass(frozen=True)
class AveragePool(Op):
    window: Window
    count_include_pad: bool = False

    def output_facts(self, inputs):
        return [_pool_facts(self, inputs, self.window)]

    rules = MaxPool.rules

    def eval(self, inputs):
        x = inputs[0]
        spatial = x.shape[2:]
        begins, ends, out = self.window.concrete_pads(spatial)
        compute_type = np.float32 if x.dtype == np.float16 else x.dtype
        xp = pad_spatial(x.astype(compute_type, copy=False), begins, ends, 0)
        total = np.zeros((*x.shape[:2], *out), dtype=compute_type)
        for _, view in taps(xp, self.window, out):
            total += view
        counts = self._counts(spatial, begins, ends, out)
        return [(total / counts.astype(compute_type)).astype(x.dtype, copy=False)]

    def _counts(self, spatial, begins, ends, out) -> np.ndarray:
        """Elements each window averages: real ones, plus explicit pads if count_include_pad."""
        mask = np.ones(spatial, dtype=np.float64)[None, None]
        if self.count_include_pad:
            explicit = [self.window.explicit_pads(a) for a in range(self.window.rank)]
            if self.window.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
                explicit = list(zip(begins, ends))
            mask = pad_spatial(mask, [b for b, _ in explicit], [e for _, e in explicit], 1.0)
            extra_begin = [b - e[0] for b, e in zip(begins, explicit)]
            extra_end = [e - x[1] for e, x in zip(ends, explicit)]
            mask = pad_spatial(mask, extra_begin, extra_end, 0.0)
        else:
            mask = pad_spatial(mask, begins, ends, 0.0)
        counts = np.zeros(out, dtype=np.float64)[None, None]
        for _, view in taps(mask, self.window, out):
            counts = counts + view
        return np.maximum(counts, 1.0)


@dataclass(frozen=True)
class GlobalPool(Op):
    """Reduce every spatial axis to 1 (``mode``: avg or max)."""

    mode: str = "avg"

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if x.rank < 3:
            raise AnalysisError(f"{self.name} needs an N,C,... input of rank >= 3, got {x}")
        return [TypedFact(x.dtype, (*x.shape[:2], *([1] * (x.rank - 2))))]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)
        s.equals(inputs[0].shape[0], outputs[0].shape[0])
        s.equals(inputs[0].shape[1], outputs[0].shape[1])

    def eval(self, inputs):
        x = inputs[0]
        axes = tuple(range(2, x.ndim))
        if self.mode == "max":
            return [np.max(x, axis=axes, keepdims=True)]
        return [np.mean(x, axis=axes, keepdims=True, dtype=np.float32 if x.dtype == np.float16 else None)
                .astype(x.dtype, copy=False)]
