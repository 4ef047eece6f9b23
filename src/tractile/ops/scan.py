"""Cumulative scans along an axis: CumSum and CumProd (ONNX ``exclusive`` and ``reverse``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AnalysisError, RunError
from ..fact import QParams, TypedFact
from .axes import resolve_axis, run_scalar, scalar_value, widened
from .base import Op, expect_inputs
from .quantized.add_n import AddNRecipe
from .quantized.common import cached_recipe, recipe_of, with_recipe


@dataclass(frozen=True)
class CumScan(Op):
    """Running sum (``kind="sum"``) or product along the axis held by input 1.

    ``exclusive``: element i excludes x[i] (starts from 0 or 1); ``reverse``: runs from the end.
    ``quant``: the output's quantization of an int8 running sum (TFLite Micro's int8 CUMSUM,
    ``ops.quantized.add_n``).
    """

    kind: str = "sum"
    exclusive: bool = False
    reverse: bool = False
    quant: QParams | None = None

    def _recipe(self, inputs: list[TypedFact]) -> AddNRecipe:
        if self.kind != "sum":
            raise AnalysisError(f"a quantized {self.name} (only running sums are quantized)")
        return cached_recipe(self, inputs, lambda: AddNRecipe([inputs[0]], self.quant))

    def prepared(self, inputs):
        return with_recipe(self, self._recipe(inputs)) if self.quant is not None else self

    @property
    def name(self) -> str:  # type: ignore[override]
        return "Cum" + self.kind.capitalize()

    def output_facts(self, inputs):
        expect_inputs(inputs, 2, self)
        if self.kind not in ("sum", "prod"):
            raise AnalysisError(f"CumScan kind must be sum or prod, got {self.kind!r}")
        x, axis = inputs
        if not axis.dtype.is_integer:
            raise AnalysisError(f"{self.name} axis must be an integer, got {axis}")
        value = scalar_value(axis, f"{self.name} axis")
        if value is not None:
            resolve_axis(value, x.rank, f"{self.name} axis")
        elif x.rank == 0:
            raise AnalysisError(f"{self.name} needs an input of rank 1 or more, got {x}")
        if self.quant is not None:
            self._recipe(inputs)
        return [TypedFact(x.dtype, x.shape, qparams=self.quant)]

    def rules(self, s, inputs, outputs):
        s.equals(inputs[0].datum_type, outputs[0].datum_type)
        s.equals_shape(inputs[0], outputs[0])

    def eval(self, inputs):
        x = inputs[0]
        axis = resolve_axis(int(run_scalar(inputs[1], f"{self.name} axis")), x.ndim, f"{self.name} axis",
                            RunError)
        if self.quant is not None:
            return [recipe_of(self).running(x, axis, self.exclusive, self.reverse)]
        work = widened(x)
        if self.reverse:
            work = np.flip(work, axis)
        scan = np.cumsum if self.kind == "sum" else np.cumprod
        result = scan(work, axis=axis, dtype=work.dtype)
        if self.exclusive and result.shape[axis]:
            identity = np.full_like(np.take(result, [0], axis=axis), 0 if self.kind == "sum" else 1)
            result = np.concatenate([identity, np.take(result, np.arange(result.shape[axis] - 1), axis=axis)],
                                    axis=axis)
        if self.reverse:
            result = np.flip(result, axis)
        return [np.ascontiguousarray(result).astype(x.dtype, copy=False)]

    def cost(self, inputs):
        return {"flops": inputs[0].volume}
