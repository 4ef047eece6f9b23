"""SVDF: a rank-decomposed fully connected layer over a memory of past activations (TFLite's
SVDF).

The memory is the op's state (TFLite's variable tensor): each run shifts it by one frame,
writes the feature projection of the new input, and reduces it against the time weights.
Float SVDFs compute in float32; ``quant`` set (the output's quantization) runs TFLite's
integer kernel (``ops.quantized.svdf``); a float input with int8 weights runs LiteRT's hybrid
kernel (``ops.quantized.hybrid_recurrent``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import AnalysisError
from ..fact import QParams, TypedFact
from .base import Op, expect_inputs
from .lstm_projected import ACTIVATIONS, cell_activation
from .quantized.common import cached_recipe, recipe_of, with_recipe
from .quantized.hybrid import is_hybrid
from .quantized.svdf import run_integer_svdf, svdf_quantization


@dataclass(frozen=True, eq=False)
class Svdf(Op):
    """SVDF with inputs x (batch, input), weights_feature (F, input), weights_time (F, M), bias.

    ``initial_state`` is the memory's initial value (batch, M * F) and ``state_q`` its
    quantization; ``quant`` the output's. ``activation`` (a TFLite activation name) applies
    to float and hybrid outputs (TFLite's integer kernel ignores it); ``asymmetric_inputs``:
    how the hybrid kernel quantizes its input rows.
    """

    rank: int = 1
    activation: str = "NONE"
    has_bias: bool = True
    initial_state: np.ndarray = field(default=None, repr=False)
    state_q: QParams | None = None
    quant: QParams | None = None
    asymmetric_inputs: bool = False
    is_stateless = False

    def output_facts(self, inputs):
        expect_inputs(inputs, 4 if self.has_bias else 3, self)
        if self.activation not in ACTIVATIONS:
            raise AnalysisError(f"unknown SVDF activation {self.activation!r}; expected one of "
                                f"{', '.join(ACTIVATIONS)}")
        x, features, times = inputs[0], inputs[1], inputs[2]
        if x.rank != 2 or features.rank != 2 or times.rank != 2:
            raise AnalysisError(f"SVDF needs 2-d input and weights, got {x}, {features}, {times}")
        filters = features.shape[0]
        if self.rank < 1 or filters % self.rank:
            raise AnalysisError(f"{filters} filters do not split by rank {self.rank}")
        if features.shape[1] != x.shape[1] or times.shape[0] != filters:
            raise AnalysisError(f"SVDF weights {features} and {times} do not fit the input {x}")
        state = self.initial_state
        if state is None or state.shape != (x.shape[0], times.shape[1] * filters):
            raise AnalysisError(f"SVDF state should be ({x.shape[0]}, {times.shape[1] * filters})")
        if not x.dtype.is_float and self.quant is None:
            raise AnalysisError("an integer SVDF needs a quantized output")
        if self.quant is not None or self.is_hybrid(inputs):
            self._recipe(inputs)
        return [TypedFact(x.dtype, (x.shape[0], filters // self.rank), qparams=self.quant)]

    def is_hybrid(self, inputs: list[TypedFact]) -> bool:
        return self.quant is None and is_hybrid(inputs[0], inputs[1])

    def _recipe(self, inputs: list[TypedFact]):
        if self.quant is not None:
            quant = self.quant
            return cached_recipe(self, inputs, lambda: svdf_quantization(inputs, self.state_q, quant))
        from .quantized.hybrid_recurrent import hybrid_svdf

        return cached_recipe(self, inputs, lambda: hybrid_svdf(self, inputs))

    def prepared(self, inputs):
        if self.quant is not None or self.is_hybrid(inputs):
            return with_recipe(self, self._recipe(inputs))
        return self

    def state(self):
        return _SvdfState(self)

    def eval(self, inputs):
        return _SvdfState(self).eval(inputs)


class _SvdfState:
    def __init__(self, op: Svdf):
        self.op = op
        self.reset()

    def reset(self) -> None:
        self.memory = np.array(self.op.initial_state, copy=True)

    def eval(self, inputs):
        op = self.op
        x, features, times = inputs[0], inputs[1], inputs[2]
        bias = inputs[3] if op.has_bias else None
        batch = x.shape[0]
        filters, memory_size = times.shape
        memory = self.memory.reshape(batch, filters, memory_size)
        memory[:, :, :-1] = memory[:, :, 1:].copy()
        units = filters // op.rank
        if x.dtype.kind == "f":
            if features.dtype == np.int8:
                hybrid = recipe_of(op)
                memory[:, :, -1] = hybrid.features(x)
                times = hybrid.times
            else:
                memory[:, :, -1] = x @ features.T
            out = np.einsum("bfm,fm->bf", memory, times).reshape(batch, units, op.rank).sum(axis=2)
            if bias is not None:
                out = out + bias
            return [cell_activation(out.astype(x.dtype), op.activation)]
        from ..datum import DatumType

        out_dtype = DatumType.from_numpy(x.dtype)
        return [run_integer_svdf(recipe_of(op), memory, x, features, times, bias, op.rank, out_dtype)]
