"""ONNX sequences: lists of tensors at run time, container facts at analysis time.

A sequence's fact (``TypedFact.container(SEQUENCE, element)``) describes all the
tensors it may hold at once: ``element`` is a partial fact where dims that differ
from one tensor to the next are unknown. Reading a tensor back out (SequenceAt)
gives fresh symbols for those dims. Ops never modify the list they receive.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..dim import fresh_symbol, is_fresh
from ..errors import AnalysisError, RunError
from ..fact import SEQUENCE, TENSOR, InferenceFact, ShapeFactoid, TypedFact
from ..fact_unify import generalize
from .base import Op, expect_inputs
from .nn import normalize_axis


def element_of(fact: TypedFact) -> InferenceFact:
    """What a container learns of a value put into it (fresh dims forgotten, no value)."""
    if fact.kind != TENSOR:
        return InferenceFact.from_typed(fact)
    return InferenceFact(fact.dtype, ShapeFactoid(tuple(None if is_fresh(d) else d for d in fact.shape), False))


def fact_of_element(element: InferenceFact | None, what: str) -> TypedFact:
    """A typed fact for a value taken out of a container: unknown dims become fresh symbols."""
    if element is None:
        raise AnalysisError(f"{what}: the sequence never holds anything")
    if element.kind is not None:
        return InferenceFact.to_typed(element)
    if element.dtype is None:
        raise AnalysisError(f"{what}: the datum type of the tensors it holds is unknown")
    if element.shape.open:
        raise AnalysisError(f"{what}: the rank of the tensors it holds is unknown ({element})")
    return TypedFact(element.dtype, [fresh_symbol() if d is None else d for d in element.shape.dims])


def expect_sequence(fact: TypedFact, what: str) -> InferenceFact | None:
    """The element fact of a sequence input (None if it holds nothing); AnalysisError if it
    is not a sequence."""
    if fact.kind != SEQUENCE:
        raise AnalysisError(f"{what} must be a sequence, got {fact}")
    return fact.element


def _position_fact(fact: TypedFact, what: str) -> None:
    if fact.kind != TENSOR or not fact.dtype.is_integer or fact.rank > 1 or fact.volume != 1:
        raise AnalysisError(f"{what} must be one integer (a scalar), got {fact}")


def _position(value: np.ndarray, low: int, high: int, what: str) -> int:
    position = int(np.asarray(value).reshape(-1)[0])
    if not low <= position <= high:
        raise RunError(f"{what} {position} is out of range [{low}, {high}]")
    return position


def _sequence_value(value, what: str) -> list:
    if not isinstance(value, list):
        raise RunError(f"{what} must be a sequence (a list of tensors), got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class SequenceEmpty(Op):
    """An empty sequence of ``dtype`` tensors."""

    dtype: DatumType = DatumType.F32

    def output_facts(self, inputs):
        expect_inputs(inputs, 0, self)
        return [TypedFact.container(SEQUENCE, None, self.dtype)]

    def eval(self, inputs):
        return [[]]


@dataclass(frozen=True)
class SequenceConstruct(Op):
    """The sequence of its inputs (tensors of one datum type)."""

    def output_facts(self, inputs):
        if not inputs:
            raise AnalysisError("SequenceConstruct needs at least one tensor")
        element = None
        for index, fact in enumerate(inputs):
            if fact.kind != TENSOR:
                raise AnalysisError(f"SequenceConstruct input {index} must be a tensor, got {fact}")
            if fact.dtype != inputs[0].dtype:
                raise AnalysisError(f"SequenceConstruct inputs have different datum types ({inputs[0].dtype} "
                                    f"and {fact.dtype})")
            element = element_of(fact) if element is None else generalize(element, element_of(fact))
        return [TypedFact.container(SEQUENCE, element)]

    def eval(self, inputs):
        return [list(inputs)]


@dataclass(frozen=True)
class SequenceAt(Op):
    """The tensor at position input 1 (negative counts from the end)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        element = expect_sequence(inputs[0], "SequenceAt input 0")
        _position_fact(inputs[1], "SequenceAt position")
        return [fact_of_element(element, "SequenceAt")]

    def eval(self, inputs):
        items = _sequence_value(inputs[0], "SequenceAt input 0")
        return [items[_position(inputs[1], -len(items), len(items) - 1, "SequenceAt position")]]


@dataclass(frozen=True)
class SequenceInsert(Op):
    """Insert input 1 at position input 2 (default: at the end)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, (2, 3), self)
        element = expect_sequence(inputs[0], "SequenceInsert input 0")
        tensor = inputs[1]
        if tensor.kind != TENSOR:
            raise AnalysisError(f"SequenceInsert input 1 must be a tensor, got {tensor}")
        if inputs[0].dtype is not None and inputs[0].dtype != tensor.dtype:
            raise AnalysisError(f"SequenceInsert: a {tensor.dtype} tensor cannot go in a sequence of "
                                f"{inputs[0].dtype} tensors")
        if len(inputs) == 3:
            _position_fact(inputs[2], "SequenceInsert position")
        merged = element_of(tensor) if element is None else generalize(element, element_of(tensor))
        return [TypedFact.container(SEQUENCE, merged)]

    def eval(self, inputs):
        items = list(_sequence_value(inputs[0], "SequenceInsert input 0"))
        position = len(items)
        if len(inputs) == 3:
            position = _position(inputs[2], -len(items), len(items), "SequenceInsert position")
            position += len(items) if position < 0 else 0
        items.insert(position, inputs[1])
        return [items]


@dataclass(frozen=True)
class SequenceErase(Op):
    """Remove the tensor at position input 1 (default: the last one)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, (1, 2), self)
        expect_sequence(inputs[0], "SequenceErase input 0")
        if len(inputs) == 2:
            _position_fact(inputs[1], "SequenceErase position")
        return [inputs[0]]

    def eval(self, inputs):
        items = list(_sequence_value(inputs[0], "SequenceErase input 0"))
        if not items:
            raise RunError("SequenceErase on an empty sequence")
        position = -1
        if len(inputs) == 2:
            position = _position(inputs[1], -len(items), len(items) - 1, "SequenceErase position")
        del items[position]
        return [items]


