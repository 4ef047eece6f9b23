"""UNIDIRECTIONAL_SEQUENCE_LSTM: float, and TFLite's integer 8x8_16 kernel.

The output and cell states are TFLite variable tensors: they are this op's state and
carry over from one run to the next (``state.reset()`` clears them). The integer kernel
follows TFLite's: int8 input and output state, int16 gates in Q3.12, int16 cell state
with a power-of-two scale, gemmlowp's fixed-point sigmoid and tanh on int16, and the
fixed-point multipliers TFLite derives (in float) from the tensors' scales.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ..base import expect_inputs
from .common import TflOp, apply_float_activation, check_activation, scale_of, zero_of
from .fixedpoint import Requantizer, int16_table, rounding_divide_by_pot

#: TFLite's input slots of UNIDIRECTIONAL_SEQUENCE_LSTM
SLOTS = ("input", "input_to_input", "input_to_forget", "input_to_cell", "input_to_output", "recurrent_to_input",
         "recurrent_to_forget", "recurrent_to_cell", "recurrent_to_output", "cell_to_input", "cell_to_forget",
         "cell_to_output", "input_gate_bias", "forget_gate_bias", "cell_gate_bias", "output_gate_bias",
         "projection_weights", "projection_bias", "output_state", "cell_state", "input_layer_norm",
         "forget_layer_norm", "cell_layer_norm", "output_layer_norm")
STATE_SLOTS = (18, 19)
GATES = ("input", "forget", "cell", "output")
#: the peephole (cell to gate) weight slot of each gate offset (the cell gate has none)
PEEPHOLE = {0: 9, 1: 10, 3: 11}


def _f32(value) -> np.float32:
    return np.float32(value)


@dataclass(frozen=True, eq=False)
class UnidirectionalSequenceLstm(TflOp):
    """LSTM over a sequence. ``slots``: the TFLite input slots wired (in order, states excluded).

    ``initial_states``: (output state, cell state) initial values; ``state_q`` their
    quantization; ``hidden_q``: the quantization of the hidden intermediate (integer kernel).
    """

    slots: tuple = ()
    activation: str = "TANH"
    cell_clip: float = 0.0
    proj_clip: float = 0.0
    time_major: bool = False
    initial_states: tuple = field(default=(), repr=False)
    state_q: tuple = (None, None)
    hidden_q: object = None
    is_stateless = False

    def _index(self, slot: int) -> int | None:
        return self.slots.index(slot) if slot in self.slots else None

    def output_facts(self, inputs):
        expect_inputs(inputs, len(self.slots), self)
        check_activation(self.activation)
        for required in (0, 2, 3, 4, 6, 7, 8, 13, 14, 15):
            if required not in self.slots:
                raise AnalysisError(f"LSTM input {SLOTS[required]} is missing")
        if any(slot in self.slots for slot in (20, 21, 22, 23)):
            raise AnalysisError("layer-normalized LSTMs are not supported")
        x = inputs[0]
        if x.rank != 3:
            raise AnalysisError(f"LSTM input must be 3-d, got {x}")
        recurrent = inputs[self._index(6)]
        n_output = recurrent.shape[1]
        if self._index(16) is not None:
            n_output = inputs[self._index(16)].shape[0]
        if len(self.initial_states) != 2:
            raise AnalysisError("LSTM needs its output and cell state values")
        if not x.dtype.is_float:
            if x.dtype != DatumType.I8 or self.hidden_q is None or self.state_q[1] is None:
                raise AnalysisError(f"integer LSTM needs int8 input, quantized states and hidden scale, got {x}")
        return [self.fact(0, x.dtype, (x.shape[0], x.shape[1], n_output))]

    def weights(self, inputs, slot: int):
        index = self._index(slot)
        return None if index is None else inputs[index]

    def q(self, slot: int):
        index = self._index(slot)
        return None if index is None else self.iq(index)

    @cached_property
    def _integer(self):
        """Fixed-point parameters, derived as TFLite's Prepare does (in float32)."""
        input_scale = _f32(scale_of(self.iq(0)))
        output_scale = _f32(scale_of(self.state_q[0]))
        cell_log2 = math.log(scale_of(self.state_q[1])) / math.log(2.0)
        cell_scale = int(round(cell_log2))
        if abs(cell_log2 - cell_scale) >= 1e-3:
            raise AnalysisError("the LSTM cell state scale must be a power of two")
        hidden_scale = _f32(scale_of(self.hidden_q))
        inter = _f32(2.0 ** -12)
        params = {"cell_scale": cell_scale}
        for gate, offset in zip(GATES, range(4)):
            wx, wh = self.q(1 + offset), self.q(5 + offset)
            if wx is None:
                continue
            params[f"x_{gate}"] = Requantizer([np.float64(_f32(_f32(scale_of(wx)) * input_scale) / inter)])
            params[f"h_{gate}"] = Requantizer([np.float64(_f32(_f32(scale_of(wh)) * output_scale) / inter)])
            peephole = self.q(PEEPHOLE[offset]) if offset in PEEPHOLE else None
            if peephole is not None:
                real = np.float64(_f32(2.0 ** cell_scale * np.float64(_f32(scale_of(peephole))) / np.float64(inter)))
                params[f"c_{gate}"] = Requantizer([real])
        params["hidden"] = Requantizer([np.float64(_f32(2.0 ** -15 / np.float64(hidden_scale) * 2.0 ** -15))])
        if self.q(16) is not None:
            params["projection"] = Requantizer(
                [np.float64(_f32(_f32(scale_of(self.q(16))) * hidden_scale) / output_scale)])
        params["cell_clip"] = int(np.clip(_f32(self.cell_clip) / _f32(scale_of(self.state_q[1])), -32768, 32767)) \
            if self.cell_clip > 0 else 0
        params["proj_clip"] = int(np.clip(_f32(self.proj_clip) / output_scale, -128, 127)) if self.proj_clip > 0 else 0
        return params

    def state(self):
        return _LstmState(self)

    def eval(self, inputs):
        return _LstmState(self).eval(inputs)


