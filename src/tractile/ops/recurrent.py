"""Recurrent ops: RNN, GRU and LSTM with ONNX semantics.

Inputs follow ONNX: ``X, W, R`` then the optional inputs the op lists in
``optional_inputs`` (a subset of ``B, sequence_lens, initial_h[, initial_c, P]``, in
that order). Outputs are ``Y, Y_h`` (and ``Y_c`` for LSTM), always all computed.
The step loops live in :mod:`.recurrent_cells` and the time loop in :mod:`.recurrent_scan`;
this module checks facts, handles layouts, directions and sequence lengths, and caches
the prepared weights.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..errors import AnalysisError, RunError
from ..fact import TypedFact
from .base import Op, expect_inputs
from .recurrent_activations import RnnActivation
from .recurrent_cells import Cell, GruCell, LstmCell, RnnCell
from .recurrent_scan import scan
from .unary import needs_f32

DIRECTIONS = ("forward", "reverse", "bidirectional")


def _known_mismatch(a, b) -> bool:
    return isinstance(a, int) and isinstance(b, int) and a != b


def _check_shape(fact: TypedFact, expected: tuple, what: str) -> None:
    """AnalysisError unless ``fact`` has ``expected``'s rank and dims (None: any)."""
    shown = "[" + ",".join("?" if d is None else str(d) for d in expected) + "]"
    if fact.rank != len(expected):
        raise AnalysisError(f"{what} must have rank {len(expected)} {shown}, got {fact}")
    for axis, (dim, want) in enumerate(zip(fact.shape, expected)):
        if want is not None and _known_mismatch(dim, want):
            raise AnalysisError(f"{what} must have shape {shown}, got {fact} (axis {axis})")


