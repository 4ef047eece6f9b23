"""The pulsed model and its streams: push chunks, finish, reset."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import RunError
from ..model import TypedModel
from ..ops.stream import StreamContext, StreamOpState
from ..runtime.state import order_inputs
from .stream import Stream


class PulsedModel:
    """A model that consumes its streamed input ``pulse`` frames at a time.

    ``model`` is an ordinary :class:`~tractile.model.TypedModel` whose stateful ops
    (:class:`~tractile.ops.stream.Delay`...) keep what they need of the past. Each output
    comes ``delay`` frames late: the frames a stream emits, minus its first ``delays[i]``,
    are the batch model's output ``i``. ``start()`` opens a stream; many can run side by side.
    """

    def __init__(self, model: TypedModel, symbol: str, pulse: int, input_streams: list[Stream | None],
                 output_streams: list[Stream]):
        self.model = model
        self.symbol = symbol
        self.pulse = pulse
        self.input_streams = input_streams
        self.output_streams = output_streams

    @property
    def delay(self) -> int:
        """Latency of the first output, in frames of its time axis."""
        return self.output_streams[0].delay

    @property
    def delays(self) -> list[int]:
        return [s.delay for s in self.output_streams]

    @property
    def output_pulses(self) -> list[int]:
        """Frames each output gains per push (the pulse divided by the strides on the way)."""
        return [s.pulse for s in self.output_streams]

    def start(self) -> StreamState:
        """A new stream (its own buffers, all zero)."""
        return StreamState(self)

    def compile(self, name: str = "model", opt: str = "speed", cache_dir=None, **options):
        """Compile the streaming form to C (ring buffers in the context) and build it for this
        machine: ``run`` consumes one chunk and returns one chunk, ``reset`` starts a new stream.
        The header defines ``NAME_PULSE`` and ``NAME_DELAY``; the compiled model has ``.delay``."""
        from ..compile import compile_model

        macros = {"PULSE": (self.pulse, f"frames of {self.symbol} each invoke consumes"),
                  "DELAY": (self.delay, "frames the outputs lag behind the inputs (drop that many first frames)")}
        compiled = compile_model(self.model, name=name, opt=opt, cache_dir=cache_dir, optimize=False, macros=macros,
                                 **options)
        compiled.pulse, compiled.delay, compiled.delays = self.pulse, self.delay, self.delays
        return compiled

    def into_typed(self) -> TypedModel:
        """The stateful typed model that runs one chunk per call."""
        return self.model

    def __repr__(self) -> str:
        outputs = ", ".join(f"{name}: axis {s.axis}, pulse {s.pulse}, delay {s.delay}"
                            for name, s in zip(self.model.output_names(), self.output_streams))
        return f"PulsedModel({self.symbol} by {self.pulse} frames; {len(self.model.nodes)} nodes; {outputs})"


class StreamState:
    """One stream through a :class:`PulsedModel`.

    ``push(inputs)`` takes one chunk per input (``pulse`` frames along the streamed axis;
    non-streamed inputs are given whole every time) and returns the outputs' new frames.
    ``finish(last)`` ends the stream (with an optional shorter last chunk) and returns the
    frames still owed, so that all frames emitted minus the first ``delay`` are exactly the
    batch output. ``reset()`` starts over.
    """

    def __init__(self, pulsed: PulsedModel):
        self.pulsed = pulsed
        self.context = StreamContext(pulsed.symbol)
        self._state = pulsed.model.plan().state()
        self._op_states = [s for s in self._state.op_states.values() if isinstance(s, StreamOpState)]
        for op_state in self._op_states:
            op_state.context = self.context
        self._names = pulsed.model.input_names()
        self._output_names = pulsed.model.output_names()
        self.frames_pushed = 0
        self.frames_emitted = [0] * len(pulsed.output_streams)
        self.finished = False
        self._last_inputs: list[np.ndarray] | None = None
        self._last_outputs: list[tuple] | None = None

    # inputs ------------------------------------------------------------------------------------
    def _ordered(self, inputs) -> tuple[list[Any], bool]:
        return order_inputs(self._names, inputs, "the stream")

    def _checked(self, values: list[Any], frames: int | None = None) -> list[np.ndarray]:
        """Arrays whose streamed axis has ``frames`` frames (the pulse by default)."""
        frames = self.pulsed.pulse if frames is None else frames
        checked = []
        for name, stream, value in zip(self._names, self.pulsed.input_streams, values):
            value = np.asarray(value)
            if stream is not None:
                if value.ndim <= stream.axis or value.shape[stream.axis] != frames:
                    raise RunError(f'input "{name}": a chunk must have {frames} frame(s) along axis {stream.axis} '
                                   f"(the stream's pulse is {self.pulsed.pulse}), got shape {value.shape}")
            checked.append(value)
        return checked

    def _run(self, values: list[np.ndarray]) -> list[np.ndarray]:
        outputs = self._state.run(values)
        self._last_inputs = values
        self._last_outputs = [(o.shape, o.dtype) for o in outputs]
        self.frames_pushed += self.pulsed.pulse
        for index, stream in enumerate(self.pulsed.output_streams):
            self.frames_emitted[index] += stream.pulse
        return outputs

    # streaming ------------------------------------------------------------------------------
    def push(self, inputs: Sequence[Any] | Mapping[str, Any] | np.ndarray):
        """Feed one chunk per input; returns each output's new frames (a dict for a dict in)."""
        if self.finished:
            raise RunError("this stream has finished: call reset() to start a new one")
        values, as_dict = self._ordered(inputs)
        outputs = self._run(self._checked(values))
        return dict(zip(self._output_names, outputs)) if as_dict else outputs

    def finish(self, inputs: Sequence[Any] | Mapping[str, Any] | np.ndarray | None = None):
        """End the stream, after an optional last chunk of 1 to ``pulse`` frames.

        Feeds padding until every output has given all its frames, and returns those still
        owed (trimmed to the batch output's length). Ops that pad at the end of the stream
        learn its length here, so the tail matches the batch model exactly.
        """
        if self.finished:
            raise RunError("this stream has finished already: call reset() to start a new one")
        pulse = self.pulsed.pulse
        as_dict = isinstance(inputs, Mapping)
        last = None
        extra = 0
        if inputs is not None:
            values, as_dict = self._ordered(inputs)
            stream = next(s for s in self.pulsed.input_streams if s is not None)
            streamed_value = next(np.asarray(v) for v, s in zip(values, self.pulsed.input_streams) if s is not None)
            extra = streamed_value.shape[stream.axis] if streamed_value.ndim > stream.axis else 0
            if not 0 < extra <= pulse:
                raise RunError(f"the last chunk must have 1 to {pulse} frames along axis {stream.axis}, "
                               f"got shape {streamed_value.shape}")
            last = self._padded(self._checked(values, extra), extra)
        self.context.length = self.frames_pushed + extra
        owed = [stream.delay + max(self.context.evaluate(stream.dim), 0) for stream in self.pulsed.output_streams]
        pieces: list[list[np.ndarray]] = [[] for _ in owed]
        before = list(self.frames_emitted)
        while last is not None or any(done < need for done, need in zip(self.frames_emitted, owed)):
            values = last if last is not None else self._padding()
            last = None
            for index, output in enumerate(self._run(values)):
                pieces[index].append(output)
        self.finished = True
        results = []
        for index, (stream, need) in enumerate(zip(self.pulsed.output_streams, owed)):
            take = max(need - before[index], 0)
            if pieces[index]:
                joined = np.concatenate(pieces[index], axis=stream.axis)
            else:
                joined = self._empty_output(index)
            results.append(joined[(slice(None),) * stream.axis + (slice(0, take),)])
        return dict(zip(self._output_names, results)) if as_dict else results

    def _padded(self, values: list[np.ndarray], frames: int) -> list[np.ndarray]:
        padded = []
        for value, stream in zip(values, self.pulsed.input_streams):
            if stream is not None and frames < self.pulsed.pulse:
                widths = [(0, 0)] * value.ndim
                widths[stream.axis] = (0, self.pulsed.pulse - frames)
                value = np.pad(value, widths)
            padded.append(value)
        return padded

    def _padding(self) -> list[np.ndarray]:
        """Zero chunks for the streamed inputs (the last values for the others)."""
        if self._last_inputs is None:
            facts = self.pulsed.model.input_facts
            shapes = [f.concrete_shape() for f in facts]
            if any(s is None for s in shapes):
                raise RunError("finish() before any push needs the last chunk: the inputs have symbolic dims")
            return [np.zeros(s, f.dtype.np) for s, f in zip(shapes, facts)]
        return [np.zeros_like(v) if s is not None else v for v, s in zip(self._last_inputs, self.pulsed.input_streams)]

    def _empty_output(self, index: int) -> np.ndarray:
        """No frames of output ``index``, shaped like the pushes' outputs."""
        if self._last_outputs is not None:
            shape, dtype = self._last_outputs[index]
            shape = list(shape)
        else:
            fact = self.pulsed.model.output_facts[index]
            shape, dtype = [d if isinstance(d, int) else 1 for d in fact.shape], fact.dtype.np
        shape[self.pulsed.output_streams[index].axis] = 0
        return np.zeros(shape, dtype)

    def reset(self) -> None:
        """Forget the past: the next push starts a new stream."""
        self._state.reset()
        self.context.length = None
        self.frames_pushed = 0
        self.frames_emitted = [0] * len(self.frames_emitted)
        self.finished = False
        self._last_inputs = None
        self._last_outputs = None

    def memory_bytes(self) -> int:
        """Bytes held by the stream's buffers and recurrent states (the weights excluded)."""
        return sum(s.memory_bytes() for s in self._state.op_states.values() if hasattr(s, "memory_bytes"))

    def __repr__(self) -> str:
        return (f"StreamState({self.frames_pushed} frames pushed, {self.memory_bytes()} bytes of state"
                f"{', finished' if self.finished else ''})")