class _LstmState:
    def __init__(self, op: UnidirectionalSequenceLstm):
        self.op = op
        self.prepared = None
        self.reset()

    def reset(self) -> None:
        self.h = np.array(self.op.initial_states[0], copy=True)
        self.c = np.array(self.op.initial_states[1], copy=True)

    def eval(self, inputs):
        x = inputs[0]
        sequence = x if self.op.time_major else np.swapaxes(x, 0, 1)
        if x.dtype.kind == "f":
            outputs = self._run_float(inputs, sequence)
        else:
            outputs = self._run_integer(inputs, sequence)
        out = np.stack(outputs, axis=0)
        return [out if self.op.time_major else np.ascontiguousarray(np.swapaxes(out, 0, 1))]

    # float ----------------------------------------------------------------------------------
    def _run_float(self, inputs, sequence):
        op = self.op
        w = op.weights
        h = self.h.reshape(sequence.shape[1], -1).astype(np.float32)
        c = self.c.reshape(sequence.shape[1], -1).astype(np.float32)
        outputs = []

        def gate(xt, offset, peephole_cell, activation):
            wx, wh, bias = w(inputs, 1 + offset), w(inputs, 5 + offset), w(inputs, 12 + offset)
            value = xt @ wx.T + h @ wh.T
            peephole = w(inputs, PEEPHOLE[offset]) if offset in PEEPHOLE else None
            if peephole is not None:
                value += peephole * peephole_cell
            if bias is not None:
                value += bias
            if activation == "sigmoid":
                return (1.0 / (1.0 + np.exp(-value))).astype(np.float32)
            return apply_float_activation(value, op.activation)

        cifg = w(inputs, 1) is None
        for xt in sequence:
            forget = gate(xt, 1, c, "sigmoid")
            input_gate = 1.0 - forget if cifg else gate(xt, 0, c, "sigmoid")
            cell_gate = gate(xt, 2, c, "act")
            c = forget * c + input_gate * cell_gate
            if op.cell_clip > 0:
                c = np.clip(c, -op.cell_clip, op.cell_clip)
            output_gate = gate(xt, 3, c, "sigmoid")
            h = output_gate * apply_float_activation(c.copy(), op.activation)
            projection = w(inputs, 16)
            if projection is not None:
                h = h @ projection.T
                if w(inputs, 17) is not None:
                    h = h + w(inputs, 17)
                if op.proj_clip > 0:
                    h = np.clip(h, -op.proj_clip, op.proj_clip)
            h = h.astype(np.float32)
            outputs.append(h)
        self.h, self.c = h.reshape(self.h.shape), c.reshape(self.c.shape)
        return outputs

    # integer --------------------------------------------------------------------------------
    def _prepare(self, inputs):
        op = self.op
        w = op.weights
        x_zero = zero_of(op.iq(0))
        h_zero = zero_of(op.state_q[0])
        prepared = {}
        for gate, offset in zip(GATES, range(4)):
            wx = w(inputs, 1 + offset)
            if wx is None:
                continue
            wh = w(inputs, 5 + offset)
            bias = w(inputs, 12 + offset)
            bx = (bias.astype(np.int64) if bias is not None else 0) - x_zero * wx.astype(np.int64).sum(axis=1)
            bh = -h_zero * wh.astype(np.int64).sum(axis=1)
            prepared[gate] = (wx.T.astype(np.float64), bx, wh.T.astype(np.float64), bh,
                              w(inputs, PEEPHOLE[offset]) if offset in PEEPHOLE else None)
        projection = w(inputs, 16)
        if projection is not None:
            hidden_zero = zero_of(op.hidden_q)
            bias = w(inputs, 17)
            pb = (bias.astype(np.int64) if bias is not None else 0) + hidden_zero * projection.astype(np.int64).sum(1)
            prepared["projection"] = (projection.T.astype(np.float64), pb)
        return prepared

    def _run_integer(self, inputs, sequence):
        op = self.op
        params = op._integer
        if self.prepared is None or self.prepared[0] is not inputs[op._index(2)]:
            self.prepared = (inputs[op._index(2)], self._prepare(inputs))
        prepared = self.prepared[1]
        batch = sequence.shape[1]
        h = self.h.reshape(batch, -1).astype(np.int64)
        c = self.c.reshape(batch, -1).astype(np.int64)
        cell_scale = params["cell_scale"]
        outputs = []

        def gate(xt, name, activation):
            wx, bx, wh, bh, peephole = prepared[name]
            acc = np.rint(xt @ wx).astype(np.int64) + bx
            value = np.clip(params[f"x_{name}"](acc), -32768, 32767)
            acc = np.rint(h.astype(np.float64) @ wh).astype(np.int64) + bh
            value = np.clip(params[f"h_{name}"](acc) + value, -32768, 32767)
            if peephole is not None:
                product = peephole.astype(np.int64) * c
                value = np.clip(params[f"c_{name}"](product) + value, -32768, 32767)
            table = int16_table("logistic" if activation == "sigmoid" else "tanh", 3)
            return table[value + 32768]

        cifg = "input" not in prepared
        for xt in sequence:
            xt = xt.astype(np.float64)
            input_gate = None if cifg else gate(xt, "input", "sigmoid")
            forget = gate(xt, "forget", "sigmoid")
            cell_gate = gate(xt, "cell", "tanh")
            c = _wrap16(rounding_divide_by_pot(forget * c, 15))
            if cifg:
                update = _wrap16(rounding_divide_by_pot((32767 - forget) * cell_gate, 30 + cell_scale))
            else:
                update = _wrap16(rounding_divide_by_pot(input_gate * cell_gate, 30 + cell_scale))
            c = np.clip(c + update, -32768, 32767)
            if params["cell_clip"] > 0:
                c = np.clip(c, -params["cell_clip"], params["cell_clip"])
            output_gate = gate(xt, "output", "sigmoid")
            cell_tanh = int16_table("tanh", 15 + cell_scale)[c + 32768]
            product = output_gate * cell_tanh
            if "projection" in prepared:
                hidden = np.clip(params["hidden"](product) - zero_of(op.hidden_q), -128, 127)
                weights, bias = prepared["projection"]
                acc = np.rint(hidden.astype(np.float64) @ weights).astype(np.int64) + bias
                h = np.clip(params["projection"](acc) + zero_of(op.state_q[0]), -128, 127)
                if params["proj_clip"] > 0:
                    h = np.clip(h, -params["proj_clip"], params["proj_clip"])
            else:
                h = np.clip(params["hidden"](product) + zero_of(op.hidden_q), -128, 127)
            outputs.append(h.astype(np.int8))
        self.h = h.astype(self.h.dtype).reshape(self.h.shape)
        self.c = c.astype(self.c.dtype).reshape(self.c.shape)
        return outputs


def _wrap16(values: np.ndarray) -> np.ndarray:
    return ((values + 32768) & 0xFFFF) - 32768