@dataclass(frozen=True)
class Recurrent(Op):
    """Shared part of RNN, GRU and LSTM: attributes, facts, layouts, directions, lengths.

    ``activations`` lists the activation functions of the first direction, then of
    the second when bidirectional (empty: the ONNX defaults). ``hidden_size`` None
    takes it from R. ``clip`` bounds every pre-activation to [-clip, clip].

    Streaming reuses the pieces: :meth:`cells` gives the prepared cells and
    :func:`~.recurrent_scan.scan` runs one over a chunk from the states the previous
    chunk ended with.
    """

    hidden_size: int | None = None
    direction: str = "forward"
    layout: int = 0
    activations: tuple[RnnActivation, ...] = ()
    clip: float | None = None
    optional_inputs: tuple[str, ...] = ()
    _prepared: dict = field(default_factory=dict, compare=False, repr=False)

    gate_count: ClassVar[int] = 1
    default_activations: ClassVar[tuple[str, ...]] = ("Tanh",)
    optional_names: ClassVar[tuple[str, ...]] = ("B", "sequence_lens", "initial_h")
    state_names: ClassVar[tuple[str, ...]] = ("initial_h",)

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise AnalysisError(f"{self.name} direction must be one of {', '.join(DIRECTIONS)}, "
                                f"got {self.direction!r}")
        if self.layout not in (0, 1):
            raise AnalysisError(f"{self.name} layout must be 0 or 1, got {self.layout}")
        per_direction = len(self.default_activations)
        if not self.activations:
            defaults = tuple(RnnActivation.make(n) for n in self.default_activations) * self.num_directions
            object.__setattr__(self, "activations", defaults)
        elif len(self.activations) != per_direction * self.num_directions:
            raise AnalysisError(f"{self.name} {self.direction} needs {per_direction * self.num_directions} "
                                f"activations, got {len(self.activations)}")
        unknown = [n for n in self.optional_inputs if n not in self.optional_names]
        ordered = [n for n in self.optional_names if n in self.optional_inputs]
        if unknown or list(self.optional_inputs) != ordered:
            raise AnalysisError(f"{self.name} optional inputs must be among {', '.join(self.optional_names)} "
                                f"in that order, got {', '.join(self.optional_inputs)}")
        if self.clip is not None and not self.clip > 0:
            raise AnalysisError(f"{self.name} clip must be positive, got {self.clip}")

    @property
    def num_directions(self) -> int:
        return 2 if self.direction == "bidirectional" else 1

    @property
    def nboutputs(self) -> int:
        return len(self.state_names) + 1

    def attributes(self):
        shown = super().attributes()
        defaults = tuple(RnnActivation.make(n) for n in self.default_activations) * self.num_directions
        if self.activations == defaults:
            shown.pop("activations", None)
        else:
            shown["activations"] = [str(a) for a in self.activations]
        return shown

    # facts ----------------------------------------------------------------------------------
    def _optional(self, items: list) -> dict:
        return dict(zip(self.optional_inputs, items[3:]))

    def output_facts(self, inputs):
        expect_inputs(inputs, 3 + len(self.optional_inputs), self)
        x, w, r = inputs[:3]
        if not x.dtype.is_float:
            raise AnalysisError(f"{self.name} needs floating-point inputs, got X {x}")
        for what, fact in (("W", w), ("R", r)):
            if fact.dtype != x.dtype:
                raise AnalysisError(f"{self.name} {what} {fact} has another datum type than X {x}")
        _check_shape(x, (None, None, None), "X")
        steps, batch = (x.shape[1], x.shape[0]) if self.layout else x.shape[:2]
        dirs = self.num_directions
        _check_shape(r, (dirs, None, self.hidden_size), "R")
        hidden = r.shape[2]
        gates = self.gate_count * hidden
        _check_shape(w, (dirs, gates, x.shape[2]), "W")
        _check_shape(r, (dirs, gates, hidden), "R")
        state_shape = (batch, dirs, hidden) if self.layout else (dirs, batch, hidden)
        expected = {"B": (dirs, 2 * gates), "sequence_lens": (batch,), "initial_h": state_shape,
                    "initial_c": state_shape, "P": (dirs, 3 * hidden)}
        for name, fact in self._optional(inputs).items():
            _check_shape(fact, expected[name], name)
            if name == "sequence_lens":
                if not fact.dtype.is_integer:
                    raise AnalysisError(f"{self.name} sequence_lens must be integers, got {fact}")
            elif fact.dtype != x.dtype:
                raise AnalysisError(f"{self.name} {name} {fact} has another datum type than X {x}")
        y_shape = (batch, steps, dirs, hidden) if self.layout else (steps, dirs, batch, hidden)
        return [TypedFact(x.dtype, y_shape)] + [TypedFact(x.dtype, state_shape) for _ in self.state_names]

    def rules(self, s, inputs, outputs):
        x, w, r = inputs[:3]
        s.equals_all(x.datum_type, w.datum_type, r.datum_type, *(o.datum_type for o in outputs))
        s.equals_all(x.rank, w.rank, r.rank, 3)
        s.equals(outputs[0].rank, 4)
        time_axis, batch_axis = (1, 0) if self.layout else (0, 1)
        y, y_dir, y_batch = outputs[0], (2 if self.layout else 1), (0 if self.layout else 2)
        s.equals(y.shape[time_axis], x.shape[time_axis])
        s.equals(y.shape[y_batch], x.shape[batch_axis])
        dirs, gates = self.num_directions, self.gate_count
        for what, fact in (("W", w), ("R", r)):
            s.equals(fact.shape[0], dirs, why=f"{what} has {{}} directions where direction={self.direction} needs {{}}")
        s.equals(y.shape[y_dir], dirs)
        s.equals(y.shape[3], r.shape[2])
        if self.hidden_size is not None:
            s.equals(r.shape[2], self.hidden_size, why="R has hidden size {}, the hidden_size attribute says {}")
        s.equals(w.shape[1], gates * r.shape[2], why=f"W has {{}} gate rows where {gates} gates of R's hidden "
                                                     "size make {}")
        s.equals(r.shape[1], gates * r.shape[2], why=f"R has {{}} gate rows where {gates} gates of its hidden "
                                                     "size make {}")
        s.equals(w.shape[2], x.shape[2], why="W takes {} input features, X has {}")
        state_dir, state_batch = (1, 0) if self.layout else (0, 1)
        for out in outputs[1:]:
            s.equals(out.rank, 3)
            s.equals(out.shape[state_dir], self.num_directions)
            s.equals(out.shape[state_batch], x.shape[batch_axis])
            s.equals(out.shape[2], r.shape[2])

    def cost(self, inputs):
        x, w, r = inputs[:3]
        steps_batch = x.shape[0] * x.shape[1]
        return {"flops": 2 * self.num_directions * steps_batch * w.shape[1] * (x.shape[2] + r.shape[2])}

    # run ------------------------------------------------------------------------------------
    def make_cell(self, w, r, bias, peepholes, activations, dtype) -> Cell:
        """The cell of the directions whose weights (directions, ...) are given (subclasses say which)."""
        raise NotImplementedError

    def cells(self, w: np.ndarray, r: np.ndarray, bias, peepholes, dtype) -> list[tuple[tuple[int, ...], Cell]]:
        """Prepared cells with the directions each runs: both in one cell when they share their
        activations. Cached while the weights are the same read-only arrays."""
        weights = [a for a in (w, r, bias, peepholes) if a is not None]
        cached = self._prepared.get("cells")
        if cached is not None and len(cached[0]) == len(weights) and cached[2] == dtype \
                and all(a is b for a, b in zip(cached[0], weights)):
            return cached[1]
        count = len(self.default_activations)
        shared = self.activations[:count] == self.activations[count:]
        groups = [(0, 1)] if self.num_directions == 2 and shared else [(d,) for d in range(self.num_directions)]
        cells = []
        for group in groups:
            pick = list(group)
            cells.append((group, self.make_cell(w[pick], r[pick], None if bias is None else bias[pick],
                                                None if peepholes is None else peepholes[pick],
                                                self.activations[group[0] * count:(group[0] + 1) * count], dtype)))
        if all(not a.flags.writeable for a in weights):
            self._prepared["cells"] = (weights, cells, dtype)
        return cells

    def eval(self, inputs):
        x, w, r = (np.asarray(v) for v in inputs[:3])
        optional = self._optional(inputs)
        dtype = np.dtype(np.float32) if needs_f32(x.dtype) else x.dtype
        if self.layout:
            x = x.transpose(1, 0, 2)
        steps, batch = x.shape[:2]
        lengths = self._lengths(optional.get("sequence_lens"), steps, batch)
        initial = [self._state(optional.get(name), name, batch, r.shape[2]) for name in self.state_names]
        outputs: list = [None] * self.num_directions
        finals: list = [[None] * self.num_directions for _ in self.state_names]
        for group, cell in self.cells(w, r, optional.get("B"), optional.get("P"), dtype):
            reversed_ = [d == 1 or self.direction == "reverse" for d in group]
            sequences = [reverse_time(x, lengths) if rev else x for rev in reversed_]
            xs = sequences[0][None] if len(sequences) == 1 else np.stack(sequences)
            y, states = scan(cell, xs, [None if s is None else s[list(group)] for s in initial], lengths)
            for j, (d, rev) in enumerate(zip(group, reversed_)):
                outputs[d] = reverse_time(y[:, j], lengths) if rev else y[:, j]
                for k, state in enumerate(states):
                    finals[k][d] = state[j]
                    if lengths is not None:  # empty sequences end in zero states, as onnxruntime has them
                        finals[k][d][lengths == 0] = 0
        y = outputs[0][:, None] if len(outputs) == 1 else np.stack(outputs, axis=1)
        states = [np.stack(f) for f in finals]
        if self.layout:
            y = y.transpose(2, 0, 1, 3)
            states = [s.transpose(1, 0, 2) for s in states]
        return [np.ascontiguousarray(v, dtype=inputs[0].dtype) for v in (y, *states)]

    def _lengths(self, lengths, steps: int, batch: int) -> np.ndarray | None:
        if lengths is None:
            return None
        lengths = np.asarray(lengths).astype(np.int64).reshape(-1)
        if lengths.shape != (batch,):
            raise RunError(f"{self.name} sequence_lens has {lengths.size} entries for a batch of {batch}")
        if lengths.size and (lengths.min() < 0 or lengths.max() > steps):
            raise RunError(f"{self.name} sequence_lens {lengths.tolist()} must be within [0, {steps}]")
        return lengths

    def _state(self, value, name: str, batch: int, hidden: int) -> np.ndarray | None:
        if value is None:
            return None
        value = np.asarray(value)
        if self.layout:
            value = value.transpose(1, 0, 2)
        if value.shape != (self.num_directions, batch, hidden):
            raise RunError(f"{self.name} {name} has shape {value.shape} where "
                           f"{(self.num_directions, batch, hidden)} (directions, batch, hidden) is expected")
        return value


