"""Random generators: normal and uniform tensors, Bernoulli draws, multinomial samples.

Every op here is ``is_random``: never folded, never evaluated during analysis. With a
``seed`` each run draws the same values (a generator seeded afresh on every run);
without one, every run draws new ones.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError, RunError
from ..fact import TENSOR, TypedFact
from .base import Op, check_alloc, expect_inputs


def generator(seed: float | None) -> np.random.Generator:
    """A generator: seeded from the bits of ``seed``, or from the OS when it is None."""
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(int.from_bytes(struct.pack("<d", float(seed)), "little"))


def _float_type(dtype: DatumType, what: str) -> DatumType:
    if not dtype.is_float:
        raise AnalysisError(f"{what} produces floats, not {dtype}")
    return dtype


@dataclass(frozen=True)
class RandomTensor(Op):
    """Random values from a ``normal`` (mean ``a``, scale ``b``) or ``uniform`` ([``a``, ``b``))
    distribution. The shape is ``shape``, or input 0's when ``shape`` is None (the *Like
    ops); the datum type is ``dtype``, or input 0's when None."""

    distribution: str
    a: float = 0.0
    b: float = 1.0
    dtype: DatumType | None = DatumType.F32
    shape: tuple[int, ...] | None = None
    seed: float | None = None

    is_random = True

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"Random{self.distribution.capitalize()}{'Like' if self.shape is None else ''}"

    def output_facts(self, inputs):
        if self.shape is not None:
            expect_inputs(inputs, 0, self)
            if any(d < 0 for d in self.shape):
                raise AnalysisError(f"{self.name} shape {list(self.shape)} has a negative dimension")
            return [TypedFact(_float_type(self.dtype, self.name), self.shape)]
        expect_inputs(inputs, 1, self)
        if inputs[0].kind != TENSOR:
            raise AnalysisError(f"{self.name} input must be a tensor, got {inputs[0]}")
        return [TypedFact(_float_type(self.dtype or inputs[0].dtype, self.name), inputs[0].shape)]

    def eval(self, inputs):
        shape = self.shape if self.shape is not None else inputs[0].shape
        dtype = self.dtype or DatumType.from_numpy(inputs[0].dtype)
        check_alloc(shape, np.float64, self.name)
        rng = generator(self.seed)
        if self.distribution == "normal":
            values = rng.normal(self.a, self.b, shape)
        else:
            values = rng.uniform(self.a, self.b, shape)
        return [values.astype(dtype.np)]


@dataclass(frozen=True)
class Bernoulli(Op):
    """1 with probability input 0 (each element), else 0, as ``dtype`` (default: the input's)."""

    dtype: DatumType | None = None
    seed: float | None = None

    is_random = True

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        p = inputs[0]
        if p.kind != TENSOR or not p.dtype.is_float:
            raise AnalysisError(f"Bernoulli takes float probabilities, got {p}")
        return [TypedFact(self.dtype or p.dtype, p.shape)]

    def eval(self, inputs):
        p = inputs[0]
        draws = generator(self.seed).random(p.shape) < p.astype(np.float64)
        return [draws.astype((self.dtype or DatumType.from_numpy(p.dtype)).np)]


@dataclass(frozen=True)
class Multinomial(Op):
    """``sample_size`` class indices per row of input 0 ([batch, classes] unnormalised
    log-probabilities), as i32 or i64."""

    sample_size: int = 1
    dtype: DatumType = DatumType.I32
    seed: float | None = None

    is_random = True

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        logits = inputs[0]
        if logits.kind != TENSOR or logits.rank != 2 or not logits.dtype.is_float:
            raise AnalysisError(f"Multinomial takes [batch, classes] float log-probabilities, got {logits}")
        if self.dtype not in (DatumType.I32, DatumType.I64):
            raise AnalysisError(f"Multinomial outputs i32 or i64, not {self.dtype}")
        if self.sample_size < 1:
            raise AnalysisError(f"Multinomial sample_size must be positive, got {self.sample_size}")
        return [TypedFact(self.dtype, (logits.shape[0], self.sample_size))]

    def eval(self, inputs):
        logits = inputs[0].astype(np.float64)
        batch, classes = logits.shape
        if classes == 0:
            raise RunError("Multinomial needs at least one class")
        check_alloc((batch, self.sample_size, classes), np.float64, "Multinomial")
        weights = np.exp(logits - logits.max(axis=1, keepdims=True))
        cumulative = np.cumsum(weights, axis=1)
        cumulative /= cumulative[:, -1:]
        draws = generator(self.seed).random((batch, self.sample_size))
        indices = (draws[:, :, None] >= cumulative[:, None, :]).sum(axis=2)
        return [np.minimum(indices, classes - 1).astype(self.dtype.np)]
