"""Helpers shared by the array, indexing and reduction ops: axes, indices and value reading.

Analysis-time checks raise :class:`AnalysisError`, run-time checks :class:`RunError`
(pass ``error=RunError``), so a bad axis or index always names what is wrong.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..datum import DatumType
from ..dim import TDim
from ..errors import AnalysisError, RunError, TractileError
from ..fact import TypedFact, is_symbolic_value


def resolve_axis(axis: int, rank: int, what: str, error: type[TractileError] = AnalysisError) -> int:
    """``axis`` in ``[-rank, rank)`` mapped to ``[0, rank)``; ``error`` naming ``what`` otherwise."""
    axis = int(axis)
    if not -rank <= axis < rank:
        raise error(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def resolve_axes(axes: Iterable[int], rank: int, what: str, error: type[TractileError] = AnalysisError,
                 unique: bool = True) -> list[int]:
    """Every axis resolved; with ``unique``, a repeated axis is an error."""
    resolved = [resolve_axis(a, rank, what, error) for a in axes]
    if unique and len(set(resolved)) != len(resolved):
        raise error(f"{what}s {list(axes)} repeat an axis")
    return resolved


def int_values(fact: TypedFact) -> list | None:
    """The items of an integer input known at analysis time (ints or TDims), or None."""
    value = fact.known_value()
    if value is None:
        return None
    return [v if isinstance(v, TDim) else int(v) for v in np.asarray(value).ravel().tolist()]


def scalar_value(fact: TypedFact, what: str):
    """The single item of a scalar (or 1-element) input known at analysis time, or None."""
    if fact.rank > 1 or (fact.rank == 1 and fact.shape[0] != 1):
        raise AnalysisError(f"{what} must be a scalar or a 1-element tensor, got {fact}")
    value = fact.known_value()
    if value is None:
        return None
    item = np.asarray(value).reshape(-1)[0]
    return item if isinstance(item, TDim) else item.item() if hasattr(item, "item") else item


def run_scalar(value: np.ndarray, what: str):
    """The single item of a scalar (or 1-element) run-time input."""
    if value.size != 1:
        raise RunError(f"{what} must hold exactly one value, got shape {value.shape}")
    return value.reshape(-1)[0]


def with_known_value(fact: TypedFact, value) -> TypedFact:
    """Attach a value computed during analysis: ``sym_value`` if it holds TDims, else ``konst``."""
    if value is None:
        return fact
    value = np.asarray(value)
    shape = [int(d) for d in fact.shape]
    if value.dtype != object:
        fact.konst = value.astype(fact.dtype.np, copy=False).reshape(shape)
    elif is_symbolic_value(value):
        fact.sym_value = value.reshape(shape)
    else:
        fact.konst = np.asarray(value.tolist(), dtype=fact.dtype.np).reshape(shape)
    return fact


def expect_integer(fact: TypedFact, what: str) -> None:
    """AnalysisError unless ``fact`` holds integers (i32 or i64 unless said otherwise)."""
    if not fact.dtype.is_integer:
        raise AnalysisError(f"{what} must be an integer tensor, got {fact}")


def checked_indices(indices: np.ndarray, size: int, what: str) -> np.ndarray:
    """Indices in ``[-size, size)`` as non-negative int64; RunError naming the first bad one."""
    indices = np.asarray(indices).astype(np.int64, copy=False)
    if indices.size:
        bad = (indices < -size) | (indices >= size)
        if bad.any():
            first = int(indices[bad].ravel()[0])
            raise RunError(f"{what}: index {first} is out of range for a dimension of size {size}")
    return np.where(indices < 0, indices + size, indices)


def is_low_precision_float(dtype: np.dtype) -> bool:
    """True for floats NumPy computes badly or not at all (f16, bf16, the f8 family)."""
    if dtype.kind == "f" and dtype.itemsize >= 4:
        return False
    try:
        return DatumType.from_numpy(dtype).is_float
    except TractileError:
        return False


def widened(x: np.ndarray) -> np.ndarray:
    """``x`` in f32 if it is a low-precision float, else unchanged."""
    return x.astype(np.float32) if is_low_precision_float(x.dtype) else x


def moved_qparams(fact: TypedFact, axis_map=None):
    """The quantization an op that only moves values keeps from input ``fact``.

    Per-tensor quantization is kept as is. Per-axis quantization follows its axis through
    ``axis_map`` (input axis -> output axis, or None when the op reorders or drops that axis's
    entries); without a map, or when the axis does not survive, it is dropped."""
    qparams = fact.qparams
    if qparams is None or qparams.axis is None:
        return qparams
    moved = axis_map(qparams.axis) if axis_map is not None else None
    if moved is None:
        return None
    from ..fact import QParams

    return QParams(qparams.scale, qparams.zero_point, moved)


def same_qparams(facts) -> object:
    """The quantization shared by every fact (None when they differ or none is quantized)."""
    first = facts[0].qparams
    return first if all(f.qparams == first for f in facts[1:]) else None
