"""Stateful causal depthwise 1-d convolution (ONNX CausalConvWithState)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import AnalysisError
from ..fact import TypedFact
from .base import Op, expect_inputs

ACTIVATIONS = ("none", "silu", "swish")


@dataclass(frozen=True)
class CausalConvWithState(Op):
    """Inputs x (B, C, L), weight (C, 1, K), then optional bias (C) and past_state (B, C, K-1) as
    ``has_bias`` / ``has_past`` say. Outputs y (B, C, L), the last K-1 steps of past + x as
    the present state. ``activation`` silu (alias swish) is applied to y."""

    activation: str = "none"
    has_bias: bool = False
    has_past: bool = False

    @property
    def nboutputs(self) -> int:
        return 2

    def _split(self, inputs):
        x, w, *rest = inputs
        bias = rest.pop(0) if self.has_bias else None
        past = rest.pop(0) if self.has_past else None
        return x, w, bias, past

    def output_facts(self, inputs):
        expect_inputs(inputs, 2 + self.has_bias + self.has_past, self)
        if self.activation not in ACTIVATIONS:
            raise AnalysisError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {self.activation!r}")
        x, w, bias, past = self._split(inputs)
        if x.rank != 3 or not x.dtype.is_float:
            raise AnalysisError(f"input should be a float (batch, channels, length) tensor, got {x}")
        if w.rank != 3 or w.shape[:2] != (x.shape[1], 1) or w.dtype != x.dtype or not isinstance(w.shape[2], int):
            raise AnalysisError(f"weight should be ({x.shape[1]},1,k) {x.dtype} with a known k, got {w}")
        state = (x.shape[0], x.shape[1], w.shape[2] - 1)
        if bias is not None and (bias.shape != (x.shape[1],) or bias.dtype != x.dtype):
            raise AnalysisError(f"bias should be a ({x.shape[1]},) {x.dtype} vector, got {bias}")
        if past is not None and (past.shape != state or past.dtype != x.dtype):
            raise AnalysisError(f"past_state should be ({','.join(map(str, state))}) {x.dtype}, got {past}")
        return [TypedFact(x.dtype, x.shape), TypedFact(x.dtype, state)]

    def rules(self, s, inputs, outputs):
        s.equals_all(inputs[0].datum_type, outputs[0].datum_type, outputs[1].datum_type)
        s.equals_shape(inputs[0], outputs[0])

    def eval(self, inputs):
        x, w, bias, past = self._split(inputs)
        batch, channels, length = x.shape
        taps = w.shape[2]
        if past is None:
            past = np.zeros((batch, channels, taps - 1), dtype=x.dtype)
        padded = np.concatenate([past, x], axis=2)
        work = np.float64 if x.dtype == np.float64 else np.float32
        source = padded.astype(work)
        weights = w[:, 0].astype(work)
        y = np.zeros((batch, channels, length), dtype=work)
        for tap in range(taps):
            y += source[:, :, tap:tap + length] * weights[:, tap:tap + 1]
        if bias is not None:
            y += bias.astype(work)[:, None]
        if self.activation != "none":
            y = y.astype(x.dtype).astype(work)
            y = y * (0.5 + 0.5 * np.tanh(0.5 * y))
        return [y.astype(x.dtype), padded[:, :, padded.shape[2] - (taps - 1):].copy()]
