"""Declarative rules over an op's facts, and the solver that applies them.

An op's ``rules(s, inputs, outputs)`` hook states constraints such as::

    s.equals(inputs[0].datum_type, outputs[0].datum_type)
    s.equals(inputs[0].rank, 4)
    s.sum_equals_zero(outputs[0].shape[2], -1 * inputs[0].shape[2], 2)
    s.given(inputs[1].value, lambda s, axes: s.equals(outputs[0].rank, len(axes)))

The solver applies every rule until none makes progress. Rules that cannot be
resolved are fine; rules that contradict the facts raise :class:`RuleConflict`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..datum import DatumType
from ..dim import TDim
from ..errors import AnalysisError
from ..fact import InferenceFact, unify_dim, unify_shape
from ..fact_unify import unify
from .exprs import (  # noqa: F401 - re-exported for ops' rules
    Const,
    DatumTypeExpr,
    DimExpr,
    Expr,
    RankExpr,
    RuleConflict,
    Scaled,
    ShapeExpr,
    TensorProxy,
    ValueExpr,
    ValueItemExpr,
    _same,
    as_expr,
)


# rules ----------------------------------------------------------------------------------------
class _Rule:
    why: str | None = None

    def apply(self, solver: Solver) -> tuple[bool, bool]:
        """Return (progress, done)."""
        raise NotImplementedError


class _Equals(_Rule):
    def __init__(self, exprs: Sequence[Expr], why: str | None):
        self.exprs = list(exprs)
        self.why = why

    def apply(self, solver):
        values = [e.get(solver) for e in self.exprs]
        known = [(e, v) for e, v in zip(self.exprs, values) if v is not None]
        if not known:
            return False, False
        progress = False
        reference_expr, reference = known[0]
        for expr, value in zip(self.exprs, values):
            if value is None:
                progress |= expr.set(solver, reference)
            elif not _compatible(value, reference):
                raise _conflict(self.why, f"{reference_expr} is {_show(reference)} but {expr} is {_show(value)}",
                                reference, value)
            elif isinstance(value, TDim) and isinstance(reference, int):
                progress |= expr.set(solver, reference)
        done = all(e.get(solver) is not None for e in self.exprs)
        return progress, done


def _compatible(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(x is None or y is None or _compatible(x, y) for x, y in zip(a, b))
    if isinstance(a, (TDim, int)) and isinstance(b, (TDim, int)) and not (
            isinstance(a, int) and isinstance(b, int)):
        try:
            unify_dim(a, b)
            return True
        except AnalysisError:
            return False
    return _same(a, b)


def _show(value) -> str:
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _conflict(why: str | None, detail: str, a, b) -> RuleConflict:
    if why is None:
        return RuleConflict(detail)
    return RuleConflict(why.format(_show(a), _show(b), a=_show(a), b=_show(b)))


class _SumEqualsZero(_Rule):
    def __init__(self, terms: Sequence[Expr], why: str | None):
        self.terms = [_as_scaled(as_expr(t)) for t in terms]
        self.why = why

    def apply(self, solver):
        values = [inner.get(solver) for inner, _ in self.terms]
        unknown = [i for i, v in enumerate(values) if v is None]
        if len(unknown) > 1:
            return False, False
        total = 0
        for (_inner, factor), value in zip(self.terms, values):
            if value is not None:
                total = total + value * factor
        if not unknown:
            if total != 0 and not isinstance(total, TDim):
                raise _conflict(self.why, "terms " + " + ".join(str(f"{k}*{e}") for e, k in self.terms)
                                + f" sum to {total}, not 0", total, 0)
            return False, True
        inner, factor = self.terms[unknown[0]]
        target = -total
        if isinstance(target, TDim):
            solved = target.div_exact(factor)
        else:
            solved = target // factor if target % factor == 0 else None
        if solved is None:
            raise _conflict(self.why, f"{inner} would be {target}/{factor}", target, factor)
        return inner.set(solver, solved), True


def _as_scaled(expr: Expr) -> tuple[Expr, int]:
    factor = 1
    while isinstance(expr, Scaled):
        factor *= expr.factor
        expr = expr.inner
    return expr, factor


class _Given(_Rule):
    def __init__(self, exprs: Sequence[Expr], callback: Callable, single: bool):
        self.exprs = list(exprs)
        self.callback = callback
        self.single = single

    def apply(self, solver):
        values = [e.get(solver) for e in self.exprs]
        if any(v is None for v in values):
            return False, False
        if self.single:
            self.callback(solver, values[0])
        else:
            self.callback(solver, *values)
        return True, True


class Solver:
    """Holds the facts of one node's ports and the rules stated over them."""

    def __init__(self, inputs: Sequence[InferenceFact], outputs: Sequence[InferenceFact]):
        self.facts: dict[tuple[str, int], InferenceFact] = {}
        for index, fact in enumerate(inputs):
            self.facts[("in", index)] = fact
        for index, fact in enumerate(outputs):
            self.facts[("out", index)] = fact
        self.inputs = [TensorProxy(("in", i)) for i in range(len(inputs))]
        self.outputs = [TensorProxy(("out", i)) for i in range(len(outputs))]
        self._rules: list[_Rule] = []

    # facts ------------------------------------------------------------------------------
    def fact(self, port) -> InferenceFact:
        try:
            return self.facts[port]
        except KeyError:
            kind, index = port
            raise RuleConflict(f"{'input' if kind == 'in' else 'output'} {index} does not exist") from None

    def refine(self, port, extra: InferenceFact, what: str) -> bool:
        current = self.fact(port)
        try:
            merged = unify(current, extra)
        except AnalysisError as error:
            raise RuleConflict(f"{what}: {error.message}") from None
        if merged == current:
            return False
        self.facts[port] = merged
        return True

    # rule constructors ------------------------------------------------------------------
    def equals(self, a, b, why: str | None = None) -> None:
        self._rules.append(_Equals([as_expr(a), as_expr(b)], why))

    def equals_all(self, *exprs, why: str | None = None) -> None:
        if len(exprs) == 1 and isinstance(exprs[0], (list, tuple)):
            exprs = tuple(exprs[0])
        if len(exprs) > 1:
            self._rules.append(_Equals([as_expr(e) for e in exprs], why))

    def sum_equals_zero(self, *terms, why: str | None = None) -> None:
        self._rules.append(_SumEqualsZero(terms, why))

    def given(self, expr, callback: Callable) -> None:
        """When ``expr`` is known, call ``callback(solver, value)`` to add rules."""
        self._rules.append(_Given([as_expr(expr)], callback, single=True))

    def given_all(self, exprs: Sequence, callback: Callable) -> None:
        """When every expr is known, call ``callback(solver, *values)``."""
        self._rules.append(_Given([as_expr(e) for e in exprs], callback, single=False))

    def equals_shape(self, a: TensorProxy, b: TensorProxy) -> None:
        """The two tensors have the same shape (rank and every dim, known or not)."""
        self._rules.append(_SameShape(a.port, b.port))

    # solving ----------------------------------------------------------------------------
    def solve(self) -> None:
        rules = self._rules
        self._rules = []
        for _ in range(1000):
            progress = False
            remaining = []
            for rule in rules:
                moved, done = rule.apply(self)
                progress |= moved
                if not done:
                    remaining.append(rule)
            remaining += self._rules
            progress |= bool(self._rules)
            self._rules = []
            rules = remaining
            if not progress or not rules:
                return
        raise AnalysisError("rules solver did not reach a fixed point after 1000 rounds")

    def result(self) -> tuple[list[InferenceFact], list[InferenceFact]]:
        inputs = [self.facts[p.port] for p in self.inputs]
        outputs = [self.facts[p.port] for p in self.outputs]
        return inputs, outputs


class _SameShape(_Rule):
    def __init__(self, a, b):
        self.a, self.b = a, b

    def apply(self, solver):
        fa, fb = solver.fact(self.a), solver.fact(self.b)
        try:
            shape = unify_shape(fa.shape, fb.shape)
        except AnalysisError as error:
            raise RuleConflict(f"shapes {fa.shape} and {fb.shape} should be equal: {error.message}") from None
        progress = solver.refine(self.a, InferenceFact(None, shape), "shape")
        progress |= solver.refine(self.b, InferenceFact(None, shape), "shape")
        return progress, shape.is_complete()


def datum_of(value: Any) -> DatumType:
    return value if isinstance(value, DatumType) else DatumType.from_numpy(value)
