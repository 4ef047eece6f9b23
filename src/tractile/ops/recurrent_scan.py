"""The time loop of recurrent cells: :func:`scan` runs a cell over sequences from a state.

It projects the inputs of every step at once, orders the batch by decreasing
sequence length so that the rows still running are always the first ones, and runs
the cell's steps span by span. It returns the outputs and the final state, so a
caller can go on with the next chunk of time (streaming).
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

from ..errors import AnalysisError
from .recurrent_cells import Cell

#: per-step products at least this large (rows x hidden x gates x hidden) may use threaded BLAS
THREADED_STEP_SIZE = 1 << 20


def scan(cell: Cell, x: np.ndarray, state: list[np.ndarray | None],
         lengths: np.ndarray | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """Run ``cell`` forward over ``x`` (directions, time, batch, input) from ``state``.

    ``state`` lists the initial states in ``cell.state_names`` order, each (directions,
    batch, hidden) or None for zeros. ``lengths`` (batch,), each in [0, time], gives how
    many leading steps of each row are valid (None: all). Returns ``y`` (time,
    directions, batch, hidden), zero past each row's length, and the states after each
    row's last valid step, in the cell's compute dtype.
    """
    dirs, steps, batch = x.shape[:3]
    hidden = cell.hidden_size
    if x.shape[3] != cell.input_size or dirs != cell.directions:
        raise AnalysisError(f"recurrent input of shape {x.shape} for a cell of {cell.directions} direction(s) "
                            f"and {cell.input_size} input features")
    states = [np.zeros((dirs, batch, hidden), cell.dtype) if s is None else np.array(s, cell.dtype) for s in state]
    order = None
    if lengths is None or bool(np.all(lengths >= steps)):
        spans = [(0, steps, batch)] if steps and batch else []
    else:
        order = np.argsort(-lengths, kind="stable")
        lengths = lengths[order]
        spans = segments(lengths, steps)
        x = x[:, :, order]
        states = [s[:, order] for s in states]
    ws = cell.workspace(states)
    y = (np.empty if order is None else np.zeros)((steps, dirs, batch, hidden), cell.dtype)
    y_product = y[:, 0] if dirs == 1 else y
    with _blas_threads_for(dirs * batch * hidden * cell.gate_count * hidden):
        proj = cell.project(x)
        for start, stop, rows in spans:
            h = y[start - 1, :, :rows] if start else states[0][:, :rows]
            if ws["single"]:  # one direction, one row: 1-d views
                y_part = y[start:stop, 0, 0]
                cell.run(ws, rows, proj[start:stop, :, 0, 0], y_part, y_part, h[0, 0], h[0, 0])
                continue
            y_part, y_product_part = y[start:stop, :, :rows], y_product[start:stop, ..., :rows, :]
            cell.run(ws, rows, proj[start:stop, :, :, :rows], y_part, y_product_part, h, cell.for_product(h))
    if order is None:
        final_h = y[steps - 1].copy() if steps else states[0]
    else:
        last = y[np.clip(lengths - 1, 0, None), :, np.arange(batch)].transpose(1, 0, 2)
        final_h = np.where((lengths > 0)[None, :, None], last, states[0])
    finals = [final_h, *cell.extra_states(ws)]
    if order is not None:
        inverse = np.argsort(order)
        y = y[:, :, inverse]
        finals = [s[:, inverse] for s in finals]
    return y, finals


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
        except Exception:
            _CONTROLLER.append(None)
    return _CONTROLLER[0]
