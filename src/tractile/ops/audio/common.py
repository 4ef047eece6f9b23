"""What the audio ops share: reading fixed dims and options, checking datum types."""
from __future__ import annotations

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import TypedFact


def known_dim(fact: TypedFact, axis: int, op, what: str) -> int:
    """The length of ``axis`` (negative: from the end), which must be a known integer."""
    if fact.rank == 0 or not -fact.rank <= axis < fact.rank:
        raise AnalysisError(f"{op.name}: {what} needs at least {abs(axis) if axis < 0 else axis + 1} dims, got {fact}")
    dim = fact.shape[axis]
    if not isinstance(dim, int):
        raise AnalysisError(f"{op.name}: {what} must have a known length, got {fact}")
    return dim


def expect_dtype(fact: TypedFact, allowed: tuple[DatumType, ...], op, what: str) -> None:
    if fact.dtype not in allowed:
        names = ", ".join(str(d) for d in allowed)
        raise AnalysisError(f"{op.name}: {what} must be {names}, got {fact}")


def expect_rank(fact: TypedFact, rank: int, op, what: str) -> None:
    if fact.rank != rank:
        raise AnalysisError(f"{op.name}: {what} must have rank {rank}, got {fact}")


def check_range(value: int, low: int, high: int, op, what: str) -> None:
    if not low <= value <= high:
        raise AnalysisError(f"{op.name}: {what} must be in {low}..{high}, got {value}")
