"""Recurrent cells: the step loops of RNN, GRU and LSTM.

A cell holds the weights of one or two directions that share their activations,
prepared once (gates reordered, biases folded into the input projection); the time
loop that drives it is :func:`.recurrent_scan.scan`. Each step does one matrix
product by the recurrent weights and a few in-place ufuncs on preallocated buffers.
Sigmoids run as ``0.5 * tanh(x / 2) + 0.5`` with the halving folded into the weights
(the default LSTM, ``1 / (1 + exp(-x))`` with the sign folded in: see :class:`LstmCell`).

Step buffers are gate-major, ``(gates, directions, rows, hidden)``, so that every gate
block (and every run of adjacent gates) is contiguous whatever the batch: ufuncs on
strided views cost several times more. The product ``h @ R^T`` lands in a row-major
scratch buffer and the addition of the input projection moves it into the gate-major
one. With one direction and one row, both are the same memory and the loops work on
1-d views, the cheapest for ufuncs.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from .recurrent_activations import RnnActivation

Kernel = Callable[[np.ndarray, np.ndarray], object]

#: ``np.dot`` without its ``__array_function__`` dispatch, which costs a tenth of a small step
_dot = getattr(np.dot, "_implementation", np.dot)


class Cell:
    """The weights of ``directions`` directions of a recurrent op.

    ``w_t`` (directions, input, gates x hidden) and ``r_t`` (directions, hidden, gates x
    hidden) hold the transposed weights with the gates in the kernel's order; ``bias``
    (directions, gates x hidden) what the input projection adds.
    """

    gate_count: ClassVar[int] = 1
    #: ONNX gate blocks in the order the kernel keeps them
    gate_order: ClassVar[tuple[int, ...]] = (0,)
    state_names: ClassVar[tuple[str, ...]] = ("h",)

    def __init__(self, w: np.ndarray, r: np.ndarray, bias: np.ndarray | None,
                 activations: tuple[RnnActivation, ...], clip: float | None, dtype):
        self.dtype = np.dtype(dtype)
        self.directions, _, self.hidden_size = r.shape
        self.input_size = w.shape[-1]
        self.activations = activations
        self.clip = clip
        self.gate_scales = self.scales()
        self.w_t = self.reorder(w).transpose(0, 2, 1).copy()
        self.r_t = self.reorder(r).transpose(0, 2, 1).copy()
        gates = self.gate_count * self.hidden_size
        if bias is None:
            bias = np.zeros((self.directions, 2 * gates), self.dtype)
        self.w_bias = self.reorder(bias[:, :gates])
        self.r_bias = self.reorder(bias[:, gates:])
        self.bias = self.w_bias + self.r_bias
        self._w_and_bias: np.ndarray | None = None

    def scales(self) -> np.ndarray:
        """Factor folded into each (kernel-ordered) gate's pre-activation."""
        return np.ones(self.gate_count, self.dtype)

    def reorder(self, array: np.ndarray) -> np.ndarray:
        """Gate blocks of ``array`` (directions, gates x hidden, ...) in kernel order, each times its scale."""
        blocks = array.reshape(self.directions, self.gate_count, self.hidden_size, -1).astype(self.dtype)
        scaled = blocks[:, list(self.gate_order)] * self.gate_scales[:, None, None]
        return scaled.reshape(array.shape)

    def kernel(self, activation: RnnActivation, gate: int) -> Kernel:
        """The in-place kernel of ``activation`` for a gate whose inputs carry ``gate_scales[gate]``."""
        return activation.kernel(self.dtype, prescaled=self.gate_scales[gate] != 1)

    def clipper(self) -> Kernel | None:
        if self.clip is None:
            return None
        low, high = np.asarray(-self.clip, self.dtype), np.asarray(self.clip, self.dtype)
        return lambda x, out: np.clip(x, low, high, out)

    def project(self, x: np.ndarray) -> np.ndarray:
        """Input projections ``x @ W^T + biases`` of (directions, time, batch, input), gate-major:
        (time, gates, directions, batch, hidden)."""
        dirs, steps, batch = x.shape[:3]
        if self._w_and_bias is None:
            self._w_and_bias = np.concatenate([self.w_t, self.bias[:, None, :]], axis=1)
        # a column of ones brings the biases into the product, saving a pass over its result
        flat = np.empty((dirs, steps * batch, self.input_size + 1), self.dtype)
        flat[..., :-1] = x.reshape(dirs, steps * batch, self.input_size)
        flat[..., -1] = 1
        proj = np.matmul(flat, self._w_and_bias).reshape(dirs, steps, batch, self.gate_count, self.hidden_size)
        return np.ascontiguousarray(proj.transpose(1, 3, 0, 2, 4))

    # step helpers ---------------------------------------------------------------------------
    def buffer(self, blocks: int, batch: int) -> np.ndarray:
        """A gate-major step buffer of ``blocks`` hidden-sized blocks."""
        return np.empty((blocks, self.directions, batch, self.hidden_size), self.dtype)

    def for_product(self, array: np.ndarray) -> np.ndarray:
        """(directions, rows, n) as the products take it: 2-d with one direction (``np.dot``)."""
        return array[0] if self.directions == 1 else array

    def product(self, weights_t: np.ndarray) -> tuple[Callable, np.ndarray]:
        """``(fn, w)`` such that ``fn(h, w, out)`` computes ``out = h @ weights_t`` per direction,
        ``h`` and ``out`` as :meth:`for_product` gives them."""
        return (_dot, weights_t[0]) if self.directions == 1 else (np.matmul, weights_t)

    def scratch(self, ws: dict, blocks: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """The row-major product buffer for ``rows`` rows: as the product writes it, and gate-major."""
        dirs, hidden = self.directions, self.hidden_size
        if ws["single"]:
            raw = ws["scratch"][0, 0, :blocks * hidden]
            return raw, raw.reshape(blocks, hidden)
        raw = ws["scratch"][:, :rows, :blocks * hidden]
        return self.for_product(raw), raw.reshape(dirs, rows, blocks, hidden).transpose(2, 0, 1, 3)

    @staticmethod
    def rows_of(ws: dict, name: str, rows: int) -> np.ndarray:
        """A gate-major buffer's first ``rows`` rows; with one direction and one row, without those
        axes (1-d views cost the least per ufunc)."""
        return ws[name][:, 0, 0] if ws["single"] else ws[name][:, :, :rows]

    @staticmethod
    def vector(ws: dict, array: np.ndarray) -> np.ndarray:
        """A per-direction parameter (..., directions, 1, hidden) as :meth:`rows_of` buffers take it."""
        return array.reshape(*array.shape[:-3], array.shape[-1]) if ws["single"] else array

    def workspace(self, states: list[np.ndarray], blocks: int | None = None) -> dict:
        """Buffers for a run from ``states`` (directions, batch, hidden); they hold the extra states.
        The base class gives the product's scratch buffer, ``blocks`` hidden-sized blocks wide."""
        batch = states[0].shape[1]
        width = (blocks or self.gate_count) * self.hidden_size
        return {"scratch": np.empty((self.directions, batch, width), self.dtype),
                "single": self.directions * batch == 1}

    # overridden per cell ------------------------------------------------------------------
    def run(self, ws: dict, rows: int, proj: np.ndarray, y: np.ndarray, y_product: np.ndarray,
            h: np.ndarray, h_product: np.ndarray) -> None:
        """Steps over ``proj`` (time, gates, directions, rows, hidden) writing ``y`` (time,
        directions, rows, hidden) from ``h``; ``*_product`` are the same as :meth:`for_product` gives.
        When ``ws["single"]`` (one direction, one row) all of them come without those two axes."""
        raise NotImplementedError

    def extra_states(self, ws: dict) -> list[np.ndarray]:
        """The states besides ``h`` at the end of a run (the LSTM's cell state)."""
        return []


class RnnCell(Cell):
    """ONNX RNN: ``H = f(X W^T + H R^T + Wb + Rb)``."""

    def workspace(self, states, blocks=None):
        return {"single": self.directions * states[0].shape[1] == 1}

    def run(self, ws, rows, proj, y, y_product, h, h_product):
        act = self.kernel(self.activations[0], 0)
        clip = self.clipper()
        (product, r), add = self.product(self.r_t), np.add
        for p, y_t, y_out in zip(proj, y, y_product):
            product(h_product, r, y_out)
            add(y_t, p[0], y_t)
            if clip is not None:
                clip(y_t, y_t)
            act(y_t, y_t)
            h_product = y_out


class GruCell(Cell):
    """ONNX GRU, gates z (update), r (reset), h (hidden), optionally linear before reset."""

    gate_count = 3
    gate_order = (0, 1, 2)

    def __init__(self, w, r, bias, activations, clip, dtype, linear_before_reset: bool = False):
        self.linear_before_reset = linear_before_reset
        #: default activations, no clip: sigmoids as ``1 / (1 + exp(-x))`` (sign in the weights),
        #: the gates applied by dividing by ``1 + exp(-x)``
        self.fast = tuple(a.kind for a in activations[:2]) == ("sigmoid", "tanh") and clip is None
        super().__init__(w, r, bias, activations, clip, dtype)
        hidden = self.hidden_size
        if linear_before_reset:
            self.bias[:, 2 * hidden:] = self.w_bias[:, 2 * hidden:]
            self.hidden_r_bias = self.r_bias[:, None, 2 * hidden:].copy()
        self.r_t_zr = self.r_t[..., :2 * hidden].copy()
        self.r_t_h = self.r_t[..., 2 * hidden:].copy()

    def scales(self):
        if self.fast:
            return np.array([-1, -1, 1], self.dtype)
        f, g = (a.input_scale if self.clip is None else 1.0 for a in self.activations[:2])
        return np.array([f, f, g], self.dtype)

    def workspace(self, states, blocks=None):
        batch = states[0].shape[1]
        scratch = super().workspace(states, 3 if self.linear_before_reset else 2)
        return {**scratch, "gates": self.buffer(3, batch), "tmp": self.buffer(1, batch)}

    def run(self, ws, rows, proj, y, y_product, h, h_product):
        lbr = self.linear_before_reset
        f, g = self.kernel(self.activations[0], 0), self.kernel(self.activations[1], 2)
        clip = self.clipper()
        gates, tmp = self.rows_of(ws, "gates", rows), self.rows_of(ws, "tmp", rows)[0]
        zr, z, r, hh = gates[0:2], gates[0], gates[1], gates[2]
        raw, moved = self.scratch(ws, 3 if lbr else 2, rows)
        first, first_r = self.product(self.r_t if lbr else self.r_t_zr)
        second, second_r = self.product(self.r_t_h)
        tmp_in, hh_out = (tmp, hh) if ws["single"] else (self.for_product(tmp), self.for_product(hh))
        hidden_r_bias = self.vector(ws, self.hidden_r_bias) if lbr else None
        add, sub, exp, one = np.add, np.subtract, np.exp, np.asarray(1, self.dtype)
        fast = self.fast
        gate = np.divide if fast else np.multiply  # by 1 + exp(-x), or by the activated gate
        moved_zr, moved_h = moved[0:2], moved[2] if lbr else None
        with np.errstate(over="ignore"):  # exp(-x) overflows to inf for large negative x: the gate is 0
            for p_zr, p_h, y_t, y_out in zip(proj[:, 0:2], proj[:, 2], y, y_product):
                first(h_product, first_r, raw)
                add(moved_zr, p_zr, zr)
                if fast:
                    exp(zr, zr)
                    add(zr, one, zr)
                else:
                    if clip is not None:
                        clip(zr, zr)
                    f(zr, zr)
                if lbr:
                    add(moved_h, hidden_r_bias, hh)
                    gate(hh, r, hh)
                else:
                    gate(h, r, tmp)
                    second(tmp_in, second_r, hh_out)
                add(hh, p_h, hh)
                if clip is not None:
                    clip(hh, hh)
                g(hh, hh)
                sub(h, hh, tmp)
                gate(tmp, z, tmp)
                add(hh, tmp, y_t)
                h, h_product = y_t, y_out


class LstmCell(Cell):
    """ONNX LSTM with optional peepholes, coupled input-forget gate and clip.

    The step buffer holds ``[C, c~, f, i, o]``: the cell state, then the gates, so
    that ``[f, i] * [C, c~]`` is one multiplication.
    """

    gate_count = 4
    gate_order = (3, 2, 0, 1)  # ONNX order is i, o, f, c
    state_names = ("h", "c")

    def __init__(self, w, r, bias, activations, clip, dtype, peepholes: np.ndarray | None = None,
                 input_forget: bool = False):
        kinds = tuple(a.kind for a in activations)
        #: the default activations and nothing else: sigmoids as ``1 / (1 + exp(-x))``, the sign
        #: folded into the weights, so that ``[f, i] * [C, c~]`` is one division ``[C, c~] / (1 + e)``
        self.fast = kinds == ("sigmoid", "tanh", "tanh") and clip is None and peepholes is None and not input_forget
        super().__init__(w, r, bias, activations, clip, dtype)
        self.input_forget = input_forget
        self.peepholes = None
        if peepholes is not None:  # ONNX order is i, o, f; here (f, i) and o, each (directions, 1, hidden)
            scaled = peepholes.astype(self.dtype).reshape(self.directions, 3, 1, self.hidden_size)
            scaled = scaled * self.gate_scales[1]
            self.peepholes = (scaled[:, [2, 0]].transpose(1, 0, 2, 3).copy(), scaled[:, 1].copy())

    def scales(self):
        if self.fast:
            return np.array([1, -1, -1, -1], self.dtype)
        f, g = (a.input_scale if self.clip is None else 1.0 for a in self.activations[:2])
        return np.array([g, f, f, f], self.dtype)

    def workspace(self, states, blocks=None):
        batch = states[0].shape[1]
        big = self.buffer(5, batch)
        big[0] = states[1]
        ws = {"big": big, "pair": self.buffer(2, batch), **super().workspace(states)}
        if ws["single"]:  # the product can write the gates in place
            ws["scratch"] = big[1:5].reshape(1, 1, 4 * self.hidden_size)
        return ws

    def extra_states(self, ws):
        return [ws["big"][0].copy()]

    def run(self, ws, rows, proj, y, y_product, h, h_product):
        big, pair = self.rows_of(ws, "big", rows), self.rows_of(ws, "pair", rows)
        cell, cc, gates, sig, fi, o = big[0], big[0:2], big[1:5], big[2:5], big[2:4], big[4]
        pair_a, pair_b = pair[0], pair[1]
        raw, moved = self.scratch(ws, 4, rows)
        product, r = self.product(self.r_t)
        if not self.fast:
            return self._run_general(ws, big, pair, proj, y, y_product, h_product, product, r, raw, moved)
        ct = big[1]
        add, divide, exp, tanh, one = np.add, np.divide, np.exp, np.tanh, np.asarray(1, self.dtype)
        with np.errstate(over="ignore"):  # exp(-x) overflows to inf for large negative x: the gate is 0
            for p, y_t, y_out in zip(proj, y, y_product):
                product(h_product, r, raw)
                add(moved, p, gates)
                tanh(ct, ct)
                exp(sig, sig)
                add(sig, one, sig)
                divide(cc, fi, pair)
                add(pair_a, pair_b, cell)
                tanh(cell, y_t)
                divide(y_t, o, y_t)
                h_product = y_out

    def _run_general(self, ws, big, pair, proj, y, y_product, h_product, product, r, raw, moved):
        cell, cc, ct, gates, fio, fi, f_gate, i_gate, o = (
            big[0], big[0:2], big[1], big[1:5], big[2:5], big[2:4], big[2], big[3], big[4])
        pair_a, pair_b = pair[0], pair[1]
        f, g = self.kernel(self.activations[0], 1), self.kernel(self.activations[1], 0)
        h_act = self.activations[2].kernel(self.dtype)
        clip = self.clipper()
        one = np.asarray(1, self.dtype)
        add, mul = np.add, np.multiply
        peep = self.peepholes is not None
        if peep:
            peep_fi, peep_o = (self.vector(ws, v) for v in self.peepholes)
            peep_tmp = np.empty(fi.shape, self.dtype)
        before_o, sigmoid_part = (big[1:4], fi) if peep else (gates, fio)
        for p, y_t, y_out in zip(proj, y, y_product):
            product(h_product, r, raw)
            add(moved, p, gates)
            if peep:
                mul(cell, peep_fi, peep_tmp)
                add(fi, peep_tmp, fi)
            if clip is not None:
                clip(before_o, before_o)
            g(ct, ct)
            f(sigmoid_part, sigmoid_part)
            if self.input_forget:
                np.subtract(one, i_gate, f_gate)
            mul(fi, cc, pair)
            add(pair_a, pair_b, cell)
            if peep:
                mul(cell, peep_o, pair_a)
                add(o, pair_a, o)
                if clip is not None:
                    clip(o, o)
                f(o, o)
            h_act(cell, y_t)
            mul(y_t, o, y_t)
            h_product = y_out
