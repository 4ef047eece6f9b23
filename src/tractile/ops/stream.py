"""The stateful ops of pulsed (streamed) models: Delay (the frame buffer), PulseMask (padding at
the stream's ends) and EdgeAveragePool (an average pool whose windows reach into that padding),
with the per-stream state they share. ``pulse/`` builds them; the interpreter and the compiler
run them like any op.

Every state derives from :class:`StreamOpState`: it can say how many bytes it holds
and reads the stream's :class:`StreamContext` (the stream length once it is known).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..dim import Dim, eval_dim
from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .base import Op, expect_inputs
from .pool import AveragePool


class StreamContext:
    """What every op state of one stream shares: the stream symbol and, once the caller
    has said where the stream ends, its length."""

    def __init__(self, symbol: str):
        self.symbol = symbol
        self.length: int | None = None

    def evaluate(self, dim: Dim) -> int | None:
        """``dim`` (an expression of the stream symbol) now, or None while the length is unknown."""
        if isinstance(dim, int):
            return dim
        if self.length is None:
            return None
        return eval_dim(dim, {self.symbol: self.length})


class StreamOpState:
    """Base of the per-stream state of a pulsed op (``reset`` starts a new stream)."""

    context: StreamContext | None = None

    def reset(self) -> None:
        raise NotImplementedError

    def memory_bytes(self) -> int:
        return 0

    def eval(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        raise NotImplementedError


def along(axis: int, start: int | None, stop: int | None) -> tuple:
    """An index selecting ``start:stop`` on ``axis`` and everything on the other axes."""
    return (slice(None),) * axis + (slice(start, stop),)


@dataclass(frozen=True)
class Delay(Op):
    """Delays a stream along ``axis`` by ``delay`` frames and adds ``overlap`` frames of its past.

    Each call takes ``P`` frames and gives ``P + overlap``: the frames of the input stream
    from ``delay + overlap`` frames before the new ones up to ``delay`` frames before their
    end. The frames before the stream start hold ``fill`` (zero-padding for a convolution,
    the lowest value for a max pool). Used in a batch model, it shifts the sequence right by
    ``delay`` frames (a lag) and prepends ``overlap`` fill frames.

    ``shape``/``dtype``, when known, let the buffer be allocated when the stream starts.
    """

    axis: int
    delay: int
    overlap: int = 0
    fill: float = 0.0
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    is_stateless: ClassVar[bool] = False

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        if not 0 <= self.axis < x.rank:
            raise AnalysisError(f"Delay axis {self.axis} is out of range for {x}")
        if self.delay < 0 or self.overlap < 0:
            raise AnalysisError(f"Delay needs delay and overlap >= 0, got {self.delay} and {self.overlap}")
        shape = list(x.shape)
        shape[self.axis] = shape[self.axis] + self.overlap
        return [TypedFact(x.dtype, shape, qparams=x.qparams)]

    def eval(self, inputs):
        return self.state().eval(inputs)

    def state(self) -> DelayState:
        return DelayState(self)


class DelayState(StreamOpState):
    """A sliding buffer: new frames are written after the history, the output is a view.

    The buffer holds ``history = delay + overlap`` frames of the past plus room for several
    pulses; only when the room is used up is the history moved back to the front, so a push
    costs about one copy of its own frames.
    """

    def __init__(self, op: Delay):
        self.op = op
        self.history = op.delay + op.overlap
        self.buffer: np.ndarray | None = None
        self._readonly: np.ndarray | None = None
        self._chunk_shape: tuple[int, ...] | None = None
        self._lead = (slice(None),) * op.axis
        self.tail = self.history
        if op.shape is not None and op.dtype is not None:
            self._allocate(op.shape, np.dtype(op.dtype))

    def _allocate(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        pulse = shape[self.op.axis]
        pulses = max(2, -(-2 * self.history // max(pulse, 1)))
        full = list(shape)
        full[self.op.axis] = self.history + pulse * pulses
        self.buffer = np.full(full, self.op.fill, dtype=dtype)
        self._readonly = self.buffer.view()
        self._readonly.flags.writeable = False
        self.tail = self.history

    def reset(self) -> None:
        if self.buffer is not None:
            self.buffer.fill(self.op.fill)
        self.tail = self.history

    def memory_bytes(self) -> int:
        return 0 if self.buffer is None else self.buffer.nbytes

    def eval(self, inputs):
        x = inputs[0]
        axis = self.op.axis
        buffer = self.buffer
        if buffer is None or x.shape != self._chunk_shape or buffer.dtype != x.dtype:
            if buffer is None or buffer.dtype != x.dtype or \
                    buffer.shape[:axis] + buffer.shape[axis + 1:] != x.shape[:axis] + x.shape[axis + 1:]:
                self._allocate(x.shape, x.dtype)
                buffer = self.buffer
            self._chunk_shape = x.shape
        pulse = x.shape[axis]
        history = self.history
        lead = self._lead
        if self.tail + pulse > buffer.shape[axis]:
            if pulse + history > buffer.shape[axis]:
                raise RunError(f"Delay: a chunk of {pulse} frames is larger than the buffer was made for")
            buffer[lead + (slice(0, history),)] = buffer[lead + (slice(self.tail - history, self.tail),)]
            self.tail = history
        tail = self.tail
        buffer[lead + (slice(tail, tail + pulse),)] = x
        start = tail - history
        self.tail = tail + pulse
        return [self._readonly[lead + (slice(start, start + pulse + self.op.overlap),)]]


@dataclass(frozen=True, eq=False)
class PulseMask(Op):
    """Replaces the frames of a stream that lie outside its real data by ``value``.

    Positions count the frames this wire has carried since the stream started. Frames
    before ``begin`` (when not None) and, once the stream length is known, from ``end`` on
    (an expression of the stream symbol) become ``value``: this is how padding happens at
    both ends of a stream whose wire is late (its first frames are not zeros).
    """

    axis: int
    begin: int | None
    end: Dim | None
    value: float = 0.0
    is_stateless: ClassVar[bool] = False

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        return [TypedFact(x.dtype, x.shape, qparams=x.qparams)]

    def eval(self, inputs):
        return self.state().eval(inputs)

    def state(self) -> PulseMaskState:
        return PulseMaskState(self)


class PulseMaskState(StreamOpState):
    def __init__(self, op: PulseMask):
        self.op = op
        self.position = 0

    def reset(self) -> None:
        self.position = 0

    def eval(self, inputs):
        x = inputs[0]
        op = self.op
        pulse = x.shape[op.axis]
        first = self.position
        self.position += pulse
        keep_from = 0 if op.begin is None else min(max(op.begin - first, 0), pulse)
        keep_to = pulse
        if op.end is not None and self.context is not None:
            end = self.context.evaluate(op.end)
            if end is not None:
                keep_to = min(max(end - first, 0), pulse)
        if keep_from == 0 and keep_to == pulse:
            return [x]
        out = np.array(x, copy=True)
        out[along(op.axis, 0, keep_from)] = op.value
        out[along(op.axis, max(keep_to, keep_from), None)] = op.value
        return [out]


@dataclass(frozen=True)
class EdgeAveragePool(Op):
    """An average pool over windows that may reach into the padding at the stream's ends.

    ``pool`` averages whole windows (the padding frames are zeros in its input); frames
    whose window covers padding are rescaled to divide by the frames that count: padded
    positions ``counted_from <= p < length + counted_to``.
    """

    pool: AveragePool
    axis: int
    kernel: int
    dilation: int
    stride: int
    counted_from: int
    counted_to: int
    length: Dim
    delay: int
    is_stateless: ClassVar[bool] = False

    def output_facts(self, inputs):
        return self.pool.output_facts(inputs)

    def eval(self, inputs):
        return self.state().eval(inputs)

    def state(self) -> EdgeAveragePoolState:
        return EdgeAveragePoolState(self)


class EdgeAveragePoolState(StreamOpState):
    def __init__(self, op: EdgeAveragePool):
        self.op = op
        self.position = 0

    def reset(self) -> None:
        self.position = 0

    def eval(self, inputs):
        op = self.op
        y = op.pool.eval(inputs)[0]
        frames = y.shape[op.axis]
        first = self.position - op.delay
        self.position += frames
        end = None if self.context is None else self.context.evaluate(op.length)
        high = None if end is None else end + op.counted_to
        reach = (op.kernel - 1) * op.dilation
        if first * op.stride >= op.counted_from and (high is None or (first + frames - 1) * op.stride + reach < high):
            return [y]
        taps = (np.arange(first, first + frames)[:, None] * op.stride
                + np.arange(op.kernel)[None, :] * op.dilation)
        inside = taps >= op.counted_from
        if high is not None:
            inside &= taps < high
        counts = np.maximum(inside.sum(axis=1), 1)
        scale = (op.kernel / counts).astype(y.dtype)
        shape = [1] * y.ndim
        shape[op.axis] = frames
        out = y * scale.reshape(shape)
        return [out]
