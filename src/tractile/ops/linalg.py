"""Linear algebra on the two innermost axes: Det."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .base import Op, expect_inputs
from .unary import needs_f32


@dataclass(frozen=True)
class Det(Op):
    """Determinant of each square matrix on the two innermost axes: ``[*, M, M] -> [*]``.

    LU factorisation in f64 for f64 inputs, f32 otherwise (f16 and bf16 cast back);
    a singular matrix gives 0, an empty (0 x 0) matrix 1.
    """

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if not x.is_tensor or not x.dtype.is_float:
            raise AnalysisError(f"Det needs a floating-point tensor, got {x}")
        if x.rank < 2:
            raise AnalysisError(f"Det needs matrices [*, M, M] (rank 2 or more), got {x}")
        rows, cols = x.shape[-2:]
        if isinstance(rows, int) and isinstance(cols, int) and rows != cols:
            raise AnalysisError(f"Det needs square matrices, got {rows} x {cols} in {x}")
        return [TypedFact(x.dtype, x.shape[:-2])]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.sum_equals_zero(inputs[0].rank, -1 * outputs[0].rank, -2)

    def eval(self, inputs):
        x = inputs[0]
        work = x.astype(np.float32) if needs_f32(x.dtype) else x
        if x.shape[-1] != x.shape[-2]:
            raise RunError(f"Det needs square matrices, got {x.shape[-2]} x {x.shape[-1]}")
        return [np.asarray(np.linalg.det(work)).astype(x.dtype)]

    def cost(self, inputs):
        x = inputs[0]
        return {"flops": x.volume * x.shape[-1] * 2 // 3}
