"""Recurrent cell kernels: the LSTM, GRU and simple RNN time loops.

A cell holds one direction's weights, prepared once (transposed, gates reordered,
biases folded into the input projection) with its activations. :func:`scan` runs a
cell over a sequence from a given state and returns the outputs together with the
final state, so that a caller can carry on from there with the next chunk of time
(streaming runs the same cell chunk after chunk).

Each call projects the inputs of all time steps with one matrix product; each step
then does one matrix product by the recurrent weights and a few in-place ufuncs on
preallocated buffers. Sigmoids run as ``0.5 * tanh(x / 2) + 0.5`` with the halving
folded into the weights, which lets an LSTM take the tanh of all its gates at once.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from ..errors import AnalysisError
from .recurrent_activations import RnnActivation

Kernel = Callable[[np.ndarray, np.ndarray], object]

#: per-step products at least this large (batch x hidden x gates x hidden) may use threaded BLAS
THREADED_STEP_SIZE = 1 << 20


class Cell:
    """One direction of a recurrent op, ready for :func:`scan`.

    ``w_t`` (input, gates x hidden) and ``r_t`` (hidden, gates x hidden) hold the
    transposed weights with the gates in the kernel's order; ``bias`` what can be
    added to the input projection.
    """

    gate_count: ClassVar[int] = 1
    #: ONNX gate blocks in the order the kernel keeps them
    gate_order: ClassVar[tuple[int, ...]] = (0,)
    state_names: ClassVar[tuple[str, ...]] = ("h",)

    def __init__(self, w: np.ndarray, r: np.ndarray, bias: np.ndarray | None,
                 activations: tuple[RnnActivation, ...], clip: float | None, dtype):
        self.dtype = np.dtype(dtype)
        self.hidden_size = r.shape[-1]
        self.input_size = w.shape[-1]
        self.activations = activations
        self.clip = clip
        self.gate_scales = self.scales()
        self.w_t = self.reorder(w).T.copy()
        self.r_t = self.reorder(r).T.copy()
        gates = self.gate_count * self.hidden_size
        if bias is None:
            bias = np.zeros(2 * gates, self.dtype)
        self.w_bias = self.reorder(bias[:gates])
        self.r_bias = self.reorder(bias[gates:])
        self.bias = self.w_bias + self.r_bias
        self._w_and_bias: np.ndarray | None = None

    def scales(self) -> np.ndarray:
        """Factor folded into each (kernel-ordered) gate's pre-activation."""
        return np.ones(self.gate_count, self.dtype)

    def reorder(self, array: np.ndarray) -> np.ndarray:
        """Gate blocks of ``array`` (gates x hidden, ...) in kernel order, each times its scale."""
        blocks = array.reshape(self.gate_count, self.hidden_size, -1).astype(self.dtype)
        scaled = blocks[list(self.gate_order)] * self.gate_scales[:, None, None]
        return scaled.reshape(array.shape)

    def kernel(self, activation: RnnActivation, gate: int) -> Kernel:
        """The in-place kernel of ``activation`` for a gate whose inputs carry ``gate_scales[gate]``."""
        return activation.kernel(self.dtype, prescaled=self.gate_scales[gate] != 1)

    def project(self, x: np.ndarray) -> np.ndarray:
        """Input projections of every step: ``x @ W^T + biases`` as (time, batch, gates x hidden)."""
        steps, batch = x.shape[:2]
        if self._w_and_bias is None:
            self._w_and_bias = np.concatenate([self.w_t, self.bias[None, :]])
        # a column of ones brings the biases into the product, saving a pass over its result
        flat = np.empty((steps * batch, self.input_size + 1), self.dtype)
        flat[:, :-1] = x.reshape(steps * batch, self.input_size)
        flat[:, -1] = 1
        return (flat @ self._w_and_bias).reshape(steps, batch, self.w_t.shape[1])

    def clipper(self) -> Kernel | None:
        if self.clip is None:
            return None
        low, high = np.asarray(-self.clip, self.dtype), np.asarray(self.clip, self.dtype)
        return lambda x, out: np.clip(x, low, high, out)

    # overridden per cell ------------------------------------------------------------------
    def workspace(self, states: list[np.ndarray]) -> dict:
        """Buffers for a run over ``states`` (batch, hidden) each; they hold the extra states."""
        return {}

    def run(self, ws: dict, rows: int, proj: np.ndarray, y: np.ndarray, h: np.ndarray) -> None:
        """Steps over ``proj`` (time, rows, ...), writing ``y`` (time, rows, hidden), from ``h``."""
        raise NotImplementedError

    def extra_states(self, ws: dict) -> list[np.ndarray]:
        """The states besides ``h`` at the end of a run (the LSTM's cell state)."""
        return []


