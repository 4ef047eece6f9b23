"""A state-carrying op (ONNX RNN/GRU/LSTM, Scan, CausalConvWithState) run one chunk of a stream
at a time, its state carried from push to push: what ``pulse/`` makes of a recurrent op."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from ..fact import TypedFact
from .base import Op
from .causal_conv import CausalConvWithState
from .control_scan import Scan
from .recurrent import Recurrent
from .stream import StreamOpState, along


@dataclass(frozen=True, eq=False)
class CarriedStateOp(Op):
    """Runs a state-carrying op (``inner``) one chunk at a time.

    Input ``source`` is the stream, along ``axis``; ``delay`` frames of it come before the
    stream start and are skipped. ``outputs`` lists the inner op's outputs that stream
    (with their time axes in ``output_axes``); the others are final states, kept inside.
    """

    inner: Any
    source: int
    axis: int
    delay: int
    outputs: tuple[int, ...]
    output_axes: tuple[int, ...]
    state_bytes: int = 0
    is_stateless: ClassVar[bool] = False

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"Streaming{self.inner.name}"

    @property
    def nboutputs(self) -> int:
        return len(self.outputs)

    def output_facts(self, inputs: list[TypedFact]) -> list[TypedFact]:
        facts = self.inner.output_facts(inputs)
        return [facts[i] for i in self.outputs]

    def eval(self, inputs):
        return self.state().eval(inputs)

    def state(self) -> CarriedState:
        kernel = next(k for cls, k in _KERNELS.items() if isinstance(self.inner, cls))
        return CarriedState(self, kernel(self.inner))

    def attributes(self):
        return {"inner": str(self.inner), "delay": self.delay}


class CarriedState(StreamOpState):
    """The carried state of one stream, created at its first real frame."""

    def __init__(self, op: CarriedStateOp, kernel):
        self.op = op
        self.kernel = kernel
        self.position = 0
        self.carried: list[np.ndarray] | None = None

    def reset(self) -> None:
        self.position = 0
        self.carried = None

    def memory_bytes(self) -> int:
        """The carried state's bytes; before the first frame, the size it will have."""
        if self.carried is None:
            return self.op.state_bytes
        return sum(np.asarray(a).nbytes for a in self.carried)

    def eval(self, inputs):
        op = self.op
        frames = inputs[op.source].shape[op.axis]
        skip = min(max(op.delay - self.position, 0), frames)
        self.position += frames
        if skip == frames:
            # nothing real yet: run from a throwaway state only to learn the outputs' shapes
            results, _ = self.kernel.step(inputs, self.kernel.initial(inputs))
            return [np.zeros_like(results[i]) for i in op.outputs]
        if skip:
            inputs = list(inputs)
            inputs[op.source] = inputs[op.source][along(op.axis, skip, None)]
        if self.carried is None:
            self.carried = self.kernel.initial(inputs)
        results, self.carried = self.kernel.step(inputs, self.carried)
        streamed = [results[i] for i in op.outputs]
        if skip:
            streamed = [_zeros_before(y, axis, skip) for y, axis in zip(streamed, op.output_axes)]
        return streamed


def _zeros_before(y: np.ndarray, axis: int, frames: int) -> np.ndarray:
    shape = list(y.shape)
    shape[axis] = frames
    return np.concatenate([np.zeros(shape, y.dtype), y], axis=axis)


class RecurrentKernel:
    """LSTM/GRU/RNN, forward: each chunk runs the op itself with the carried h (and c) as its
    initial states, and its final states are carried to the next chunk."""

    def __init__(self, op):
        self.op = op
        wanted = set(op.optional_inputs) | set(op.state_names)
        self.stepping = replace(op, optional_inputs=tuple(n for n in op.optional_names if n in wanted))

    def _given(self, inputs) -> dict:
        return dict(zip(self.op.optional_inputs, inputs[3:]))

    def initial(self, inputs) -> list[np.ndarray]:
        x, r = inputs[0], inputs[2]
        batch, hidden = x.shape[0 if self.op.layout else 1], r.shape[2]
        shape = (batch, 1, hidden) if self.op.layout else (1, batch, hidden)
        given = self._given(inputs)
        return [np.array(given[n]) if n in given else np.zeros(shape, x.dtype) for n in self.op.state_names]

    def step(self, inputs, carried):
        given = self._given(inputs)
        given.update(zip(self.op.state_names, carried))
        results = self.stepping.eval([*inputs[:3], *(given[n] for n in self.stepping.optional_inputs)])
        return results, list(results[1:])


class ScanKernel:
    """ONNX Scan, forward: the carried states are the loop's state values."""

    def __init__(self, op):
        self.op = op

    def initial(self, inputs):
        return [np.asarray(s) for s in inputs[:self.op.states]]

    def step(self, inputs, carried):
        results = self.op.eval([*carried, *inputs[self.op.states:]])
        return results, [np.asarray(r) for r in results[:self.op.states]]


class CausalConvKernel:
    """CausalConvWithState: the carried state is the last ``k - 1`` input frames."""

    def __init__(self, op):
        self.op = op
        self.stepping = replace(op, has_past=True)

    def initial(self, inputs):
        x, w = inputs[0], inputs[1]
        if self.op.has_past:
            return [np.array(inputs[2 + self.op.has_bias])]
        return [np.zeros((x.shape[0], x.shape[1], w.shape[2] - 1), x.dtype)]

    def step(self, inputs, carried):
        results = self.stepping.eval([*inputs[:2 + self.op.has_bias], carried[0]])
        return results, [results[1]]


_KERNELS: dict[type, Any] = {Recurrent: RecurrentKernel, CausalConvWithState: CausalConvKernel, Scan: ScanKernel}
