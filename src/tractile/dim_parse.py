"""Parsing dimension expressions: ``"T"``, ``"2*T+1"``, ``"(T-3)/2"``."""
from __future__ import annotations

import re

from .dim import Dim, DimensionTooComplex, TDim
from .errors import TractileError

MAX_DIM_TEXT = 1000
MAX_DIM_NESTING = 64
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(//|[-+*/()]))")


def parse_dim(text: str) -> Dim:
    """Parse ``"T"``, ``"2*T+1"``, ``"(T-3)/2"`` (``/`` and ``//`` are floor division)."""
    tokens = []
    position = 0
    text = text.strip()
    if len(text) > MAX_DIM_TEXT:
        raise DimensionTooComplex(f"a dimension expression of {len(text)} characters (the limit is {MAX_DIM_TEXT})")
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match or match.end() == position:
            raise TractileError(f"cannot parse dimension {text!r} at {text[position:]!r}")
        number, name, punct = match.groups()
        tokens.append(int(number) if number else (("sym", name) if name else punct))
        position = match.end()
    parser = _DimParser(tokens, text)
    value = parser.sum()
    if parser.index != len(tokens):
        raise TractileError(f"cannot parse dimension {text!r}: unexpected {tokens[parser.index]!r}")
    return value


class _DimParser:
    def __init__(self, tokens, text):
        self.tokens, self.text, self.index, self.depth = tokens, text, 0, 0

    def peek(self):
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self):
        token = self.peek()
        self.index += 1
        return token

    def sum(self) -> Dim:
        value = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()
            rhs = self.product()
            value = value + rhs if op == "+" else value - rhs
        return value

    def product(self) -> Dim:
        value = self.atom()
        while self.peek() in ("*", "/", "//"):
            op = self.take()
            rhs = self.atom()
            if op == "*":
                value = value * rhs
            else:
                if isinstance(rhs, TDim):
                    raise TractileError(f"cannot parse dimension {self.text!r}: can only divide by an integer")
                value = value // rhs
        return value

    def atom(self) -> Dim:
        token = self.take()
        if isinstance(token, int):
            return token
        if isinstance(token, tuple):
            return TDim.symbol(token[1])
        if token == "-":
            self.depth += 1
            if self.depth > MAX_DIM_NESTING:
                raise DimensionTooComplex(f"dimension {self.text[:40]!r}... nests signs deeper than "
                                          f"{MAX_DIM_NESTING} levels")
            value = -self.atom()
            self.depth -= 1
            return value
        if token == "(":
            self.depth += 1
            if self.depth > MAX_DIM_NESTING:
                raise DimensionTooComplex(f"dimension {self.text[:40]!r}... nests parentheses deeper than "
                                          f"{MAX_DIM_NESTING} levels")
            value = self.sum()
            self.depth -= 1
            if self.take() != ")":
                raise TractileError(f"cannot parse dimension {self.text!r}: missing ')'")
            return value
        raise TractileError(f"cannot parse dimension {self.text!r}: unexpected {token!r}")


def to_dim(value) -> Dim:
    """Coerce an int, NumPy integer, TDim or dim expression string to a :data:`Dim`."""
    if isinstance(value, TDim):
        return value
    if isinstance(value, str):
        return parse_dim(value)
    try:
        return int(value)
    except (TypeError, ValueError) as error:
        raise TractileError(f"{value!r} is not a dimension") from error
