"""Symbolic dimensions.

A dimension (:data:`Dim`) is a plain ``int`` when it is known, or a :class:`TDim` when it
involves symbols (``N``, ``T``...). ``TDim`` keeps a canonical form, a sum of
integer-weighted products of atoms, where an atom is a symbol or the floor division
of an expression by a positive integer. Arithmetic that simplifies to a constant
gives back an ``int``, so ``T - T + 3 == 3`` holds with a real ``int``.
"""
from __future__ import annotations

import contextvars
import itertools
import re
from collections.abc import Iterable, Mapping

from .errors import TractileError

#: the most terms the canonical form of one dimension may have: more is a hostile or broken
#: shape expression (a product of n sums expands to 2**n terms), refused rather than computed
MAX_DIM_TERMS = 4096


class DimensionTooComplex(TractileError):
    """A symbolic dimension whose expression is too deep or too large to compute with."""


class _FloorDiv:
    """Atom: ``floor(num / den)`` where ``num`` is symbolic and ``den > 1``."""

    __slots__ = ("num", "den", "_key")

    def __init__(self, num: TDim, den: int):
        self.num = num
        self.den = den
        self._key = (1, str(num), den)

    def __eq__(self, other) -> bool:
        return isinstance(other, _FloorDiv) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        return f"({self.num})/{self.den}"


Atom = str | _FloorDiv


def _atom_key(atom: Atom):
    return (0, atom) if isinstance(atom, str) else atom._key


