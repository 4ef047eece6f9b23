"""Shapes of values whose rank is only known at run time (see ``TypedFact.unknown_rank``).

Such values appear where a rank depends on data: an If whose branches yield different
ranks, a Reshape to a shape whose length is a run-time value. Ops that can reason without
the rank (element-wise ones, Shape, Size, Squeeze, Unsqueeze, Reshape, If) use these
helpers; any other op that reads the rank raises :class:`~tractile.errors.UnknownRankError`.
"""
from __future__ import annotations

from collections.abc import Sequence

from ..datum import DatumType
from ..dim import fresh_symbol
from ..fact import TypedFact


def all_ranked(facts: Sequence[TypedFact]) -> bool:
    """True when every tensor among ``facts`` has a known rank (the usual case)."""
    return all(f.has_rank for f in facts if f.is_tensor)


def rank_bound(fact: TypedFact) -> int | None:
    """The rank, or a bound on it, or None when nothing bounds it."""
    return fact.rank if fact.has_rank else fact.max_rank


def shifted_bound(fact: TypedFact, delta: int) -> int | None:
    """The bound on the rank of ``fact`` changed by ``delta`` (Squeeze, Unsqueeze)."""
    bound = rank_bound(fact)
    return None if bound is None else max(bound + delta, 0)


def broadcast_fact(dtype: DatumType, facts: Sequence[TypedFact]) -> TypedFact:
    """The fact of a broadcast of ``facts`` some of which have no known rank.

    When the operands of known rank reach at least as far as every other operand can, the
    rank is known: an axis keeps a known dim other than 1 (an unknown operand must be 1 or
    equal there) and gets a fresh symbol otherwise.
    """
    known = [f for f in facts if f.has_rank]
    unknown = [f for f in facts if not f.has_rank]
    bounds = [f.max_rank for f in unknown]
    rank = max((f.rank for f in known), default=0)
    if any(b is None for b in bounds) or max(bounds, default=0) > rank:
        top = None if any(b is None for b in bounds) else max(max(bounds), rank)
        return TypedFact.unknown_rank(dtype, top)
    from .broadcast import broadcast_shapes

    shape = broadcast_shapes(*(f.shape for f in known))
    reach = max(bounds, default=0)
    dims = [d if axis < rank - reach or (isinstance(d, int) and d != 1) else fresh_symbol()
            for axis, d in enumerate(shape)]
    return TypedFact(dtype, dims)
