"""Linear attention with a recurrent state (ONNX LinearAttention): linear, gated, delta, gated delta.

The recurrence runs step by step over time (a short axis for decoding and prefill
chunks); each step is vectorised over batch and heads. Statistics and state are
f32 (f64 for f64 inputs).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import AnalysisError
from ..fact import TypedFact
from .base import Op, expect_inputs

UPDATE_RULES = ("linear", "gated", "delta", "gated_delta")


def _heads(x: np.ndarray, heads: int) -> np.ndarray:
    """(B, T, H*D) as (B, H, T, D)."""
    batch, steps, hidden = x.shape
    return x.reshape(batch, steps, heads, hidden // heads).transpose(0, 2, 1, 3)


@dataclass(frozen=True)
class LinearAttention(Op):
    """Inputs query (B, T, Hq*dk), key (B, T, Hkv*dk), value (B, T, Hkv*dv), then the optional
    past_state (B, Hkv, dk, dv), decay and beta as ``has_past`` / ``has_decay`` / ``has_beta``
    say. Outputs (B, T, Hq*dv) and the present state."""

    q_heads: int
    kv_heads: int
    update_rule: str = "gated_delta"
    scale: float = 0.0
    has_past: bool = False
    has_decay: bool = False
    has_beta: bool = False

    @property
    def nboutputs(self) -> int:
        return 2

    @property
    def gated(self) -> bool:
        return self.update_rule in ("gated", "gated_delta")

    @property
    def delta(self) -> bool:
        return self.update_rule in ("delta", "gated_delta")

    def _split(self, inputs):
        q, k, v, *rest = inputs
        past = rest.pop(0) if self.has_past else None
        decay = rest.pop(0) if self.has_decay else None
        beta = rest.pop(0) if self.has_beta else None
        return q, k, v, past, decay, beta

    def output_facts(self, inputs):
        expect_inputs(inputs, 3 + self.has_past + self.has_decay + self.has_beta, self)
        if self.update_rule not in UPDATE_RULES:
            raise AnalysisError(f"update_rule must be one of {', '.join(UPDATE_RULES)}, got {self.update_rule!r}")
        if self.q_heads <= 0 or self.kv_heads <= 0 or self.q_heads % self.kv_heads:
            raise AnalysisError(f"q_num_heads {self.q_heads} must be a positive multiple of kv_num_heads "
                                f"{self.kv_heads}")
        if self.gated != self.has_decay or self.delta != self.has_beta:
            raise AnalysisError(f"update rule {self.update_rule!r} needs decay: {self.gated}, beta: {self.delta}; "
                                f"got decay: {self.has_decay}, beta: {self.has_beta}")
        q, k, v, past, decay, beta = self._split(inputs)
        for fact, what in ((q, "query"), (k, "key"), (v, "value")):
            if fact.rank != 3 or fact.dtype != q.dtype or not fact.dtype.is_float:
                raise AnalysisError(f"{what} should be a (B, T, H*D) float tensor like the query, got {fact}")
        for fact, heads, what in ((q, self.q_heads, "query"), (v, self.kv_heads, "value")):
            if isinstance(fact.shape[2], int) and fact.shape[2] % heads:
                raise AnalysisError(f"{what} hidden size {fact.shape[2]} is not a multiple of {heads} heads")
        key_size, value_size = q.shape[2] // self.q_heads, v.shape[2] // self.kv_heads
        if k.shape[2] != self.kv_heads * key_size:
            raise AnalysisError(f"key {k} should have {self.kv_heads} heads of {key_size}")
        state = (q.shape[0], self.kv_heads, key_size, value_size)
        if past is not None and past.shape != state:
            raise AnalysisError(f"past_state {past} should be ({','.join(map(str, state))})")
        if decay is not None and (decay.rank != 3 or decay.shape[2] not in (self.kv_heads, self.kv_heads * key_size)):
            raise AnalysisError(f"decay {decay} should be (B, T, {self.kv_heads}) or (B, T, "
                                f"{self.kv_heads * key_size})")
        if beta is not None and (beta.rank != 3 or beta.shape[2] not in (self.kv_heads, 1)):
            raise AnalysisError(f"beta {beta} should be (B, T, {self.kv_heads}) or (B, T, 1)")
        return [TypedFact(q.dtype, (q.shape[0], q.shape[1], self.q_heads * value_size)),
                TypedFact(past.dtype if past is not None else q.dtype, state)]

    def rules(self, s, inputs, outputs):
        s.equals_all(inputs[0].datum_type, inputs[1].datum_type, inputs[2].datum_type, outputs[0].datum_type)
        s.equals(outputs[0].rank, 3)
        s.equals(outputs[1].rank, 4)

    def eval(self, inputs):
        q, k, v, past, decay, beta = self._split(inputs)
        work = np.float64 if q.dtype == np.float64 else np.float32
        batch, steps = q.shape[:2]
        q4, k4, v4 = (_heads(x.astype(work), h) for x, h in
                      ((q, self.q_heads), (k, self.kv_heads), (v, self.kv_heads)))
        key_size, value_size = q4.shape[3], v4.shape[3]
        group = self.q_heads // self.kv_heads
        if past is not None:
            state = past.astype(work)
        else:
            state = np.zeros((batch, self.kv_heads, key_size, value_size), dtype=work)
        if decay is not None:
            width = decay.shape[2] // self.kv_heads
            gates = np.exp(decay.astype(work).reshape(batch, steps, self.kv_heads, width, 1))
        if beta is not None:
            rates = beta.astype(work).reshape(batch, steps, -1, 1)
        scale = self.scale or 1.0 / math.sqrt(key_size)
        queries = q4.reshape(batch, self.kv_heads, group, steps, key_size)
        out = np.empty((batch, self.kv_heads, group, steps, value_size), dtype=work)
        for t in range(steps):
            key, value = k4[:, :, t], v4[:, :, t]
            if decay is not None:
                state = state * gates[:, t]
            if beta is not None:
                recalled = np.matmul(key[:, :, None, :], state)[:, :, 0]
                value = rates[:, t] * (value - recalled)
            state = state + key[..., :, None] * value[..., None, :]
            out[:, :, :, t] = np.matmul(queries[:, :, :, t], state) * work(scale)
        y = out.reshape(batch, self.q_heads, steps, value_size).transpose(0, 2, 1, 3)
        return [y.reshape(batch, steps, -1).astype(q.dtype),
                state.astype(past.dtype if past is not None else q.dtype)]