def reverse_time(a: np.ndarray, lengths: np.ndarray | None) -> np.ndarray:
    """``a`` (time, batch, ...) with each row's first ``lengths`` steps in reverse order."""
    steps, batch = a.shape[:2]
    if lengths is None or bool(np.all(lengths >= steps)):
        return a[::-1]
    t = np.arange(steps)[:, None]
    index = np.where(t < lengths[None, :], lengths[None, :] - 1 - t, t)
    return a[index, np.arange(batch)[None, :]]


@dataclass(frozen=True)
class RNN(Recurrent):
    """ONNX RNN: ``H = f(X W^T + H R^T + Wb + Rb)`` (default f: Tanh)."""

    def make_cell(self, w, r, bias, peepholes, activations, dtype):
        return RnnCell(w, r, bias, activations, self.clip, dtype)


@dataclass(frozen=True)
class GRU(Recurrent):
    """ONNX GRU (default activations Sigmoid, Tanh); ``linear_before_reset`` as in ONNX."""

    linear_before_reset: bool = False

    gate_count = 3
    default_activations = ("Sigmoid", "Tanh")

    def make_cell(self, w, r, bias, peepholes, activations, dtype):
        return GruCell(w, r, bias, activations, self.clip, dtype, self.linear_before_reset)


@dataclass(frozen=True)
class LSTM(Recurrent):
    """ONNX LSTM (default activations Sigmoid, Tanh, Tanh) with optional peepholes ``P``
    and ``input_forget`` (forget gate = 1 - input gate)."""

    input_forget: bool = False

    gate_count = 4
    default_activations = ("Sigmoid", "Tanh", "Tanh")
    optional_names = ("B", "sequence_lens", "initial_h", "initial_c", "P")
    state_names = ("initial_h", "initial_c")

    def make_cell(self, w, r, bias, peepholes, activations, dtype):
        return LstmCell(w, r, bias, activations, self.clip, dtype, peepholes, self.input_forget)