class TDim:
    """A symbolic integer: a canonical polynomial over symbols and floor divisions."""

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: tuple):
        # terms: sorted tuple of (monomial, coefficient); monomial: sorted tuple of atoms
        self.terms = terms
        self._hash = hash(terms)

    # construction -------------------------------------------------------------------
    @staticmethod
    def symbol(name: str) -> TDim:
        return TDim((((name,), 1),))

    @staticmethod
    def _from_dict(terms: dict) -> Dim:
        items = [(mono, coef) for mono, coef in terms.items() if coef != 0]
        if not items:
            return 0
        if len(items) == 1 and items[0][0] == ():
            return items[0][1]
        items.sort(key=lambda item: [_atom_key(a) for a in item[0]])
        return TDim(tuple(items))

    def _as_dict(self) -> dict:
        return dict(self.terms)

    # arithmetic --------------------------------------------------------------------
    def __add__(self, other) -> Dim:
        other = _lift(other)
        if other is NotImplemented:
            return other
        terms = self._as_dict()
        for mono, coef in _terms_of(other):
            terms[mono] = terms.get(mono, 0) + coef
        return TDim._from_dict(terms)

    __radd__ = __add__

    def __neg__(self) -> Dim:
        return TDim._from_dict({mono: -coef for mono, coef in self.terms})

    def __sub__(self, other) -> Dim:
        other = _lift(other)
        if other is NotImplemented:
            return other
        return self + (-other)

    def __rsub__(self, other) -> Dim:
        return (-self) + other

    def __mul__(self, other) -> Dim:
        other = _lift(other)
        if other is NotImplemented:
            return other
        terms: dict = {}
        other_terms = _terms_of(other)
        if len(self.terms) * len(other_terms) > MAX_DIM_TERMS:
            raise DimensionTooComplex(f"the product of two dimensions of {len(self.terms)} and {len(other_terms)} "
                                      f"terms expands to more than {MAX_DIM_TERMS} terms")
        for mono_a, coef_a in self.terms:
            for mono_b, coef_b in other_terms:
                mono = tuple(sorted(mono_a + mono_b, key=_atom_key))
                terms[mono] = terms.get(mono, 0) + coef_a * coef_b
        return TDim._from_dict(terms)

    __rmul__ = __mul__

    def __floordiv__(self, other) -> Dim:
        if isinstance(other, TDim):
            exact = self.div_exact(other)
            if exact is None:
                raise TractileError(f"cannot divide {self} by symbolic {other}")
            return exact
        divisor = int(other)
        if divisor <= 0:
            raise TractileError(f"floor division of {self} by {divisor}: divisor must be positive")
        if divisor == 1:
            return self
        whole: dict = {}
        rest: dict = {}
        constant = 0
        for mono, coef in self.terms:
            if mono == ():
                constant = coef
            elif coef % divisor == 0:
                whole[mono] = coef // divisor
            else:
                rest[mono] = coef
        if not rest:
            whole[()] = whole.get((), 0) + constant // divisor
            return TDim._from_dict(whole)
        whole[()] = whole.get((), 0) + constant // divisor
        rest[()] = constant % divisor
        remainder = TDim._from_dict(rest)
        if isinstance(remainder, TDim) and len(remainder.terms) == 1:
            (mono, coef), = remainder.terms
            if coef == 1 and len(mono) == 1 and isinstance(mono[0], _FloorDiv):
                inner = mono[0]
                atom = _FloorDiv(inner.num, inner.den * divisor)
                return TDim._from_dict(whole) + TDim((((atom,), 1),))
        assert isinstance(remainder, TDim)  # rest holds a symbolic term
        atom = _FloorDiv(remainder, divisor)
        return TDim._from_dict(whole) + TDim((((atom,), 1),))

    def __rfloordiv__(self, other) -> Dim:
        exact = TDim._from_dict({(): int(other)}) if isinstance(other, int) else other
        if isinstance(exact, int):
            raise TractileError(f"cannot divide {other} by symbolic {self}")
        return exact.__floordiv__(self)

    def __truediv__(self, other) -> Dim:
        """Exact division (``2*T / 2 == T``); raises if the division is not exact."""
        exact = self.div_exact(other)
        if exact is None:
            raise TractileError(f"{self} is not a multiple of {other}")
        return exact

    def div_exact(self, other) -> Dim | None:
        """``self / other`` if it is a whole expression, else None."""
        if isinstance(other, int):
            if other == 0 or any(coef % other for _, coef in self.terms):
                return None
            return TDim._from_dict({mono: coef // other for mono, coef in self.terms})
        if not isinstance(other, TDim):
            return NotImplemented
        if len(other.terms) == 1:
            (div_mono, div_coef), = other.terms
            out: dict = {}
            for mono, coef in self.terms:
                remaining = list(mono)
                for atom in div_mono:
                    if atom not in remaining:
                        return None
                    remaining.remove(atom)
                if coef % div_coef:
                    return None
                out[tuple(remaining)] = coef // div_coef
            return TDim._from_dict(out)
        (mono_a, coef_a), (mono_b, coef_b) = self.terms[0], other.terms[0]
        if mono_a == mono_b and coef_a % coef_b == 0:
            factor = coef_a // coef_b
            if self == other * factor:
                return factor
        return None

    def __mod__(self, other) -> Dim:
        return self - (self // other) * other

    # comparisons ---------------------------------------------------------------------
    def __eq__(self, other) -> bool:
        return isinstance(other, TDim) and self.terms == other.terms

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:
        return True

    def __int__(self) -> int:
        raise TractileError(f"symbolic dimension {self} has no concrete value here")

    __index__ = __int__

    def lower_bound(self) -> int | None:
        """The least value when every symbol is >= 1 (None if it is unbounded below).

        tractile takes symbols to be real extents, at least 1: ``T - 1`` is never negative.
        """
        total = 0
        for mono, coef in self.terms:
            if mono == ():
                total += coef
            elif coef < 0:
                return None
            elif all(isinstance(atom, str) for atom in mono):
                total += coef
        return total

    # evaluation ----------------------------------------------------------------------
    def symbols(self) -> set[str]:
        found: set[str] = set()
        for mono, _ in self.terms:
            for atom in mono:
                if isinstance(atom, str):
                    found.add(atom)
                else:
                    found |= atom.num.symbols()
        return found

    def substitute(self, bindings: Mapping[str, Dim]) -> Dim:
        """Replace the bound symbols; the result may stay symbolic."""
        total: Dim = 0
        for mono, coef in self.terms:
            value: Dim = coef
            for atom in mono:
                if isinstance(atom, str):
                    value = value * bindings.get(atom, TDim.symbol(atom))
                else:
                    value = value * (_substitute(atom.num, bindings) // atom.den)
            total = total + value
        return total

    def eval(self, bindings: Mapping[str, int]) -> int:
        """The concrete value under ``bindings``; raises if a symbol is unbound."""
        value = self.substitute(bindings)
        if isinstance(value, TDim):
            missing = ", ".join(sorted(value.symbols()))
            raise TractileError(f"dimension {self} needs a value for symbol(s) {missing}")
        return value

    # display ---------------------------------------------------------------------------
    def __str__(self) -> str:
        parts: list[str] = []
        for mono, coef in sorted(self.terms, key=lambda term: term[0] == ()):
            atoms = "*".join(str(a) for a in mono)
            if not atoms:
                text = str(abs(coef))
            elif abs(coef) == 1:
                text = atoms
            else:
                text = f"{abs(coef)}*{atoms}"
            if parts:
                parts.append(("-" if coef < 0 else "+") + text)
            else:
                parts.append(("-" if coef < 0 else "") + text)
        return "".join(parts)

    def __repr__(self) -> str:
        return f"TDim({self})"


Dim = int | TDim


def _terms_of(value: Dim):
    if isinstance(value, TDim):
        return value.terms
    return (((), value),) if value else ()


def _lift(value):
    if isinstance(value, TDim):
        return value
    if isinstance(value, (int,)) or hasattr(value, "__index__"):
        try:
            return int(value)
        except TypeError:
            return NotImplemented
    return NotImplemented


def _substitute(value: Dim, bindings: Mapping[str, Dim]) -> Dim:
    return value.substitute(bindings) if isinstance(value, TDim) else value


def symbol(name: str) -> TDim:
    """The symbolic dimension named ``name``."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise TractileError(f"{name!r} is not a valid symbol name")
    return TDim.symbol(name)


def is_concrete(dim) -> bool:
    return not isinstance(dim, TDim)


def eval_dim(dim: Dim, bindings: Mapping[str, int]) -> int:
    return dim.eval(bindings) if isinstance(dim, TDim) else dim


def substitute_dim(dim: Dim, bindings: Mapping[str, Dim]) -> Dim:
    return _substitute(dim, bindings)


def volume(dims: Iterable[Dim]) -> Dim:
    total: Dim = 1
    for dim in dims:
        total = total * dim
    return total


def dim_symbols(dims: Iterable) -> set[str]:
    found: set[str] = set()
    for dim in dims:
        if isinstance(dim, TDim):
            found |= dim.symbols()
    return found


def max_dim(a: Dim, b: Dim) -> Dim:
    """The larger of two dims when it can be told, else ``a`` (tract's broadcasting choice)."""
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    diff = a - b
    if isinstance(diff, int):
        return a if diff >= 0 else b
    return a


class SymbolFactory:
    """Makes fresh symbols for dims only known at run time (``_u0``, ``_u1``...)."""

    def __init__(self, prefix: str = "_u"):
        self.prefix = prefix
        self._counter = itertools.count()

    def fresh(self) -> TDim:
        return TDim.symbol(f"{self.prefix}{next(self._counter)}")


_FRESH_PREFIX = "_u"
_fresh_factory: contextvars.ContextVar[SymbolFactory] = contextvars.ContextVar(
    "tractile_fresh_symbols", default=SymbolFactory(_FRESH_PREFIX))  # noqa: B039 - one process-wide default


def fresh_symbol() -> TDim:
    """A new symbol for a dim only known at run time (data-dependent output shapes)."""
    return _fresh_factory.get().fresh()


def is_fresh(dim) -> bool:
    """True if ``dim`` involves a symbol made by :func:`fresh_symbol`."""
    return isinstance(dim, TDim) and any(s.startswith(_FRESH_PREFIX) for s in dim.symbols())


def fresh_symbols_scope(factory: SymbolFactory):
    """Context manager: fresh symbols come from ``factory`` (one per model keeps names short)."""
    return _FreshScope(factory)


class _FreshScope:
    def __init__(self, factory: SymbolFactory):
        self.factory = factory
        self.token = None

    def __enter__(self):
        self.token = _fresh_factory.set(self.factory)
        return self.factory

    def __exit__(self, *exc):
        _fresh_factory.reset(self.token)
