"""Symbolic values of element-wise ops: shape computations run through binary ops on object
arrays of ints and TDims; these helpers decide signs, apply an op item by item and turn a
result into a fact's value."""
from __future__ import annotations

import numpy as np

from ..dim import TDim
from ..errors import TractileError
from ..fact import TypedFact
from .base import Op


def is_symbolic_array(value: np.ndarray) -> bool:
    """An object array of ints/TDims (a shape computation), as opposed to strings."""
    return value.dtype == object and not any(isinstance(v, (str, bytes)) for v in value.flat)


def dim_signs(value) -> frozenset[int]:
    """The signs (-1, 0, 1) an int or TDim may take; symbols are extents, at least 1."""
    if not isinstance(value, TDim):
        return frozenset({int(np.sign(int(value)))})
    low = value.lower_bound()
    if low is not None:
        return frozenset({1}) if low > 0 else frozenset({0, 1}) if low == 0 else frozenset({-1, 0, 1})
    high = (-value).lower_bound()
    if high is not None:
        return frozenset({-1}) if high > 0 else frozenset({-1, 0}) if high == 0 else frozenset({-1, 0, 1})
    return frozenset({-1, 0, 1})


def undecided(what: str, x, y) -> TractileError:
    return TractileError(f"{what} of {x} and {y} depends on the symbols' values")


def symbolic_apply(fn, *arrays: np.ndarray) -> np.ndarray:
    """``fn`` applied item by item (with broadcasting) to small object arrays."""
    return np.frompyfunc(fn, len(arrays), 1)(*(a.astype(object) for a in arrays))


def value_fact(fact: TypedFact, value: np.ndarray | None) -> TypedFact:
    """``fact`` with a value: symbolic when it holds TDims, else a constant of the fact's type."""
    if value is None:
        return fact
    value = np.asarray(value)
    if value.dtype == object and any(isinstance(v, TDim) for v in value.flat):
        fact.sym_value = value
    else:
        fact.konst = value.astype(fact.dtype.np) if value.dtype != fact.dtype.np else value
    return fact


def symbolic_result(op: Op, facts: list[TypedFact]) -> np.ndarray | None:
    """The op's output on its inputs' known values, when one of them is symbolic (else None)."""
    if all(f.sym_value is None for f in facts):
        return None
    values = [f.known_value() for f in facts]
    if any(v is None for v in values):
        return None
    try:
        return np.asarray(op.eval([v.astype(object) for v in values])[0])
    except Exception:
        return None
