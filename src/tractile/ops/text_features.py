"""Feature extraction from tokens: LabelEncoder (a lookup table) and TfIdfVectorizer (n-gram counts)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError
from ..fact import TENSOR, TypedFact
from .base import Op, check_alloc, expect_inputs


@dataclass(frozen=True, eq=False)
class LabelEncoder(Op):
    """Map each element found in ``keys`` to the ``values`` entry at the same index, others to
    ``default`` (a one-element array of the values' type). NaN keys match NaN inputs."""

    keys: np.ndarray = field(repr=False)
    values: np.ndarray = field(repr=False)
    default: np.ndarray = field(repr=False)

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if x.kind != TENSOR:
            raise AnalysisError(f"LabelEncoder input must be a tensor, got {x}")
        if len(self.keys) != len(self.values):
            raise AnalysisError(f"LabelEncoder has {len(self.keys)} keys but {len(self.values)} values")
        strings_in = x.dtype == DatumType.STRING
        if strings_in != (self.keys.dtype == object):
            raise AnalysisError(f"LabelEncoder keys are {'strings' if self.keys.dtype == object else 'numbers'} "
                                f"but the input is {x}")
        return [TypedFact(DatumType.from_numpy(self.values.dtype), x.shape)]

    def attributes(self):
        return {"entries": len(self.keys), "default": self.default.reshape(-1)[0]}

    def eval(self, inputs):
        x = inputs[0]
        default = self.default.reshape(-1)[0]
        if self.keys.dtype == object:
            table = dict(zip(self.keys.tolist(), self.values.tolist()))
            lookup = np.frompyfunc(lambda item: table.get(item, default), 1, 1)
            return [np.asarray(lookup(x.astype(object)), dtype=object).astype(self.values.dtype).reshape(x.shape)]
        order = np.argsort(self.keys, kind="stable")
        keys, values = self.keys[order], self.values[order]
        flat = x.reshape(-1).astype(keys.dtype)
        position = np.clip(np.searchsorted(keys, flat), 0, max(len(keys) - 1, 0))
        found = (keys[position] == flat) if len(keys) else np.zeros(flat.shape, bool)
        out = np.where(found, values[position] if len(keys) else default, default).astype(self.values.dtype)
        if keys.dtype.kind == "f" and np.isnan(keys).any():
            out[np.isnan(flat)] = values[np.isnan(keys)][0]
        return [out.reshape(x.shape)]


@dataclass(frozen=True, eq=False)
class TfIdfVectorizer(Op):
    """Count the n-grams of ``pool`` (the ``ngram_counts``-delimited 1-grams, 2-grams...) in
    each row of a [C] or [N, C] token tensor, allowing up to ``max_skip`` skipped tokens
    between the items of an n-gram; ``mode`` TF, IDF (counts capped at 1) or TFIDF weighs
    them. Output [max(ngram_indexes) + 1] or [N, that] f32."""

    pool: np.ndarray = field(repr=False)
    ngram_counts: tuple[int, ...]
    ngram_indexes: tuple[int, ...]
    min_gram: int
    max_gram: int
    max_skip: int
    mode: str = "TF"
    weights: tuple[float, ...] | None = None

    def _grams(self) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """For each n in [min_gram, max_gram]: n, the pool's n-grams (G, n), their gram numbers."""
        bounds = [*self.ngram_counts, len(self.pool)]
        first_gram = 0
        grams = []
        for n, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:]), start=1):
            count = (stop - start) // n
            if self.min_gram <= n <= self.max_gram and count:
                grams.append((n, self.pool[start:start + count * n].reshape(count, n),
                              np.arange(first_gram, first_gram + count)))
            first_gram += count
        return grams

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if x.kind != TENSOR or x.rank not in (1, 2):
            raise AnalysisError(f"TfIdfVectorizer takes a [C] or [N, C] tensor, got {x}")
        if (x.dtype == DatumType.STRING) != (self.pool.dtype == object):
            raise AnalysisError(f"TfIdfVectorizer pool and input {x} are not both strings or both integers")
        if self.mode not in ("TF", "IDF", "TFIDF"):
            raise AnalysisError(f"TfIdfVectorizer mode {self.mode!r} is not TF, IDF or TFIDF")
        total = sum(len(g[2]) for g in self._grams()) if self.ngram_indexes else 0
        if len(self.ngram_indexes) < total or (self.weights and len(self.weights) != len(self.ngram_indexes)):
            raise AnalysisError("TfIdfVectorizer ngram_indexes (and weights) must have one entry per pool n-gram")
        width = max(self.ngram_indexes) + 1 if self.ngram_indexes else 0
        return [TypedFact(DatumType.F32, (*x.shape[:-1], width))]

    def eval(self, inputs):
        x = inputs[0]
        rows = x.reshape(1, -1) if x.ndim == 1 else x
        if rows.dtype != object:
            rows = rows.astype(np.int64)
        width = max(self.ngram_indexes) + 1 if self.ngram_indexes else 0
        counts = np.zeros((rows.shape[0], len(self.ngram_indexes)), dtype=np.float64)
        length = rows.shape[1]
        for n, pool, numbers in self._grams():
            for skip in range(self.max_skip + 1 if n > 1 else 1):
                span = (n - 1) * (skip + 1) + 1
                if span > length:
                    break
                starts = length - span + 1
                grams = np.stack([rows[:, k * (skip + 1):k * (skip + 1) + starts] for k in range(n)], axis=-1)
                check_alloc((rows.shape[0], starts, len(pool)), bool, "TfIdfVectorizer")
                matches = (grams[:, :, None, :] == pool[None, None, :, :]).all(axis=-1)
                counts[:, numbers] += matches.sum(axis=1)
        if self.mode == "IDF":
            counts = np.minimum(counts, 1)
        if self.mode != "TF" and self.weights:
            counts = counts * np.asarray(self.weights)
        out = np.zeros((rows.shape[0], width), dtype=np.float32)
        np.add.at(out, (slice(None), np.asarray(self.ngram_indexes, dtype=np.int64)), counts.astype(np.float32))
        return [out.reshape(*x.shape[:-1], width)]
