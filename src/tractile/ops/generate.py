"""Ops that make tensors from a few scalars or a shape: Range, EyeLike.

``Range`` over symbolic bounds keeps a symbolic length (``Range(0, N, 1)`` has ``N``
elements) so that position tensors built from a sequence length stay typed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..dim import TDim, fresh_symbol
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .axes import is_low_precision_float, run_scalar, scalar_value
from .base import Op, check_alloc, expect_inputs


def range_length(start, limit, delta):
    """``max(ceil((limit - start) / delta), 0)`` over ints and TDims; None when it cannot be told."""
    if isinstance(delta, TDim) or delta == 0:
        return None
    if not isinstance(start, TDim) and not isinstance(limit, TDim):
        if isinstance(start, int) and isinstance(limit, int) and isinstance(delta, int):
            return max(-((start - limit) // delta), 0)
        return max(math.ceil((float(limit) - float(start)) / float(delta)), 0)
    if not isinstance(delta, int) or delta < 0:
        return None
    span = limit - start
    if isinstance(span, int):
        return max(-(-span // delta), 0)
    return span if delta == 1 else (span + (delta - 1)) // delta


@dataclass(frozen=True)
class Range(Op):
    """``start, start + delta, ...`` up to ``limit`` (excluded); inputs are three scalars of one type.

    Low-precision floats are computed in ``stash_type`` (f32 by default) and cast back.
    """

    stash_type: DatumType = DatumType.F32

    def output_facts(self, inputs):
        expect_inputs(inputs, 3, self)
        dtype = inputs[0].dtype
        for index, fact in enumerate(inputs):
            if fact.dtype != dtype:
                raise AnalysisError(f"Range inputs must share a datum type: input {index} is {fact}, "
                                    f"input 0 is {inputs[0]}")
        if not dtype.is_number:
            raise AnalysisError(f"Range needs numbers, got {inputs[0]}")
        start, limit, delta = (scalar_value(f, name) for f, name in zip(inputs, ("Range start", "Range limit",
                                                                              "Range delta")))
        if delta is not None and not isinstance(delta, TDim) and delta == 0:
            raise AnalysisError("Range delta is 0")
        length = None
        if start is not None and limit is not None and delta is not None:
            length = range_length(start, limit, delta)
        fact = TypedFact(dtype, [fresh_symbol() if length is None else length])
        if isinstance(length, int) and isinstance(delta, int) and (isinstance(start, TDim) or isinstance(limit, TDim)):
            fact.sym_value = np.asarray([start + i * delta for i in range(length)], dtype=object)
        return [fact]

    def rules(self, s, inputs, outputs):
        s.equals_all(inputs[0].datum_type, inputs[1].datum_type, inputs[2].datum_type, outputs[0].datum_type,
                     why="Range inputs must share a datum type ({} and {})")
        s.equals(outputs[0].rank, 1)

    def eval(self, inputs):
        dtype = inputs[0].dtype
        if dtype.kind == "O":
            start, limit, delta = (run_scalar(v, "Range input") for v in inputs)
            length = range_length(start, limit, delta)
            if not isinstance(length, int):
                raise RunError("Range over symbolic bounds has no concrete value")
            return [np.asarray([start + i * delta for i in range(length)], dtype=object)]
        compute = self.stash_type.np if is_low_precision_float(dtype) else dtype
        start, limit, delta = (run_scalar(v, name).astype(compute) for v, name in
                               zip(inputs, ("Range start", "Range limit", "Range delta")))
        if delta == 0:
            raise RunError("Range delta is 0")
        length = range_length(start.item(), limit.item(), delta.item())
        check_alloc([length], dtype, "Range")
        return [(start + np.arange(length, dtype=compute) * delta).astype(dtype, copy=False)]


@dataclass(frozen=True)
class EyeLike(Op):
    """A 2-d tensor shaped like the input with ones on diagonal ``k`` (datum type ``dtype`` or the input's)."""

    dtype: DatumType | None = None
    k: int = 0

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if x.rank != 2:
            raise AnalysisError(f"EyeLike needs a 2-d input, got {x}")
        return [TypedFact(self.dtype or x.dtype, x.shape)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].rank, 2, why="EyeLike needs a 2-d input (rank {} given)")
        s.equals_shape(inputs[0], outputs[0])
        if self.dtype is not None:
            s.equals(outputs[0].datum_type, self.dtype)
        else:
            s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        x = inputs[0]
        dtype = self.dtype.np if self.dtype is not None else x.dtype
        return [np.eye(x.shape[0], x.shape[1], self.k).astype(dtype)]