def _product(out: np.ndarray) -> Callable:
    """``np.dot`` when it can write into ``out`` (cheaper), else ``np.matmul``."""
    return np.dot if out.flags.c_contiguous else np.matmul


class RnnCell(Cell):
    """ONNX RNN: ``H = f(X W^T + H R^T + Wb + Rb)``."""

    def run(self, ws, rows, proj, y, h):
        act = self.kernel(self.activations[0], 0)
        clip = self.clipper()
        r_t, add = self.r_t, np.add
        for p, y_t in zip(proj, y):
            np.dot(h, r_t, y_t)
            add(y_t, p, y_t)
            if clip is not None:
                clip(y_t, y_t)
            act(y_t, y_t)
            h = y_t


class GruCell(Cell):
    """ONNX GRU, gates z (update), r (reset), h (hidden), optionally linear before reset."""

    gate_count = 3
    gate_order = (0, 1, 2)

    def __init__(self, w, r, bias, activations, clip, dtype, linear_before_reset: bool = False):
        self.linear_before_reset = linear_before_reset
        super().__init__(w, r, bias, activations, clip, dtype)
        hidden = self.hidden_size
        if linear_before_reset:
            self.bias[2 * hidden:] = self.w_bias[2 * hidden:]
            self.hidden_r_bias = self.r_bias[2 * hidden:].copy()
        self.r_t_zr = self.r_t[:, :2 * hidden].copy()
        self.r_t_h = self.r_t[:, 2 * hidden:].copy()

    def scales(self):
        f, g = (a.input_scale if self.clip is None else 1.0 for a in self.activations[:2])
        return np.array([f, f, g], self.dtype)

    def workspace(self, states):
        batch, hidden = states[0].shape
        return {"gates": np.empty((batch, 3 * hidden), self.dtype), "tmp": np.empty((batch, hidden), self.dtype)}

    def run(self, ws, rows, proj, y, h):
        hidden = self.hidden_size
        f, g = self.kernel(self.activations[0], 0), self.kernel(self.activations[1], 2)
        clip = self.clipper()
        gates, tmp = ws["gates"][:rows], ws["tmp"][:rows]
        zr, z, r, hh = gates[:, :2 * hidden], gates[:, :hidden], gates[:, hidden:2 * hidden], gates[:, 2 * hidden:]
        add, mul, sub = np.add, np.multiply, np.subtract
        lbr = self.linear_before_reset
        r_t, first_out = (self.r_t, gates) if lbr else (self.r_t_zr, zr)
        first_product, hidden_product = _product(first_out), _product(hh)
        for p_zr, p_h, y_t in zip(proj[..., :2 * hidden], proj[..., 2 * hidden:], y):
            first_product(h, r_t, first_out)
            add(zr, p_zr, zr)
            if clip is not None:
                clip(zr, zr)
            f(zr, zr)
            if lbr:
                add(hh, self.hidden_r_bias, hh)
                mul(hh, r, hh)
            else:
                mul(r, h, tmp)
                hidden_product(tmp, self.r_t_h, hh)
            add(hh, p_h, hh)
            if clip is not None:
                clip(hh, hh)
            g(hh, hh)
            sub(h, hh, tmp)
            mul(tmp, z, tmp)
            add(hh, tmp, y_t)
            h = y_t


