"""Shape and layout ops that move data without arithmetic (quantization passes through).

RESHAPE, SQUEEZE, EXPAND_DIMS, TRANSPOSE, PACK, UNPACK, SPLIT, SPLIT_V.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...dim import volume
from ...errors import AnalysisError, RunError
from ..base import expect_inputs
from .common import TflOp


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise AnalysisError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def resolve_shape(target: tuple, count, what: str = "RESHAPE") -> tuple:
    """A target shape with its single -1 (or none) resolved so the volume is ``count``."""
    if sum(1 for d in target if d == -1) > 1:
        raise AnalysisError(f"{what}: at most one -1 in the new shape {list(target)}")
    if any(d < -1 for d in target):
        raise AnalysisError(f"{what}: negative dimension in the new shape {list(target)}")
    known = 1
    for d in target:
        if d != -1:
            known *= d
    if -1 in target:
        if known == 0 or (isinstance(count, int) and count % known):
            raise AnalysisError(f"{what}: cannot reshape {count} values to {list(target)}")
        return tuple(count // known if d == -1 else d for d in target)
    if isinstance(count, int) and known != count:
        raise AnalysisError(f"{what}: cannot reshape {count} values to {list(target)}")
    return tuple(target)


@dataclass(frozen=True)
class Reshape(TflOp):
    """Reshape to ``shape`` (one -1 allowed); with ``shape`` None the new shape is input 1."""

    shape: tuple | None = None

    def output_facts(self, inputs):
        expect_inputs(inputs, 1 if self.shape is not None else 2, self)
        x = inputs[0]
        target = self.shape
        if target is None:
            value = inputs[1].konst
            if value is None:
                raise AnalysisError("RESHAPE with a shape known only at run time is not supported")
            target = tuple(int(v) for v in value.reshape(-1))
        return [self.fact(0, x.dtype, resolve_shape(target, x.volume))]

    def eval(self, inputs):
        target = self.shape if self.shape is not None else tuple(int(v) for v in inputs[1].reshape(-1))
        x = inputs[0]
        try:
            return [x.reshape(resolve_shape(target, x.size))]
        except AnalysisError as error:
            raise RunError(str(error)) from None


@dataclass(frozen=True)
class Squeeze(TflOp):
    """Drop the given size-1 axes (all size-1 axes when ``axes`` is empty)."""

    axes: tuple = ()

    def _axes(self, shape) -> tuple:
        if not self.axes:
            return tuple(i for i, d in enumerate(shape) if d == 1)
        axes = tuple(sorted({normalize_axis(a, len(shape)) for a in self.axes}))
        for axis in axes:
            if shape[axis] != 1:
                raise AnalysisError(f"SQUEEZE axis {axis} has size {shape[axis]}, not 1")
        return axes

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        axes = self._axes(x.shape)
        return [self.fact(0, x.dtype, tuple(d for i, d in enumerate(x.shape) if i not in axes))]

    def eval(self, inputs):
        x = inputs[0]
        return [x.reshape(tuple(d for i, d in enumerate(x.shape) if i not in self._axes(x.shape)))]


@dataclass(frozen=True)
class ExpandDims(TflOp):
    """Insert a size-1 axis at ``axis`` (negative counts from the end of the result)."""

    axis: int = 0

    def _axis(self, rank: int) -> int:
        return normalize_axis(self.axis, rank + 1, "EXPAND_DIMS axis")

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        axis = self._axis(x.rank)
        return [self.fact(0, x.dtype, (*x.shape[:axis], 1, *x.shape[axis:]))]

    def eval(self, inputs):
        return [np.expand_dims(inputs[0], self._axis(inputs[0].ndim))]


@dataclass(frozen=True)
class Transpose(TflOp):
    """Permute axes."""

    perm: tuple = ()

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if sorted(self.perm) != list(range(x.rank)):
            raise AnalysisError(f"TRANSPOSE permutation {list(self.perm)} does not fit rank {x.rank}")
        return [self.fact(0, x.dtype, tuple(x.shape[p] for p in self.perm))]

    def eval(self, inputs):
        return [np.ascontiguousarray(np.transpose(inputs[0], self.perm))]


@dataclass(frozen=True)
class Pack(TflOp):
    """Stack the inputs along a new ``axis``."""

    axis: int = 0

    def output_facts(self, inputs):
        if not inputs:
            raise AnalysisError("PACK needs at least one input")
        first = inputs[0]
        for fact in inputs[1:]:
            if fact.shape != first.shape or fact.dtype != first.dtype:
                raise AnalysisError(f"PACK inputs differ: {first} and {fact}")
        axis = normalize_axis(self.axis, first.rank + 1, "PACK axis")
        return [self.fact(0, first.dtype, (*first.shape[:axis], len(inputs), *first.shape[axis:]))]

    def eval(self, inputs):
        return [np.stack(inputs, axis=normalize_axis(self.axis, inputs[0].ndim + 1))]


@dataclass(frozen=True)
class Unpack(TflOp):
    """Split along ``axis`` into ``num`` tensors without that axis."""

    num: int = 1
    axis: int = 0

    @property
    def nboutputs(self) -> int:
        return self.num

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        axis = normalize_axis(self.axis, x.rank, "UNPACK axis")
        if x.shape[axis] != self.num:
            raise AnalysisError(f"UNPACK of {self.num} along axis {axis} of {x}")
        shape = x.shape[:axis] + x.shape[axis + 1:]
        return [self.fact(i, x.dtype, shape) for i in range(self.num)]

    def eval(self, inputs):
        x = inputs[0]
        axis = normalize_axis(self.axis, x.ndim)
        return [np.take(x, i, axis=axis) for i in range(self.num)]


@dataclass(frozen=True)
class Split(TflOp):
    """Split along ``axis`` in pieces of ``sizes`` (SPLIT: equal pieces; SPLIT_V: given sizes)."""

    axis: int = 0
    sizes: tuple = ()

    @property
    def nboutputs(self) -> int:
        return len(self.sizes)

    def output_facts(self, inputs):
        x = inputs[0]
        axis = normalize_axis(self.axis, x.rank, "SPLIT axis")
        if any(s < 0 for s in self.sizes) or sum(self.sizes) != x.shape[axis]:
            raise AnalysisError(f"SPLIT sizes {list(self.sizes)} do not add up to axis {axis} of {x}")
        return [self.fact(i, x.dtype, (*x.shape[:axis], size, *x.shape[axis + 1:]))
                for i, size in enumerate(self.sizes)]

    def eval(self, inputs):
        x = inputs[0]
        axis = normalize_axis(self.axis, x.ndim)
        bounds = np.cumsum(self.sizes)[:-1]
        return [np.ascontiguousarray(part) for part in np.split(x, bounds, axis=axis)]


def equal_split(size: int, num: int, what: str = "SPLIT") -> tuple:
    if num <= 0 or size % num:
        raise AnalysisError(f"{what}: {size} does not split in {num} equal parts")
    return (size // num,) * num


def split_v_sizes(size: int, sizes: list[int]) -> tuple:
    """SPLIT_V sizes with one -1 resolved."""
    if sizes.count(-1) > 1:
        raise AnalysisError(f"SPLIT_V: at most one -1 in {sizes}")
    if -1 in sizes:
        rest = size - sum(s for s in sizes if s != -1)
        sizes = [rest if s == -1 else s for s in sizes]
    return tuple(sizes)


__all__ = ["Reshape", "Squeeze", "ExpandDims", "Transpose", "Pack", "Unpack", "Split", "equal_split",
           "split_v_sizes", "resolve_shape", "normalize_axis", "volume"]
