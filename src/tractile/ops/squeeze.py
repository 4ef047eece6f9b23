"""Squeeze and Unsqueeze: size-1 axes removed or inserted (axes given as input 1)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dim import fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .axes import moved_qparams, resolve_axes
from .base import Op, expect_inputs
from .dynrank import shifted_bound
from .nn import normalize_axis


class _UnknownAxes(Exception):
    """Axes given at run time: the output dims are only known then."""


def _axes_of(inputs, index: int, what: str) -> list[int] | None:
    if len(inputs) <= index:
        return None
    fact = inputs[index]
    if fact.konst is None:
        if fact.rank != 1 or not isinstance(fact.shape[0], int):
            raise AnalysisError(f"{what} axes must be a 1-d tensor of known length, got {fact}")
        raise _UnknownAxes()
    return [int(a) for a in fact.konst.ravel()]


@dataclass(frozen=True)
class Squeeze(Op):
    """Remove the size-1 axes listed in input 1 (all size-1 axes if absent)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, (1, 2), self)
        x = inputs[0]
        try:
            axes = _axes_of(inputs, 1, "Squeeze")
        except _UnknownAxes:
            if not x.has_rank:
                return [TypedFact.unknown_rank(x.dtype, x.max_rank)]
            return [TypedFact(x.dtype, [fresh_symbol() for _ in range(x.rank - inputs[1].shape[0])])]
        if not x.has_rank:
            return [TypedFact.unknown_rank(x.dtype, shifted_bound(x, -len(axes or [])))]
        if axes is None:
            axes = [i for i, d in enumerate(x.shape) if d == 1]
        axes = sorted({normalize_axis(a, x.rank, "Squeeze axis") for a in axes})
        for axis in axes:
            if isinstance(x.shape[axis], int) and x.shape[axis] != 1:
                raise AnalysisError(f"cannot squeeze axis {axis} of {x}: its size is {x.shape[axis]}")
        dims = [d for i, d in enumerate(x.shape) if i not in axes]
        fact = TypedFact(x.dtype, dims, qparams=moved_qparams(x, lambda a: a - sum(1 for b in axes if b < a)))
        if x.sym_value is not None:
            fact.sym_value = x.sym_value.reshape([int(d) for d in dims])
        return [fact]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        x = inputs[0]
        if len(inputs) > 1:
            axes = tuple(resolve_axes(inputs[1].ravel().tolist(), x.ndim, "Squeeze axis", RunError, unique=False))
            for axis in axes:
                if x.shape[axis] != 1:
                    raise RunError(f"cannot squeeze axis {axis} of an input of shape {x.shape}: its size is "
                                   f"{x.shape[axis]}")
        else:
            axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
        return [np.squeeze(x, axis=tuple(sorted(set(axes))))]


@dataclass(frozen=True)
class Unsqueeze(Op):
    """Insert size-1 axes at the positions (of the output) listed in input 1."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        x = inputs[0]
        try:
            axes = _axes_of(inputs, 1, "Unsqueeze")
        except _UnknownAxes:
            if not x.has_rank:
                return [TypedFact.unknown_rank(x.dtype, shifted_bound(x, inputs[1].shape[0]))]
            return [TypedFact(x.dtype, [fresh_symbol() for _ in range(x.rank + inputs[1].shape[0])])]
        if not x.has_rank:
            return [TypedFact.unknown_rank(x.dtype, shifted_bound(x, len(axes)))]
        rank = x.rank + len(axes)
        axes = sorted(normalize_axis(a, rank, "Unsqueeze axis") for a in axes)
        if len(set(axes)) != len(axes):
            raise AnalysisError(f"Unsqueeze axes {axes} repeat")
        dims = list(x.shape)
        for axis in axes:
            dims.insert(axis, 1)
        kept = [i for i in range(rank) if i not in axes]
        fact = TypedFact(x.dtype, dims, qparams=moved_qparams(x, kept.__getitem__))
        if x.sym_value is not None:
            fact.sym_value = x.sym_value.reshape([int(d) for d in dims])
        return [fact]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.given(inputs[1].value, lambda s, axes: s.sum_equals_zero(outputs[0].rank, -1 * inputs[0].rank,
                                                                    -int(np.asarray(axes).size)))

    def eval(self, inputs):
        x = inputs[0]
        axes = inputs[1].ravel().tolist()
        return [np.expand_dims(x, tuple(sorted(resolve_axes(axes, x.ndim + len(axes), "Unsqueeze axis", RunError))))]