class LstmCell(Cell):
    """ONNX LSTM with optional peepholes, coupled input-forget gate and clip.

    Buffers per batch row: ``[C | c~ | f | i | o]``: the cell state first, then the
    gates, so that ``[f, i] * [C, c~]`` is one multiplication.
    """

    gate_count = 4
    gate_order = (3, 2, 0, 1)  # ONNX order is i, o, f, c
    state_names = ("h", "c")

    def __init__(self, w, r, bias, activations, clip, dtype, peepholes: np.ndarray | None = None,
                 input_forget: bool = False):
        super().__init__(w, r, bias, activations, clip, dtype)
        self.input_forget = input_forget
        self.peepholes = None
        if peepholes is not None:
            p_i, p_o, p_f = peepholes.astype(self.dtype).reshape(3, self.hidden_size) * self.gate_scales[1]
            self.peepholes = (np.stack([p_f, p_i]), p_o)
        f, g, h = (a.kind for a in activations)
        self.fast = (f, g, h) == ("sigmoid", "tanh", "tanh") and clip is None and self.peepholes is None \
            and not input_forget

    def scales(self):
        f, g = (a.input_scale if self.clip is None else 1.0 for a in self.activations[:2])
        return np.array([g, f, f, f], self.dtype)

    def workspace(self, states):
        batch, hidden = states[0].shape
        big = np.empty((batch, 5 * hidden), self.dtype)
        big[:, :hidden] = states[1]
        return {"big": big, "pair": np.empty((batch, 2 * hidden), self.dtype),
                "tmp": np.empty((batch, 2, hidden), self.dtype)}

    def extra_states(self, ws):
        return [ws["big"][:, :self.hidden_size].copy()]

    def run(self, ws, rows, proj, y, h):
        hidden = self.hidden_size
        big, pair = ws["big"][:rows], ws["pair"][:rows]
        gates, cell = big[:, hidden:], big[:, :hidden]
        product = _product(gates)
        fi, cc, o = big[:, 2 * hidden:4 * hidden], big[:, :2 * hidden], big[:, 4 * hidden:]
        pair_a, pair_b = pair[:, :hidden], pair[:, hidden:]
        add, mul, tanh, r_t = np.add, np.multiply, np.tanh, self.r_t
        if self.fast:
            sig, half = big[:, 2 * hidden:], np.asarray(0.5, self.dtype)
            for p, y_t in zip(proj, y):
                product(h, r_t, gates)
                add(gates, p, gates)
                tanh(gates, gates)
                mul(sig, half, sig)
                add(sig, half, sig)
                mul(fi, cc, pair)
                add(pair_a, pair_b, cell)
                tanh(cell, y_t)
                mul(y_t, o, y_t)
                h = y_t
            return
        self._run_general(ws, rows, proj, y, h, product)

    def _run_general(self, ws, rows, proj, y, h, product):
        hidden = self.hidden_size
        big, pair, tmp = ws["big"][:rows], ws["pair"][:rows], ws["tmp"][:rows]
        gates, cell, ct = big[:, hidden:], big[:, :hidden], big[:, hidden:2 * hidden]
        fi, cc, o, fio = big[:, 2 * hidden:4 * hidden], big[:, :2 * hidden], big[:, 4 * hidden:], big[:, 2 * hidden:]
        f_gate, i_gate = big[:, 2 * hidden:3 * hidden], big[:, 3 * hidden:4 * hidden]
        fi_pairs, cell_pairs = fi.reshape(rows, 2, hidden), cell.reshape(rows, 1, hidden)
        pair_a, pair_b = pair[:, :hidden], pair[:, hidden:]
        f, g = self.kernel(self.activations[0], 1), self.kernel(self.activations[1], 0)
        h_act = self.activations[2].kernel(self.dtype)
        clip = self.clipper()
        one = np.asarray(1, self.dtype)
        add, mul = np.add, np.multiply
        peepholes = self.peepholes
        before_o = big[:, hidden:4 * hidden] if peepholes is not None else gates
        for p, y_t in zip(proj, y):
            product(h, self.r_t, gates)
            add(gates, p, gates)
            if peepholes is not None:
                mul(cell_pairs, peepholes[0], tmp)
                add(fi_pairs, tmp, fi_pairs)
            if clip is not None:
                clip(before_o, before_o)
            g(ct, ct)
            f(fi if peepholes is not None else fio, fi if peepholes is not None else fio)
            if self.input_forget:
                np.subtract(one, i_gate, f_gate)
            mul(fi, cc, pair)
            add(pair_a, pair_b, cell)
            if peepholes is not None:
                mul(cell, peepholes[1], pair_a)
                add(o, pair_a, o)
                if clip is not None:
                    clip(o, o)
                f(o, o)
            h_act(cell, y_t)
            mul(y_t, o, y_t)
            h = y_t