@dataclass(frozen=True)
class SequenceLength(Op):
    """The number of tensors in a sequence (an i64 scalar)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        expect_sequence(inputs[0], "SequenceLength input")
        return [TypedFact(DatumType.I64, ())]

    def eval(self, inputs):
        return [np.array(len(_sequence_value(inputs[0], "SequenceLength input")), dtype=np.int64)]


@dataclass(frozen=True)
class SplitToSequence(Op):
    """Split input 0 along ``axis`` into a sequence.

    Input 1 (optional) is a scalar chunk size (the last chunk may be shorter) or the
    1-d list of lengths; without it, chunks have size 1 and ``keepdims`` False drops
    the split axis.
    """

    axis: int = 0
    keepdims: bool = True

    def output_facts(self, inputs):
        expect_inputs(inputs, (1, 2), self)
        x = inputs[0]
        if x.kind != TENSOR:
            raise AnalysisError(f"SplitToSequence input must be a tensor, got {x}")
        axis = normalize_axis(self.axis, x.rank)
        dims = list(x.shape)
        if len(inputs) == 1:
            if self.keepdims:
                dims[axis] = 1
            else:
                del dims[axis]
        else:
            split = inputs[1]
            if split.kind != TENSOR or not split.dtype.is_integer or split.rank > 1:
                raise AnalysisError(f"SplitToSequence split must be an integer scalar or 1-d tensor, got {split}")
            dims[axis] = _chunk_dim(split.konst, x.shape[axis])
        return [TypedFact.container(SEQUENCE, InferenceFact(x.dtype, ShapeFactoid(tuple(dims), False)))]

    def eval(self, inputs):
        x = inputs[0]
        axis = normalize_axis(self.axis, x.ndim)
        size = x.shape[axis]
        if len(inputs) == 1:
            pieces = [np.take(x, [i], axis=axis) if self.keepdims else np.take(x, i, axis=axis)
                      for i in range(size)]
            return [pieces]
        split = np.asarray(inputs[1]).astype(np.int64)
        if split.ndim == 0:
            if split <= 0:
                raise RunError(f"SplitToSequence chunk size must be positive, got {int(split)}")
            lengths = [int(split)] * (size // int(split)) + ([size % int(split)] if size % int(split) else [])
        else:
            lengths = split.tolist()
            if any(n < 0 for n in lengths) or sum(lengths) != size:
                raise RunError(f"SplitToSequence lengths {lengths} do not add up to {size} (axis {axis})")
        bounds = np.cumsum([0, *lengths])
        index = [slice(None)] * x.ndim
        pieces = []
        for start, stop in zip(bounds[:-1], bounds[1:]):
            index[axis] = slice(int(start), int(stop))
            pieces.append(x[tuple(index)])
        return [pieces]


def _chunk_dim(split: np.ndarray | None, size):
    """The split axis' dim shared by every chunk, or None when chunks differ (or are unknown)."""
    if split is None:
        return None
    lengths = split.reshape(-1).tolist()
    if split.ndim == 0:
        chunk = lengths[0]
        return chunk if isinstance(size, int) and chunk > 0 and size % chunk == 0 else None
    return lengths[0] if lengths and all(n == lengths[0] for n in lengths) else None


@dataclass(frozen=True)
class ConcatFromSequence(Op):
    """Concatenate a sequence's tensors along ``axis`` (stack them on a new axis with ``new_axis``)."""

    axis: int = 0
    new_axis: bool = False

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        element = fact_of_element(expect_sequence(inputs[0], "ConcatFromSequence input"), "ConcatFromSequence")
        dims = list(element.shape)
        axis = normalize_axis(self.axis, element.rank + self.new_axis)
        if self.new_axis:
            dims.insert(axis, fresh_symbol())
        else:
            if element.rank == 0:
                raise AnalysisError("ConcatFromSequence cannot concatenate scalars (use new_axis=1)")
            dims[axis] = fresh_symbol()
        return [TypedFact(element.dtype, dims)]

    def eval(self, inputs):
        items = _sequence_value(inputs[0], "ConcatFromSequence input")
        if not items:
            raise RunError("ConcatFromSequence on an empty sequence")
        axis = normalize_axis(self.axis, items[0].ndim + self.new_axis)
        try:
            return [np.stack(items, axis=axis) if self.new_axis else np.concatenate(items, axis=axis)]
        except ValueError as error:
            raise RunError(f"ConcatFromSequence: the tensors do not fit together: {error}") from None
