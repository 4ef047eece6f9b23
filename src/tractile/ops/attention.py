"""Scaled dot-product attention (ONNX Attention, opsets 23 to 25) and rotary position embeddings.

Attention takes Q, K, V as (B, H, S, D) or packed (B, S, H*D) with head counts as
attributes. Grouped-query attention runs without copying K and V: queries are
viewed as (B, H_kv, group, S, D) so each key/value head serves its group by
broadcasting. Masks (float, added; bool, True = attend), the causal frontier, a
sliding window and per-batch key padding combine into one additive bias; a query
whose bias is -inf everywhere gets a zero output row.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..datum import DatumType
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .base import Op, expect_inputs
from .broadcast import broadcast_shapes
from .nn import drop_unused_outputs

#: qk_matmul_output modes
RAW, SOFTCAPPED, BIASED, PROBABILITIES = 0, 1, 2, 3


def work_dtype(dtype: np.dtype) -> np.dtype:
    """f16, f32 and f64 compute natively; other floats (bf16...) in f32."""
    return np.dtype(dtype) if dtype in (np.float16, np.float32, np.float64) else np.dtype(np.float32)


@dataclass(frozen=True)
class Attention(Op):
    """ONNX Attention. Inputs, in order: Q, K, V, then those of attn_mask, past_key,
    past_value, nonpad_kv_seqlen that ``has_mask`` / ``has_past`` / ``has_nonpad`` say
    are wired. Outputs: Y, then present_key and present_value, then qk_matmul_output,
    as many as ``outputs`` (1 to 4)."""

    q_heads: int | None = None
    kv_heads: int | None = None
    scale: float | None = None
    causal: bool = False
    softcap: float = 0.0
    qk_output_mode: int = RAW
    softmax_precision: DatumType | None = None
    left_window: int = -1
    right_window: int = -1
    has_mask: bool = False
    has_past: bool = False
    has_nonpad: bool = False
    outputs: int = 1

    @property
    def nboutputs(self) -> int:
        return self.outputs

    def _split(self, inputs: list) -> tuple:
        q, k, v, *rest = inputs
        mask = rest.pop(0) if self.has_mask else None
        past_key, past_value = (rest.pop(0), rest.pop(0)) if self.has_past else (None, None)
        nonpad = rest.pop(0) if self.has_nonpad else None
        return q, k, v, mask, past_key, past_value, nonpad

    def _heads(self, q, k, v) -> tuple:
        """(q heads, kv heads, q head size, v head size) from 4-d shapes or the head attributes."""
        if q.rank == 4:
            return q.shape[1], k.shape[1], q.shape[3], v.shape[3]
        if not self.q_heads or not self.kv_heads:
            raise AnalysisError("3-d Q, K, V need the q_num_heads and kv_num_heads attributes")
        sizes = []
        for fact, heads, what in ((q, self.q_heads, "Q"), (k, self.kv_heads, "K"), (v, self.kv_heads, "V")):
            if isinstance(fact.shape[2], int) and fact.shape[2] % heads:
                raise AnalysisError(f"{what} hidden size {fact.shape[2]} is not a multiple of {heads} heads")
            sizes.append(fact.shape[2] // heads)
        if sizes[0] != sizes[1]:
            raise AnalysisError(f"Q and K head sizes differ: {sizes[0]} and {sizes[1]}")
        return self.q_heads, self.kv_heads, sizes[0], sizes[2]

    def output_facts(self, inputs):
        expect_inputs(inputs, 3 + self.has_mask + 2 * self.has_past + self.has_nonpad, self)
        q, k, v, mask, past_key, past_value, nonpad = self._split(inputs)
        if q.rank not in (3, 4) or k.rank != q.rank or v.rank != q.rank:
            raise AnalysisError(f"Q, K and V must all be 3-d or all 4-d, got {q}, {k} and {v}")
        if not q.dtype.is_float or k.dtype != q.dtype:
            raise AnalysisError(f"Q and K must be floats of one type, got {q} and {k}")
        q_heads, kv_heads, head_size, v_head_size = self._heads(q, k, v)
        if isinstance(q_heads, int) and isinstance(kv_heads, int) and q_heads % kv_heads:
            raise AnalysisError(f"{q_heads} query heads cannot share {kv_heads} key/value heads")
        batch = q.shape[0]
        q_len = q.shape[2] if q.rank == 4 else q.shape[1]
        kv_len = k.shape[2] if k.rank == 4 else k.shape[1]
        total = kv_len
        if past_key is not None:
            for past, size in ((past_key, head_size), (past_value, v_head_size)):
                if past.rank != 4 or past.shape[1] != kv_heads or past.shape[3] != size:
                    raise AnalysisError(f"past key/value {past} should be ({batch},{kv_heads},past,{size})")
            total = past_key.shape[2] + kv_len
        if mask is not None:
            if mask.dtype != DatumType.BOOL and not mask.dtype.is_float:
                raise AnalysisError(f"attn_mask should be bool or float, got {mask}")
            try:
                target = (batch, q_heads, q_len)
                merged = broadcast_shapes(tuple(mask.shape[:-1]), target)
                fits = mask.rank <= 4 and all(m == t for m, t in zip(merged, target) if isinstance(t, int))
            except AnalysisError:
                fits = False
            longer = mask.rank and isinstance(mask.shape[-1], int) and isinstance(total, int) and mask.shape[-1] > total
            if not fits or longer:
                raise AnalysisError(f"attn_mask {mask} does not broadcast to ({batch},{q_heads},{q_len},{total})")
        if nonpad is not None and (nonpad.rank != 1 or nonpad.dtype != DatumType.I64):
            raise AnalysisError(f"nonpad_kv_seqlen should be an i64 vector of {batch}, got {nonpad}")
        if q.rank == 4:
            y = TypedFact(q.dtype, (batch, q_heads, q_len, v_head_size))
        else:
            y = TypedFact(q.dtype, (batch, q_len, q_heads * v_head_size))
        facts = [y, TypedFact(k.dtype, (batch, kv_heads, total, head_size)),
                 TypedFact(v.dtype, (batch, kv_heads, total, v_head_size)),
                 TypedFact(q.dtype, (batch, q_heads, q_len, total))]
        return facts[:self.outputs]

    def rules(self, s, inputs, outputs):
        s.equals_all(inputs[0].datum_type, inputs[1].datum_type, outputs[0].datum_type)
        s.equals(inputs[0].rank, outputs[0].rank)
        s.equals(inputs[0].shape[0], outputs[0].shape[0])

    @staticmethod
    def _as_heads(x: np.ndarray, heads: int | None) -> np.ndarray:
        if x.ndim == 4:
            return x
        batch, length, hidden = x.shape
        return x.reshape(batch, length, heads, hidden // heads).transpose(0, 2, 1, 3)

    def eval(self, inputs):
        q, k, v, mask, past_key, past_value, nonpad = self._split(inputs)
        work = work_dtype(q.dtype)
        q4 = self._as_heads(q, self.q_heads).astype(work, copy=False)
        k4 = self._as_heads(k, self.kv_heads).astype(work, copy=False)
        v4 = self._as_heads(v, self.kv_heads).astype(work, copy=False)
        past = 0
        if past_key is not None:
            past = past_key.shape[2]
            k4 = np.concatenate([past_key.astype(work), k4], axis=2)
            v4 = np.concatenate([past_value.astype(work), v4], axis=2)
        batch, q_heads, q_len, head_size = q4.shape
        kv_heads, total = k4.shape[1], k4.shape[2]
        if q_heads % kv_heads:
            raise RunError(f"{q_heads} query heads cannot share {kv_heads} key/value heads")
        group = q_heads // kv_heads
        root_scale = work.type(math.sqrt(self.scale if self.scale is not None else 1.0 / math.sqrt(head_size)))
        q5 = (q4 * root_scale).reshape(batch, kv_heads, group, q_len, head_size)
        # reshape, not [:, :, None]: NumPy's matmul skips BLAS on zero strides
        k5 = (k4 * root_scale).reshape(batch, kv_heads, 1, total, head_size)
        raw = np.matmul(q5, np.swapaxes(k5, -1, -2)).reshape(batch, q_heads, q_len, total)
        capped = raw
        if self.softcap > 0:
            cap = work.type(self.softcap)
            capped = np.tanh(raw / cap) * cap
        offset = (nonpad.reshape(-1).astype(np.int64) - q_len) if nonpad is not None and past_key is None else past
        bias = self._bias(mask, nonpad, offset, q_len, total, work)
        logits = capped + bias
        probs = self._softmax(logits)
        masked_rows = np.isneginf(np.max(bias, axis=-1, keepdims=True))
        if masked_rows.any():
            probs = np.where(masked_rows, probs.dtype.type(0), probs)
        probs = probs.astype(work, copy=False)
        values = v4.reshape(batch, kv_heads, 1, total, v4.shape[3])
        y5 = np.matmul(probs.reshape(batch, kv_heads, group, q_len, total), values)
        y = y5.reshape(batch, q_heads, q_len, -1)
        if q.ndim == 3:
            y = y.transpose(0, 2, 1, 3).reshape(batch, q_len, -1)
        results = [y.astype(q.dtype), k4.astype(k.dtype), v4.astype(v.dtype)]
        if self.outputs == 4:
            qk = {RAW: raw, SOFTCAPPED: capped, BIASED: logits, PROBABILITIES: probs}[self.qk_output_mode]
            results.append(np.broadcast_to(qk, (batch, q_heads, q_len, total)).astype(q.dtype))
        return results[:self.outputs]

    def cost(self, inputs):
        q, k, v, _, past_key, _, _ = self._split(inputs)
        q_heads, _, head_size, v_head_size = self._heads(q, k, v)
        q_len = q.shape[2] if q.rank == 4 else q.shape[1]
        total = (k.shape[2] if k.rank == 4 else k.shape[1]) + (past_key.shape[2] if past_key is not None else 0)
        return {"flops": 2 * q.shape[0] * q_heads * q_len * total * (head_size + v_head_size)}

    def declutter(self, model, node):
        return drop_unused_outputs(model, node)

    def _softmax(self, logits: np.ndarray) -> np.ndarray:
        if self.softmax_precision is not None:
            logits = logits.astype(work_dtype(self.softmax_precision.np))
        top = np.max(logits, axis=-1, keepdims=True)
        top = np.where(np.isneginf(top), logits.dtype.type(0), top)
        exp = np.exp(logits - top)
        total = np.sum(exp, axis=-1, keepdims=True)
        return exp / np.where(total == 0, total.dtype.type(1), total)

    def _bias(self, mask, nonpad, offset, q_len: int, total: int, work) -> np.ndarray:
        """The additive bias: mask, causal frontier, window and key padding, broadcastable to the scores."""
        minus_inf = work.type(-np.inf)
        bias = np.zeros((q_len, total), dtype=work)
        if mask is not None:
            short = total - mask.shape[-1]
            if short > 0:
                fill = False if mask.dtype == bool else -np.inf
                mask = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, short)], constant_values=fill)
            mask = np.where(mask, work.type(0), minus_inf) if mask.dtype == bool else mask.astype(work)
            bias = bias + mask
        per_batch = np.ndim(offset) > 0
        rows = np.arange(q_len).reshape(-1, 1)
        cols = np.arange(total).reshape(1, -1)
        position = rows + (np.reshape(offset, (-1, 1, 1, 1)) if per_batch else offset)
        allowed = np.ones(np.broadcast_shapes(position.shape, cols.shape), dtype=bool)
        if self.causal:
            allowed &= cols <= position
        if self.left_window >= 0:
            allowed &= position - cols <= self.left_window
        if self.right_window >= 0:
            allowed &= cols - position <= self.right_window
        if nonpad is not None:
            allowed = allowed & (cols < nonpad.reshape(-1, 1, 1, 1))
        if not allowed.all():
            bias = bias + np.where(allowed, work.type(0), minus_inf)
        return bias


@dataclass(frozen=True)
class RotaryEmbedding(Op):
    """Rotary position embedding (RoPE) of X (B, H, S, D), or (B, S, H*D) with ``num_heads``.

    Inputs X, cos_cache, sin_cache and, with ``has_positions``, position ids (B, S) that
    index the caches' first axis; without them the caches are (B, S, rotary_dim/2). The
    first ``rotary_dim`` (0: all) features of each head rotate as halves or, with
    ``interleaved``, as (even, odd) pairs.
    """

    interleaved: bool = False
    num_heads: int = 0
    rotary_dim: int = 0
    has_positions: bool = False

    def _head_size(self, x: TypedFact):
        if x.rank == 4:
            return x.shape[3]
        if x.rank != 3 or self.num_heads <= 0:
            raise AnalysisError(f"RotaryEmbedding needs a 4-d input, or a 3-d one with num_heads, got {x}")
        if isinstance(x.shape[2], int) and x.shape[2] % self.num_heads:
            raise AnalysisError(f"hidden size {x.shape[2]} is not a multiple of {self.num_heads} heads")
        return x.shape[2] // self.num_heads

    def output_facts(self, inputs):
        expect_inputs(inputs, 4 if self.has_positions else 3, self)
        x, cos, sin = inputs[:3]
        if not x.dtype.is_float or cos.dtype != x.dtype or sin.dtype != x.dtype:
            raise AnalysisError(f"X and the caches must be floats of one type, got {x}, {cos} and {sin}")
        head_size = self._head_size(x)
        rotary = self.rotary_dim or head_size
        if isinstance(head_size, int) and (rotary % 2 or rotary > head_size):
            raise AnalysisError(f"rotary dimension {rotary} must be even and at most the head size {head_size}")
        if cos.shape != sin.shape or cos.rank != (2 if self.has_positions else 3) or cos.shape[-1] != rotary // 2:
            raise AnalysisError(f"caches should be {'(positions' if self.has_positions else '(B, S'}, {rotary // 2}) "
                                f"and alike, got {cos} and {sin}")
        if self.has_positions and (inputs[3].rank != 2 or not inputs[3].dtype.is_integer):
            raise AnalysisError(f"position_ids should be an integer (B, S) tensor, got {inputs[3]}")
        return [TypedFact(x.dtype, x.shape)]

    def rules(self, s, inputs, outputs):
        s.equals_shape(inputs[0], outputs[0])
        s.equals(inputs[0].datum_type, outputs[0].datum_type)

    def eval(self, inputs):
        x, cos, sin = inputs[:3]
        if self.has_positions:
            positions = inputs[3].astype(np.int64)
            if positions.size and (positions.min() < 0 or positions.max() >= cos.shape[0]):
                raise RunError(f"position ids must be in [0, {cos.shape[0]}), got {positions.min()} to "
                               f"{positions.max()}")
            cos, sin = cos[positions], sin[positions]
        work = work_dtype(x.dtype)
        if x.ndim == 4:
            heads = x.transpose(0, 2, 1, 3)
        else:
            heads = x.reshape(*x.shape[:2], self.num_heads, -1)
        heads = heads.astype(work)
        rotary = self.rotary_dim or heads.shape[3]
        cos = cos.astype(work)[:, :, None, :]
        sin = sin.astype(work)[:, :, None, :]
        part = heads[..., :rotary]
        if self.interleaved:
            first, second = part[..., 0::2], part[..., 1::2]
        else:
            first, second = part[..., :rotary // 2], part[..., rotary // 2:]
        real = cos * first - sin * second
        imaginary = sin * first + cos * second
        if self.interleaved:
            rotated = np.stack([real, imaginary], axis=-1).reshape(part.shape)
        else:
            rotated = np.concatenate([real, imaginary], axis=-1)
        out = np.concatenate([rotated, heads[..., rotary:]], axis=-1)
        out = out.transpose(0, 2, 1, 3) if x.ndim == 4 else out.reshape(x.shape)
        return [out.astype(x.dtype)]