@contextlib.contextmanager
def _blas_threads_for(step_size: int):
    """One BLAS thread while a small recurrence runs: waking threads for each small product
    costs more than it saves, and much more on a busy machine. Needs ``threadpoolctl`` (the
    ``fast`` extra), else does nothing. Nested and concurrent runs share one limit."""
    controller = _blas_controller() if step_size < THREADED_STEP_SIZE else None
    if controller is None:
        yield
        return
    with _LIMIT_LOCK:
        if _LIMIT["depth"] == 0:
            _LIMIT["limiter"] = controller.limit(limits=1, user_api="blas")
        _LIMIT["depth"] += 1
    try:
        yield
    finally:
        with _LIMIT_LOCK:
            _LIMIT["depth"] -= 1
            if _LIMIT["depth"] == 0:
                _LIMIT.pop("limiter").restore_original_limits()


_LIMIT_LOCK = threading.Lock()
_LIMIT: dict = {"depth": 0}
_CONTROLLER: list = []


def _blas_controller():
    if not _CONTROLLER:
        try:
            from threadpoolctl import ThreadpoolController

            _CONTROLLER.append(ThreadpoolController())
        except Exception:  # noqa: BLE001 - missing or broken threadpoolctl: run as is
            _CONTROLLER.append(None)
    return _CONTROLLER[0]


def segments(lengths: np.ndarray, steps: int) -> list[tuple[int, int, int]]:
    """``(start, stop, rows)`` spans of time over which the first ``rows`` rows are active,
    for lengths sorted in decreasing order."""
    spans, start = [], 0
    for stop in sorted(set(int(v) for v in lengths)):
        stop = min(stop, steps)
        if stop > start:
            spans.append((start, stop, int(np.count_nonzero(lengths >= stop))))
            start = stop
    return spans


def scan(cell: Cell, x: np.ndarray, state: list[np.ndarray | None],
         lengths: np.ndarray | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """Run ``cell`` forward over ``x`` (time, batch, input) from ``state``.

    ``state`` lists the initial states in ``cell.state_names`` order, each (batch,
    hidden) or None for zeros. ``lengths`` (batch,), each in [0, time], gives how
    many leading steps of each row are valid (None: all). Returns ``y`` (time,
    batch, hidden), zero past each row's length, and the states after each row's
    last valid step, in the cell's compute dtype.
    """
    steps, batch = x.shape[:2]
    hidden = cell.hidden_size
    if x.shape[2] != cell.input_size:
        raise AnalysisError(f"recurrent input has {x.shape[2]} features, the weights expect {cell.input_size}")
    states = [np.zeros((batch, hidden), cell.dtype) if s is None else np.array(s, cell.dtype) for s in state]
    order = None
    if lengths is None or bool(np.all(lengths >= steps)):
        spans = [(0, steps, batch)] if steps and batch else []
    else:
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
        spans = segments(lengths, steps)
        x = x[:, order]
        states = [s[order] for s in states]
    y = (np.empty if order is None else np.zeros)((steps, batch, hidden), cell.dtype)
    ws = cell.workspace(states)
    with _blas_threads_for(batch * hidden * cell.gate_count * hidden):
        proj = cell.project(x)
        for start, stop, rows in spans:
            h = y[start - 1, :rows] if start else states[0][:rows]
            cell.run(ws, rows, proj[start:stop, :rows], y[start:stop, :rows], h)
    if order is None:
        final_h = y[steps - 1].copy() if steps else states[0]
    else:
        last = np.clip(lengths - 1, 0, None)
        final_h = np.where((lengths > 0)[:, None], y[last, np.arange(batch)], states[0])
    finals = [final_h, *cell.extra_states(ws)]
    if order is not None:
        inverse = np.argsort(order)
        y = y[:, inverse]
        finals = [s[inverse] for s in finals]
    return y, finals
