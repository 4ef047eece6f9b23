"""SVDF: a rank-decomposed fully connected layer over a memory of past activations.

The memory is the op's state (TFLite's variable tensor): each run shifts it by one
frame, writes the feature projection of the new input, and reduces it against the
time weights. Integer SVDF follows TFLite's kernels: int16 memory as in TFLite, int8
memory (with a zero point) as in TFLite Micro, which keyword models use. Their sums are
int32 accumulators, which wrap (modulo 2^32) where a large bias or a long memory leaves
the int32 range: so do the sums here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import QParams
from ..base import expect_inputs
from .common import TflOp, apply_float_activation, check_activation, integer_limits, scale_of, zero_of
from .fixedpoint import Requantizer, wrap32, wrap_bits


@dataclass(frozen=True, eq=False)
class Svdf(TflOp):
    """SVDF with inputs x (batch, input), weights_feature (F, input), weights_time (F, M), bias.

    ``initial_state`` is the variable tensor's initial value (batch, M * F) and
    ``state_q`` its quantization.
    """

    rank: int = 1
    activation: str = "NONE"
    has_bias: bool = True
    initial_state: np.ndarray = field(default=None, repr=False)
    state_q: QParams | None = None
    is_stateless = False

    def output_facts(self, inputs):
        expect_inputs(inputs, 4 if self.has_bias else 3, self)
        check_activation(self.activation)
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
        if not x.dtype.is_float and (self.iq(0) is None or self.state_q is None or self.oq(0) is None):
            raise AnalysisError("integer SVDF needs quantized input, weights, state and output")
        return [self.fact(0, x.dtype, (x.shape[0], filters // self.rank))]

    @cached_property
    def _scales(self):
        state_scale = np.float32(scale_of(self.state_q))
        first = np.float32(np.float32(scale_of(self.iq(0))) * np.float32(scale_of(self.iq(1)))) / state_scale
        second = np.float32(state_scale * np.float32(scale_of(self.iq(2)))) / np.float32(scale_of(self.oq(0)))
        return Requantizer([np.float64(np.float32(first))]), Requantizer([np.float64(np.float32(second))])

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
            memory[:, :, -1] = x @ features.T
            out = np.einsum("bfm,fm->bf", memory, times).reshape(batch, units, op.rank).sum(axis=2)
            if bias is not None:
                out = out + bias
            return [apply_float_activation(out.astype(x.dtype), op.activation)]
        first, second = op._scales
        state_dtype = DatumType.from_numpy(memory.dtype)
        state_zero = zero_of(op.state_q)
        offset = x.astype(np.float64) - zero_of(op.iq(0))
        dots = wrap32(np.rint(offset @ features.T.astype(np.float64)).astype(np.int64))
        low, high = integer_limits(state_dtype)
        projected = np.clip(first(dots), low, high) + state_zero
        memory[:, :, -1] = wrap_bits(projected, 8 * memory.dtype.itemsize).astype(memory.dtype)
        centred = memory.astype(np.int64) - state_zero
        scratch = np.einsum("bfm,fm->bf", centred, times.astype(np.int64))
        acc = scratch.reshape(batch, units, op.rank).sum(axis=2)
        if bias is not None:
            acc = acc + bias.astype(np.int64)
        acc = wrap32(acc)
        out_dtype = op.out_dtype(0, DatumType.I8)
        lo, hi = integer_limits(out_dtype)
        return [np.clip(second(acc) + zero_of(op.oq(0)), lo, hi).astype(out_dtype.np)]
