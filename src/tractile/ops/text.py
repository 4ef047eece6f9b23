"""String ops: StringNormalizer, StringConcat, StringSplit, RegexFullMatch.

String tensors are object arrays of ``str``; the work is done by NumPy's ``char``
functions (element loops in C) where they exist, by vectorised Python callables
where they do not (splitting, regular expressions).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..dim import fresh_symbol
from ..errors import AnalysisError
from ..fact import TENSOR, TypedFact
from .base import Op, check_alloc, expect_inputs
from .broadcast import broadcast_shapes


def _as_text(x: np.ndarray) -> np.ndarray:
    """A string tensor as a NumPy unicode array (for ``np.char``)."""
    return x.astype(str) if x.size else np.zeros(x.shape, dtype="<U1")


def _as_strings(x) -> np.ndarray:
    return np.asarray(x).astype(object)


def expect_strings(fact: TypedFact, what: str) -> None:
    if fact.kind != TENSOR or fact.dtype != DatumType.STRING:
        raise AnalysisError(f"{what} must be a string tensor, got {fact}")


@dataclass(frozen=True)
class StringNormalizer(Op):
    """Drop ``stopwords`` from a [C] or [1, C] string tensor, then change case (``LOWER``,
    ``UPPER`` or ``NONE``). If every string is dropped, the output holds one empty string."""

    case_change: str = "NONE"
    case_sensitive: bool = False
    stopwords: tuple[str, ...] = ()

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        expect_strings(x, "StringNormalizer input")
        if x.rank not in (1, 2) or (x.rank == 2 and x.shape[0] != 1):
            raise AnalysisError(f"StringNormalizer takes a [C] or [1, C] tensor, got {x}")
        if self.case_change not in ("NONE", "LOWER", "UPPER"):
            raise AnalysisError(f"StringNormalizer case_change_action {self.case_change!r} is not LOWER, UPPER "
                                "or NONE")
        if not self.stopwords:
            return [TypedFact(DatumType.STRING, x.shape)]
        return [TypedFact(DatumType.STRING, (*x.shape[:-1], fresh_symbol()))]

    def eval(self, inputs):
        x = inputs[0]
        text = _as_text(x.reshape(-1))
        if self.stopwords:
            if self.case_sensitive:
                dropped = np.isin(text, np.array(self.stopwords, dtype=str))
            else:
                dropped = np.isin(np.char.lower(text), np.char.lower(np.array(self.stopwords, dtype=str)))
            text = text[~dropped]
            if text.size == 0:
                text = np.array([""], dtype=str)
        if self.case_change == "LOWER":
            text = np.char.lower(text)
        elif self.case_change == "UPPER":
            text = np.char.upper(text)
        return [_as_strings(text).reshape(*x.shape[:-1], -1)]


@dataclass(frozen=True)
class StringConcat(Op):
    """Element-wise concatenation of two string tensors (broadcasting)."""

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        for index, fact in enumerate(inputs):
            expect_strings(fact, f"StringConcat input {index}")
        return [TypedFact(DatumType.STRING, broadcast_shapes(inputs[0].shape, inputs[1].shape))]

    def eval(self, inputs):
        a, b = np.broadcast_arrays(*inputs)
        if a.size == 0:
            return [np.empty(a.shape, dtype=object)]
        return [_as_strings(np.char.add(_as_text(a), _as_text(b)))]


_split_all = np.frompyfunc(lambda text, separator, limit: text.split(separator, limit), 3, 1)


@dataclass(frozen=True)
class StringSplit(Op):
    """Split each string at ``delimiter`` (runs of whitespace when None) at most ``maxsplit``
    times. Output 0 appends an axis holding the pieces (padded with empty strings); output
    1 holds how many pieces each string gave."""

    delimiter: str | None = None
    maxsplit: int | None = None

    @property
    def nboutputs(self) -> int:
        return 2

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        expect_strings(x, "StringSplit input")
        return [TypedFact(DatumType.STRING, (*x.shape, fresh_symbol())), TypedFact(DatumType.I64, x.shape)]

    def eval(self, inputs):
        x = inputs[0]
        limit = -1 if self.maxsplit is None else self.maxsplit
        pieces = _split_all(x.astype(object), self.delimiter or None, limit) if x.size else np.empty(x.shape, object)
        lengths = np.vectorize(len, otypes=[np.int64])(pieces) if x.size else np.zeros(x.shape, np.int64)
        width = int(lengths.max()) if lengths.size else 0
        check_alloc((*x.shape, width), object, "StringSplit")
        flat = pieces.reshape(-1)
        out = np.full((flat.size, width), "", dtype=object)
        counts = lengths.reshape(-1)
        if flat.size and width:
            rows = np.repeat(np.arange(flat.size), counts)
            cols = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
            out[rows, cols] = [piece for row in flat for piece in row]
        return [out.reshape(*x.shape, width), lengths]


@dataclass(frozen=True)
class RegexFullMatch(Op):
    """Whether each string matches ``pattern`` entirely (a bool tensor of the input's shape)."""

    pattern: str

    def __post_init__(self):
        try:
            re.compile(self.pattern)
        except re.error as error:
            raise AnalysisError(f"RegexFullMatch pattern {self.pattern!r} is not a valid regular expression: "
                                f"{error}") from None

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        expect_strings(inputs[0], "RegexFullMatch input")
        return [TypedFact(DatumType.BOOL, inputs[0].shape)]

    def eval(self, inputs):
        x = inputs[0]
        if x.size == 0:
            return [np.zeros(x.shape, dtype=bool)]
        matcher = re.compile(self.pattern).fullmatch
        matches = np.frompyfunc(lambda text: matcher(text) is not None, 1, 1)(x.astype(object))
        return [matches.astype(bool)]
