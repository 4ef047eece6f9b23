"""Framing ops with memory, as TFLite Micro's signal library has them: cut a stream of samples
into overlapping frames, stack successive frames, overlap-add frames back into a stream, delay
a stream. Each keeps a buffer from call to call (zero, or empty, after a reset).

Where TFLite Micro leaves an output unwritten (a frame not yet complete), these ops give zeros.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import TypedFact
from ..base import Op, expect_inputs
from .common import expect_dtype, expect_rank, known_dim

I16, F32, BOOL = DatumType.I16, DatumType.F32, DatumType.BOOL


def _outer(shape: tuple) -> int:
    return int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1


@dataclass(frozen=True)
class Framer(Op):
    """Cut the last axis of an int16 stream into frames of ``frame_size`` samples every
    ``frame_step`` (TFLite Micro's SignalFramer). Each call takes a multiple of ``frame_step``
    samples and gives one frame per step: [..., n] -> [..., n / frame_step, frame_size], and a
    bool scalar that is false when some frame was not complete yet (it is then zero). With
    ``prefill`` the buffer starts with ``frame_size - frame_step`` zeros, so every frame is."""

    frame_size: int
    frame_step: int
    prefill: bool = False
    is_stateless: ClassVar[bool] = False

    @property
    def nboutputs(self) -> int:
        return 2

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        expect_dtype(x, (I16,), self, "the samples")
        length = known_dim(x, -1, self, "the samples")
        if self.frame_size < 1 or self.frame_step < 1:
            raise AnalysisError(f"{self.name}: frame_size and frame_step must be positive")
        if length < self.frame_step or length % self.frame_step:
            raise AnalysisError(f"{self.name}: {length} samples are not a multiple of frame_step {self.frame_step}")
        return [TypedFact(I16, tuple(x.shape[:-1]) + (length // self.frame_step, self.frame_size)),
                TypedFact(BOOL, ())]

    @property
    def capacity(self) -> int:
        return -(-self.frame_size // self.frame_step) * self.frame_step

    def state(self) -> FramerState:
        return FramerState(self)

    def eval(self, inputs):
        return FramerState(self).eval(inputs)


class FramerState:
    """The samples not yet framed, per row: ``buffer[:, :count]``."""

    def __init__(self, op: Framer):
        self.op = op
        self.buffer: np.ndarray | None = None
        self.count = 0

    def reset(self) -> None:
        self.buffer = None
        self.count = 0

    def memory_bytes(self) -> int:
        return 0 if self.buffer is None else self.buffer.nbytes

    def eval(self, inputs):
        op = self.op
        x = inputs[0]
        rows = x.reshape(-1, x.shape[-1])
        if self.buffer is None or self.buffer.shape[0] != rows.shape[0]:
            self.buffer = np.zeros((rows.shape[0], op.capacity), dtype=np.int16)
            self.count = op.frame_size - op.frame_step if op.prefill else 0
        frames = rows.shape[1] // op.frame_step
        out = np.zeros((rows.shape[0], frames, op.frame_size), dtype=np.int16)
        valid = True
        for frame in range(frames):
            self.buffer[:, self.count:self.count + op.frame_step] = \
                rows[:, frame * op.frame_step:(frame + 1) * op.frame_step]
            self.count += op.frame_step
            if self.count >= op.frame_size:
                out[:, frame] = self.buffer[:, :op.frame_size]
                self.buffer[:, :self.count - op.frame_step] = self.buffer[:, op.frame_step:self.count]
                self.count -= op.frame_step
            else:
                valid = False
        return [out.reshape(x.shape[:-1] + (frames, op.frame_size)), np.array(valid)]


@dataclass(frozen=True)
class Stacker(Op):
    """Stack int16 frames of ``num_channels`` values: each call takes one frame and, once
    ``left_context + 1 + right_context`` frames are in, gives them concatenated oldest first,
    then moves on by ``step`` frames (TFLite Micro's SignalStacker). The first frame counts
    ``left_context`` more times (its copies stand for the past). Outputs: the stack (zero when
    not ready) and a bool scalar saying whether it is ready."""

    num_channels: int
    left_context: int
    right_context: int
    step: int
    is_stateless: ClassVar[bool] = False

    @property
    def nboutputs(self) -> int:
        return 2

    @property
    def frames(self) -> int:
        return self.left_context + 1 + self.right_context

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        expect_dtype(x, (I16,), self, "the frame")
        expect_rank(x, 1, self, "the frame")
        if known_dim(x, 0, self, "the frame") != self.num_channels:
            raise AnalysisError(f"{self.name}: num_channels is {self.num_channels} but the frame is {x}")
        if self.left_context < 0 or self.right_context < 0 or not 1 <= self.step <= self.frames:
            raise AnalysisError(f"{self.name}: the contexts must be >= 0 and the step in 1..{self.frames}")
        return [TypedFact(I16, (self.num_channels * self.frames,)), TypedFact(BOOL, ())]

    def state(self) -> StackerState:
        return StackerState(self)

    def eval(self, inputs):
        return StackerState(self).eval(inputs)


class StackerState:
    """The frames waiting, oldest first, and whether the first frame has come."""

    def __init__(self, op: Stacker):
        self.op = op
        self.buffer = np.zeros(op.num_channels * op.frames, dtype=np.int16)
        self.count = 0
        self.started = False

    def reset(self) -> None:
        self.count = 0
        self.started = False

    def memory_bytes(self) -> int:
        return self.buffer.nbytes

    def eval(self, inputs):
        op = self.op
        size, channels = self.buffer.size, op.num_channels
        self.buffer[self.count:self.count + channels] = inputs[0]
        self.count += channels
        if not self.started:
            for _ in range(op.left_context):
                self.buffer[self.count:self.count + channels] = inputs[0]
                self.count += channels
            self.started = True
        if self.count < size:
            return [np.zeros(size, dtype=np.int16), np.array(False)]
        out = self.buffer.copy()
        shift = op.step * channels
        self.buffer[:size - shift] = out[shift:]
        self.count -= shift
        return [out, np.array(True)]


@dataclass(frozen=True)
class OverlapAdd(Op):
    """Overlap-add frames back into a stream (TFLite Micro's SignalOverlapAdd): [..., n,
    frame_size] -> [..., n * frame_step]. Each frame is added to a buffer of the frames before
    (int16 saturating, or float32); the buffer's first ``frame_step`` values go out and it
    moves on by as many."""

    frame_step: int
    is_stateless: ClassVar[bool] = False

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        expect_dtype(x, (I16, F32), self, "the frames")
        if x.rank < 2:
            raise AnalysisError(f"{self.name}: the frames need at least 2 dims, got {x}")
        size = known_dim(x, -1, self, "the frames")
        frames = known_dim(x, -2, self, "the frames")
        if not 1 <= self.frame_step <= size:
            raise AnalysisError(f"{self.name}: frame_step must be in 1..{size}, got {self.frame_step}")
        return [TypedFact(x.dtype, tuple(x.shape[:-2]) + (frames * self.frame_step,))]

    def state(self) -> OverlapAddState:
        return OverlapAddState(self)

    def eval(self, inputs):
        return OverlapAddState(self).eval(inputs)


class OverlapAddState:
    """The sums not yet given out, per row: [rows, frame_size]."""

    def __init__(self, op: OverlapAdd):
        self.op = op
        self.buffer: np.ndarray | None = None

    def reset(self) -> None:
        if self.buffer is not None:
            self.buffer[:] = 0

    def memory_bytes(self) -> int:
        return 0 if self.buffer is None else self.buffer.nbytes

    def eval(self, inputs):
        x = inputs[0]
        step = self.op.frame_step
        rows = x.reshape(-1, x.shape[-2], x.shape[-1])
        if self.buffer is None or self.buffer.shape != (rows.shape[0], rows.shape[2]) or self.buffer.dtype != x.dtype:
            self.buffer = np.zeros((rows.shape[0], rows.shape[2]), dtype=x.dtype)
        out = np.empty((rows.shape[0], rows.shape[1], step), dtype=x.dtype)
        for frame in range(rows.shape[1]):
            if x.dtype == np.int16:
                total = np.clip(self.buffer.astype(np.int32) + rows[:, frame], -32768, 32767)
                self.buffer = total.astype(np.int16)
            else:
                self.buffer = self.buffer + rows[:, frame]
            out[:, frame] = self.buffer[:, :step]
            self.buffer = np.concatenate([self.buffer[:, step:], np.zeros_like(self.buffer[:, :step])], axis=1)
        return [out.reshape(x.shape[:-2] + (rows.shape[1] * step,))]


@dataclass(frozen=True)
class FrameDelay(Op):
    """Delay each row of an int16 stream (the last axis) by ``delay`` samples, zeros first
    (TFLite Micro's SignalDelay)."""

    delay: int
    is_stateless: ClassVar[bool] = False

    def output_facts(self, inputs):
        expect_inputs(inputs, 1, self)
        x = inputs[0]
        expect_dtype(x, (I16,), self, "the samples")
        known_dim(x, -1, self, "the samples")
        if self.delay < 0:
            raise AnalysisError(f"{self.name}: the delay must be >= 0, got {self.delay}")
        return [TypedFact(I16, x.shape)]

    def state(self) -> FrameDelayState:
        return FrameDelayState(self)

    def eval(self, inputs):
        return FrameDelayState(self).eval(inputs)


class FrameDelayState:
    """The last ``delay`` samples of each row."""

    def __init__(self, op: FrameDelay):
        self.op = op
        self.history: np.ndarray | None = None

    def reset(self) -> None:
        if self.history is not None:
            self.history[:] = 0

    def memory_bytes(self) -> int:
        return 0 if self.history is None else self.history.nbytes

    def eval(self, inputs):
        x = inputs[0]
        rows = x.reshape(-1, x.shape[-1])
        if self.history is None or self.history.shape[0] != rows.shape[0]:
            self.history = np.zeros((rows.shape[0], self.op.delay), dtype=np.int16)
        joined = np.concatenate([self.history, rows], axis=1)
        self.history = joined[:, joined.shape[1] - self.op.delay:].copy()
        return [joined[:, :rows.shape[1]].reshape(x.shape)]
