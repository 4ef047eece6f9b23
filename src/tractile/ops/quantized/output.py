"""The output stage of quantized matmuls and convolutions, and a wrapper-free clip.

:class:`OutputStage` turns exact accumulators into output integers with TFLite's
fixed-point requantization in as few vectorised int64 passes as the arithmetic allows.
"""
from __future__ import annotations

import numpy as np

from .fixedpoint import Requantizer


class OutputStage:
    """Exact accumulators to output integers: bias, fixed-point requantization, zero point, clamp.

    The constants are merged once: ``(acc + bias) * m + 2**30`` needs one multiply and one
    add (``bias * m + 2**30`` precomputed), the output zero point joins the rounding
    constant of the right shift, and the sign correction of that rounding is skipped when
    every value below the zero point is clamped anyway (ReLU-like activations), since it
    can only move such values. ``bias`` may include the input zero-point correction.

    Without the sign correction the two roundings fold into one shift, since
    ``floor((floor(u) + c) / 2**r) == floor((u + c) / 2**r)`` for integers ``c``: the
    result is ``(p + 2**30 + c * 2**31) >> (31 + r)`` with ``p = (acc + bias) * m``, used
    when ``acc_bound`` (the largest possible ``|acc|``) shows it cannot overflow int64.
    """

    def __init__(self, requant: Requantizer, bias, zero: int, low: int, high: int, dtype, channels: int,
                 acc_bound: float | None = None):
        multipliers = np.broadcast_to(requant.multipliers, (channels,)).astype(np.int64)
        shifts = np.broadcast_to(requant.shifts, (channels,)).astype(np.int64)
        self.generic = bool(np.any(shifts > 0))
        self.requant, self.zero, self.low, self.high, self.dtype = requant, zero, low, high, dtype
        bias = np.zeros(channels, np.int64) if bias is None else np.broadcast_to(bias, (channels,)).astype(np.int64)
        self.bias = bias
        right = -shifts
        rounding = np.where(right > 0, np.left_shift(1, np.maximum(right - 1, 0)), 0) + np.left_shift(zero, right)
        self._vectors = (multipliers, bias * multipliers + (1 << 30), rounding, right, np.where(right > 0, -1, 0))
        self._tiled: dict = {}
        self.sign = low < zero and bool(np.any(right > 0))
        self.fused = None
        if not self.sign and not self.generic and acc_bound is not None:
            # in Python integers: with a large bias and shift (dead channels) the offset leaves int64
            exact = [int(b) * int(m) + (1 << 30) + (int(r) << 31) for b, m, r in zip(bias, multipliers, rounding)]
            largest = (float(acc_bound) + float(np.abs(bias).max(initial=0))) * float(multipliers.max(initial=0))
            if largest + float(max((abs(v) for v in exact), default=0)) < 2.0 ** 62:
                self.fused = (multipliers, np.array(exact, np.int64), right + 31)

    def constants(self, repeat: int) -> tuple:
        """(multiplier, offset, rounding, right shift, sign mask), or (multiplier, offset, shift)
        when fused; each a scalar when uniform, else a vector repeated ``repeat`` times (to run
        along rows of ``repeat`` pixels)."""
        if repeat not in self._tiled:
            vectors = self.fused if self.fused is not None else self._vectors
            self._tiled[repeat] = tuple(int(v[0]) if v.size and np.all(v == v[0]) else np.tile(v, repeat)
                                        for v in vectors)
        return self._tiled[repeat]

    def __call__(self, acc: np.ndarray, repeat: int = 1) -> np.ndarray:
        """``acc``'s last axis holds ``repeat`` pixels of all channels."""
        total = acc.astype(np.int64)
        if self.generic:
            total = total.reshape(*total.shape[:-1], repeat, -1)
            total += self.bias
            self.requant.apply_inplace(total)
            total += self.zero
            return _clamp(total, self.low, self.high, self.dtype).reshape(acc.shape)
        if self.fused is not None:
            multiplier, offset, shift = self.constants(repeat)
            total *= multiplier
            total += offset
            np.right_shift(total, shift, out=total)
            return _clamp(total, self.low, self.high, self.dtype)
        multiplier, offset, rounding, right, negmask = self.constants(repeat)
        total *= multiplier
        total += offset
        total >>= 31
        if self.sign:
            sign = total >> 63
            if not isinstance(negmask, int):
                sign &= negmask
            total += sign
        total += rounding
        if not (isinstance(right, int) and right == 0):
            np.right_shift(total, right, out=total)
        return _clamp(total, self.low, self.high, self.dtype)


def clip_inplace(values: np.ndarray, low, high) -> np.ndarray:
    """``np.clip(values, low, high, out=values)`` in two ufunc calls (no Python wrapper)."""
    np.maximum(values, low, out=values)
    np.minimum(values, high, out=values)
    return values


def _scalar_if_uniform(values: np.ndarray):
    return int(values[0]) if values.size and np.all(values == values[0]) else values


def _clamp(values: np.ndarray, low: int, high: int, dtype) -> np.ndarray:
    np.maximum(values, low, out=values)
    out = np.empty(values.shape, dtype)
    np.minimum(values, high, out=out, casting="unsafe")
    return out
