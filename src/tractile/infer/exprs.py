"""What rules talk about: expressions over a node's port facts, and the proxies rules see."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..dim import TDim
from ..errors import AnalysisError
from ..fact import InferenceFact, ShapeFactoid

if TYPE_CHECKING:
    from .rules import Solver

class RuleConflict(AnalysisError):
    """A rule contradicts what is known."""


# expressions ----------------------------------------------------------------------------
class Expr:
    """Something a rule talks about: a datum type, rank, dim, shape, value or constant."""

    def get(self, solver: Solver):
        raise NotImplementedError

    def set(self, solver: Solver, value) -> bool:
        """Record ``value``; return True if it taught something new."""
        raise NotImplementedError

    def __rmul__(self, factor: int) -> Expr:
        return Scaled(self, factor)

    __mul__ = __rmul__

    def __neg__(self) -> Expr:
        return Scaled(self, -1)


class Const(Expr):
    def __init__(self, value):
        self.value = value

    def get(self, solver):
        return self.value

    def set(self, solver, value) -> bool:
        if not _same(self.value, value):
            raise RuleConflict(f"expected {self.value}, found {value}")
        return False

    def __str__(self) -> str:
        return str(self.value)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
    return a == b


class _PortExpr(Expr):
    def __init__(self, port: tuple[str, int]):
        self.port = port

    def where(self) -> str:
        kind, index = self.port
        return f"{'input' if kind == 'in' else 'output'} {index}"


class DatumTypeExpr(_PortExpr):
    def get(self, solver):
        return solver.fact(self.port).dtype

    def set(self, solver, value) -> bool:
        return solver.refine(self.port, InferenceFact(value), f"{self.where()} datum type")

    def __str__(self) -> str:
        return f"{self.where()} datum type"


class RankExpr(_PortExpr):
    def get(self, solver):
        return solver.fact(self.port).rank

    def set(self, solver, value) -> bool:
        if isinstance(value, TDim):  # a rank known only at run time (a shape of run-time length)
            return False
        shape = ShapeFactoid((None,) * int(value), False)
        return solver.refine(self.port, InferenceFact(None, shape), f"{self.where()} rank")

    def __str__(self) -> str:
        return f"{self.where()} rank"


class ShapeExpr(_PortExpr):
    def get(self, solver):
        shape = solver.fact(self.port).shape
        return shape.dims if shape.is_complete() else None

    def set(self, solver, value) -> bool:
        shape = value if isinstance(value, ShapeFactoid) else ShapeFactoid.closed(value)
        return solver.refine(self.port, InferenceFact(None, shape), f"{self.where()} shape")

    def __getitem__(self, axis: int) -> DimExpr:
        return DimExpr(self.port, axis)

    def __str__(self) -> str:
        return f"{self.where()} shape"


class DimExpr(_PortExpr):
    def __init__(self, port, axis: int):
        super().__init__(port)
        self.axis = axis

    def _axis(self, solver) -> int | None:
        if self.axis >= 0:
            return self.axis
        rank = solver.fact(self.port).rank
        return None if rank is None else rank + self.axis

    def get(self, solver):
        axis = self._axis(solver)
        dims = solver.fact(self.port).shape.dims
        return dims[axis] if axis is not None and 0 <= axis < len(dims) else None

    def set(self, solver, value) -> bool:
        axis = self._axis(solver)
        if axis is None:
            return False
        fact = solver.fact(self.port)
        if fact.rank is not None and axis >= fact.rank:
            raise RuleConflict(f"{self} does not exist: rank is {fact.rank}")
        dims = (None,) * axis + (value,)
        return solver.refine(self.port, InferenceFact(None, ShapeFactoid(dims, True)), str(self))

    def __str__(self) -> str:
        return f"{self.where()} dim {self.axis}"


class ValueExpr(_PortExpr):
    def get(self, solver):
        return solver.fact(self.port).value

    def set(self, solver, value) -> bool:
        return solver.refine(self.port, InferenceFact(None, None, np.asarray(value)), f"{self.where()} value")

    def __getitem__(self, index: int) -> ValueItemExpr:
        return ValueItemExpr(self.port, index)

    def __str__(self) -> str:
        return f"{self.where()} value"


class ValueItemExpr(_PortExpr):
    def __init__(self, port, index: int):
        super().__init__(port)
        self.index = index

    def get(self, solver):
        value = solver.fact(self.port).value
        if value is None or value.size <= self.index:
            return None
        item = value.ravel()[self.index]
        return item if isinstance(item, TDim) else item.item() if hasattr(item, "item") else item

    def set(self, solver, value) -> bool:
        known = self.get(solver)
        if known is not None and not _same(known, value):
            raise RuleConflict(f"{self} is {known}, expected {value}")
        return False

    def __str__(self) -> str:
        return f"{self.where()} value[{self.index}]"


class Scaled(Expr):
    """``factor * expr`` for integer-valued expressions (dims, ranks, value items)."""

    def __init__(self, inner: Expr, factor: int):
        self.inner = inner
        self.factor = factor

    def get(self, solver):
        value = self.inner.get(solver)
        return None if value is None else value * self.factor

    def set(self, solver, value) -> bool:
        if isinstance(value, TDim):
            quotient = value.div_exact(self.factor)
        else:
            quotient = value // self.factor if value % self.factor == 0 else None
        if quotient is None:
            raise RuleConflict(f"{value} is not a multiple of {self.factor} ({self})")
        return self.inner.set(solver, quotient)

    def __str__(self) -> str:
        return f"{self.factor}*{self.inner}"


def as_expr(value) -> Expr:
    return value if isinstance(value, Expr) else Const(value)


# proxies: what rules see as inputs[i] / outputs[i] -----------------------------------------
class TensorProxy:
    """``inputs[i]`` in a rule: gives ``datum_type``, ``rank``, ``shape[k]``, ``value[k]``."""

    def __init__(self, port: tuple[str, int]):
        self.port = port
        self.datum_type = DatumTypeExpr(port)
        self.rank = RankExpr(port)
        self.shape = ShapeExpr(port)
        self.value = ValueExpr(port)
