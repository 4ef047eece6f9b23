"""TensorFlow's TensorLists (what TF2 while loops accumulate into): sequences at run time.

A TensorList is a Python list of arrays, as ONNX sequences are (``ops/sequence.py``), with the
same container facts; a reserved position not yet set holds an :class:`UnsetItem` (an empty
array of the element shape with its unknown dims at 0), read back as zeros of the shape of the list's other tensors. Ops
never modify the list they receive (a set copies the list, not the arrays).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..dim import fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import SEQUENCE, TENSOR, InferenceFact, ShapeFactoid, TypedFact
from ..fact_unify import generalize
from .base import Op, expect_inputs
from .sequence import element_of, expect_sequence, fact_of_element


def _element_from_shape(shape: tuple[int, ...] | None, dtype: DatumType) -> InferenceFact:
    if shape is None:
        return InferenceFact(dtype)
    return InferenceFact(dtype, ShapeFactoid(tuple(None if d < 0 else d for d in shape), False))


def _items(value, what: str) -> list:
    if not isinstance(value, list):
        raise RunError(f"{what} must be a TensorList, got {type(value).__name__}")
    return value


def _index(value, length: int, what: str) -> int:
    index = int(np.asarray(value).reshape(-1)[0])
    if not 0 <= index < length:
        raise RunError(f"{what} {index} is out of range for a TensorList of {length} tensors")
    return index


class UnsetItem(np.ndarray):
    """A position of a TensorList not set yet: an empty placeholder, which the runtime's checks
    of a list against its fact let through (the list's fact describes the tensors set in it)."""


def _unset(shape: tuple[int, ...] | None, dtype: DatumType) -> np.ndarray:
    shape = (0,) if shape is None else tuple(max(d, 0) for d in shape)
    return np.zeros(shape, dtype=dtype.np).view(UnsetItem)


def _filled(item: np.ndarray, shape: tuple[int, ...] | None, dtype: DatumType, what: str) -> np.ndarray:
    if item.size or shape is None or any(d < 0 for d in shape) or not int(np.prod(shape)):
        return item
    return np.zeros(shape, dtype=dtype.np)


@dataclass(frozen=True)
class TensorListReserve(Op):
    """A list of ``num_elements`` (the input; none: an empty list) positions not set yet, for
    ``dtype`` tensors of ``element_shape`` (-1 for unknown dims, None for an unknown rank)."""

    dtype: DatumType
    element_shape: tuple[int, ...] | None = None

    def output_facts(self, inputs):
        expect_inputs(inputs, (0, 1), self)
        if self.element_shape is None:  # what the list will hold is only known once set
            return [TypedFact.container(SEQUENCE, None, self.dtype)]
        return [TypedFact.container(SEQUENCE, _element_from_shape(self.element_shape, self.dtype))]

    def eval(self, inputs):
        count = int(np.asarray(inputs[0]).reshape(-1)[0]) if inputs else 0
        if count < 0:
            raise RunError(f"TensorListReserve of {count} elements")
        return [[_unset(self.element_shape, self.dtype)] * count]


@dataclass(frozen=True)
class TensorListFromTensor(Op):
    """The list of the slices of input 0 along its first axis."""

    def output_facts(self, inputs):
        tensor = inputs[0]
        if tensor.kind != TENSOR or tensor.rank < 1:
            raise AnalysisError(f"TensorListFromTensor needs a tensor of rank 1 or more, got {tensor}")
        dims = tuple(d if isinstance(d, int) else None for d in tensor.shape[1:])
        return [TypedFact.container(SEQUENCE, InferenceFact(tensor.dtype, ShapeFactoid(dims, False)))]

    def eval(self, inputs):
        return [list(np.asarray(inputs[0]))]


@dataclass(frozen=True)
class TensorListSetItem(Op):
    """Input 0 with the tensor at position input 1 replaced by input 2; with ``resize``, a
    position past the end first extends the list (with zeros)."""

    resize: bool = False

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        element = expect_sequence(inputs[0], "TensorListSetItem input 0")
        item = element_of(inputs[2])
        return [TypedFact.container(SEQUENCE, item if element is None else generalize(element, item))]

    def eval(self, inputs):
        items = list(_items(inputs[0], "TensorListSetItem input 0"))
        item = np.asarray(inputs[2])
        wanted = int(np.asarray(inputs[1]).reshape(-1)[0])
        if self.resize and wanted >= len(items):
            items += [np.zeros_like(item)] * (wanted + 1 - len(items))
        items[_index(wanted, len(items), "TensorListSetItem index")] = item
        return [items]


@dataclass(frozen=True)
class TensorListGetItem(Op):
    """The tensor at position input 1 (zeros of ``element_shape`` if never set)."""

    dtype: DatumType
    element_shape: tuple[int, ...] | None = None

    def output_facts(self, inputs):
        element = expect_sequence(inputs[0], "TensorListGetItem input 0")
        return [fact_of_element(element or _element_from_shape(self.element_shape, self.dtype), "TensorListGetItem")]

    def eval(self, inputs):
        items = _items(inputs[0], "TensorListGetItem input 0")
        item = items[_index(inputs[1], len(items), "TensorListGetItem index")]
        return [_filled(item, self.element_shape, self.dtype, "TensorListGetItem")]


@dataclass(frozen=True)
class TensorListStack(Op):
    """The tensors of the list stacked on a new first axis."""

    dtype: DatumType
    element_shape: tuple[int, ...] | None = None

    def output_facts(self, inputs):
        element = expect_sequence(inputs[0], "TensorListStack input 0")
        item = fact_of_element(element or _element_from_shape(self.element_shape, self.dtype), "TensorListStack")
        return [TypedFact(item.dtype, (fresh_symbol(),) + tuple(item.shape))]

    def eval(self, inputs):
        return [_stacked(_items(inputs[0], "TensorListStack input 0"), self.element_shape, self.dtype,
                         "TensorListStack")]


@dataclass(frozen=True)
class TensorListLength(Op):
    """The number of positions of the list (an i32 scalar)."""

    def output_facts(self, inputs):
        expect_sequence(inputs[0], "TensorListLength input")
        return [TypedFact(DatumType.I32, ())]

    def eval(self, inputs):
        return [np.array(len(_items(inputs[0], "TensorListLength input")), dtype=np.int32)]


@dataclass(frozen=True)
class TensorListPushBack(Op):
    """Input 0 with input 1 appended."""

    def output_facts(self, inputs):
        element = expect_sequence(inputs[0], "TensorListPushBack input 0")
        item = element_of(inputs[1])
        return [TypedFact.container(SEQUENCE, item if element is None else generalize(element, item))]

    def eval(self, inputs):
        return [list(_items(inputs[0], "TensorListPushBack input 0")) + [np.asarray(inputs[1])]]


@dataclass(frozen=True)
class TensorListElementShape(Op):
    """The shape of the list's tensors (``dtype`` integers): the first set one, else ``element_shape``."""

    dtype: DatumType = DatumType.I32
    element_shape: tuple[int, ...] | None = None

    def output_facts(self, inputs):
        element = expect_sequence(inputs[0], "TensorListElementShape input")
        rank = element.rank if element is not None and element.rank is not None else None
        if rank is None and self.element_shape is not None:
            rank = len(self.element_shape)
        return [TypedFact(self.dtype, (rank if rank is not None else fresh_symbol(),))]

    def eval(self, inputs):
        items = _items(inputs[0], "TensorListElementShape input")
        known = next((i for i in items if i.size), None)
        shape = known.shape if known is not None else self.element_shape
        if shape is None:
            raise RunError("TensorListElementShape: the element shape is not known")
        return [np.asarray(shape, dtype=self.dtype.np)]


def _stacked(items: list, shape: tuple[int, ...] | None, dtype: DatumType, what: str) -> np.ndarray:
    known = next((i for i in items if i.size), None)
    shape = tuple(known.shape) if known is not None else shape
    if not items:
        if shape is None or any(d < 0 for d in shape):
            raise RunError(f"{what} of no tensors whose element shape is not fully known")
        return np.zeros((0,) + tuple(shape), dtype=dtype.np)
    return np.stack([_filled(i, shape, dtype, what) for i in items])


@dataclass(frozen=True)
class TensorListGather(Op):
    """The tensors at the positions input 1 names, stacked on a new first axis."""

    dtype: DatumType
    element_shape: tuple[int, ...] | None = None

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        element = expect_sequence(inputs[0], "TensorListGather input 0")
        item = fact_of_element(element or _element_from_shape(self.element_shape, self.dtype), "TensorListGather")
        if inputs[1].kind != TENSOR or inputs[1].rank != 1 or not inputs[1].dtype.is_integer:
            raise AnalysisError(f"TensorListGather's indices must be a vector of integers, got {inputs[1]}")
        return [TypedFact(item.dtype, (inputs[1].shape[0],) + tuple(item.shape))]

    def eval(self, inputs):
        items = _items(inputs[0], "TensorListGather input 0")
        picked = [items[_index(i, len(items), "TensorListGather index")] for i in np.asarray(inputs[1]).reshape(-1)]
        return [_stacked(picked, self.element_shape, self.dtype, "TensorListGather")]


@dataclass(frozen=True)
class TensorListScatterIntoExistingList(Op):
    """Input 0 with position ``indices[i]`` (input 2) set to ``tensor[i]`` (input 1), the list
    extended when an index is past its end."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        element = expect_sequence(inputs[0], "TensorListScatterIntoExistingList input 0")
        tensor = inputs[1]
        if tensor.kind != TENSOR or tensor.rank < 1:
            raise AnalysisError(f"TensorListScatterIntoExistingList needs a tensor of rank 1 or more, got {tensor}")
        item = InferenceFact(tensor.dtype, ShapeFactoid(
            tuple(d if isinstance(d, int) else None for d in tensor.shape[1:]), False))
        return [TypedFact.container(SEQUENCE, item if element is None else generalize(element, item))]

    def eval(self, inputs):
        items = list(_items(inputs[0], "TensorListScatterIntoExistingList input 0"))
        tensor = np.asarray(inputs[1])
        indices = [int(i) for i in np.asarray(inputs[2]).reshape(-1)]
        if len(indices) != len(tensor):
            raise RunError(f"TensorListScatterIntoExistingList: {len(indices)} indices for {len(tensor)} tensors")
        if indices and min(indices) < 0:
            raise RunError(f"TensorListScatterIntoExistingList: negative index {min(indices)}")
        if indices and max(indices) >= len(items):
            items += [np.zeros((0,), tensor.dtype)] * (max(indices) + 1 - len(items))
        for index, item in zip(indices, tensor):
            items[index] = item
        return [items]


@dataclass(frozen=True)
class TensorListConcat(Op):
    """The list's tensors concatenated along their first axis, and each one's length (int64)."""

    dtype: DatumType
    element_shape: tuple[int, ...] | None = None

    @property
    def nboutputs(self) -> int:
        return 2

    def output_facts(self, inputs):
        element = expect_sequence(inputs[0], "TensorListConcat input 0")
        item = fact_of_element(element or _element_from_shape(self.element_shape, self.dtype), "TensorListConcat")
        if item.rank < 1:
            raise AnalysisError("TensorListConcat needs tensors of rank 1 or more")
        return [TypedFact(item.dtype, (fresh_symbol(),) + tuple(item.shape[1:])),
                TypedFact(DatumType.I64, (fresh_symbol(),))]

    def eval(self, inputs):
        items = _items(inputs[0], "TensorListConcat input 0")
        if not items:
            shape = self.element_shape
            if shape is None or any(d < 0 for d in shape[1:]):
                raise RunError("TensorListConcat of an empty list whose element shape is not fully known")
            return [np.zeros((0,) + tuple(shape[1:]), self.dtype.np), np.zeros(0, np.int64)]
        items = [_filled(i, self.element_shape, self.dtype, "TensorListConcat") for i in items]
        try:
            joined = np.concatenate(items, axis=0)
        except ValueError as error:
            raise RunError(f"TensorListConcat: the list's tensors do not concatenate ({error})") from None
        return [joined, np.array([len(i) for i in items], np.int64)]


@dataclass(frozen=True)
class TensorListSplit(Op):
    """The list of the pieces of input 0 along its first axis, of the lengths input 1 gives."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        tensor = inputs[0]
        if tensor.kind != TENSOR or tensor.rank < 1:
            raise AnalysisError(f"TensorListSplit needs a tensor of rank 1 or more, got {tensor}")
        dims = (None,) + tuple(d if isinstance(d, int) else None for d in tensor.shape[1:])
        return [TypedFact.container(SEQUENCE, InferenceFact(tensor.dtype, ShapeFactoid(dims, False)))]

    def eval(self, inputs):
        tensor = np.asarray(inputs[0])
        lengths = [int(n) for n in np.asarray(inputs[1]).reshape(-1)]
        if any(n < 0 for n in lengths) or sum(lengths) != len(tensor):
            raise RunError(f"TensorListSplit: lengths {lengths} do not add up to the tensor's {len(tensor)} rows")
        bounds = np.cumsum([0] + lengths)
        return [[tensor[a:b] for a, b in zip(bounds[:-1], bounds[1:])]]
