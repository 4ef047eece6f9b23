"""TFLite's integer LSTM (8x8_16), the recipe of a quantized ``ProjectedLstm``.

int8 input and output state, int16 gates in Q3.12, int16 cell state with a power-of-two
scale, gemmlowp's fixed-point sigmoid and tanh on int16, and the fixed-point multipliers
TFLite derives (in float) from the tensors' scales. TFLite Micro's variant, which rounds
differently, is ``lstm_micro``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...errors import AnalysisError
from ...fact import QParams, TypedFact
from .common import scale_of, zero_of
from .fixedpoint import Requantizer, rounding_divide_by_pot
from .functions import int16_table
from .output import clip_inplace

GATES = ("input", "forget", "cell", "output")
#: the peephole (cell to gate) weight slot of each gate offset (the cell gate has none)
PEEPHOLE = {0: 9, 1: 10, 3: 11}


def _f32(value) -> np.float32:
    return np.float32(value)


@dataclass
class LstmQuantization:
    """What an integer LSTM derives from its input facts: the input's and each weight slot's
    quantization, and the fixed-point parameters (``params``) TFLite's Prepare computes."""

    x: QParams | None
    weights: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)

    def q(self, slot: int) -> QParams | None:
        return self.weights.get(slot)


def lstm_quantization(op, inputs: list[TypedFact]) -> LstmQuantization:
    """The integer parameters of ``op`` (a ProjectedLstm) for its input facts, derived as
    TFLite's Prepare does (in float32)."""
    if inputs[0].qparams is None or op.state_q[0] is None or op.state_q[1] is None or op.hidden_q is None:
        raise AnalysisError("an integer LSTM needs a quantized input, quantized states and a hidden scale")
    recipe = LstmQuantization(inputs[0].qparams, {slot: fact.qparams for slot, fact in zip(op.slots, inputs)})
    input_scale = _f32(scale_of(recipe.x))
    output_scale = _f32(scale_of(op.state_q[0]))
    cell_log2 = math.log(scale_of(op.state_q[1])) / math.log(2.0)
    cell_scale = int(round(cell_log2))
    if abs(cell_log2 - cell_scale) >= 1e-3:
        raise AnalysisError("the LSTM cell state scale must be a power of two")
    hidden_scale = _f32(scale_of(op.hidden_q))
    params: dict = {"cell_scale": cell_scale}
    for gate, offset in zip(GATES, range(4)):
        wx, wh = recipe.q(1 + offset), recipe.q(5 + offset)
        if 1 + offset not in op.slots:
            continue
        if wx is None or wh is None:
            raise AnalysisError(f"the {gate} gate's weights of an integer LSTM must be quantized")
        inter = op.gate_scale(offset)
        params[f"x_{gate}"] = Requantizer([np.float64(_f32(_f32(scale_of(wx)) * input_scale) / inter)])
        params[f"h_{gate}"] = Requantizer([np.float64(_f32(_f32(scale_of(wh)) * output_scale) / inter)])
        peephole = recipe.q(PEEPHOLE[offset]) if offset in PEEPHOLE else None
        if peephole is not None:
            real = np.float64(_f32(2.0 ** cell_scale * np.float64(_f32(scale_of(peephole))) / np.float64(inter)))
            params[f"c_{gate}"] = Requantizer([real])
    params["hidden"] = Requantizer([np.float64(_f32(2.0 ** -15 / np.float64(hidden_scale) * 2.0 ** -15))])
    if recipe.q(16) is not None:
        params["projection"] = Requantizer(
            [np.float64(_f32(_f32(scale_of(recipe.q(16))) * hidden_scale) / output_scale)])
    params["cell_clip"] = int(np.clip(_f32(op.cell_clip) / _f32(scale_of(op.state_q[1])), -32768, 32767)) \
        if op.cell_clip > 0 else 0
    params["proj_clip"] = int(np.clip(_f32(op.proj_clip) / output_scale, -128, 127)) if op.proj_clip > 0 else 0
    recipe.params = params
    return recipe


def prepare_integer(op, recipe: LstmQuantization, inputs) -> dict:
    """All gates side by side: input and recurrent weights (D or U, gates * U) with their
    biases (zero-point corrections included), per-column requantizers, table offsets."""
    w = op.weights
    params = recipe.params
    x_zero, h_zero = zero_of(recipe.x), zero_of(op.state_q[0])
    gates = [(gate, offset) for gate, offset in zip(GATES, range(4)) if w(inputs, 1 + offset) is not None]
    units = w(inputs, 5 + gates[0][1]).shape[0]
    wx_parts, bx_parts, wh_parts, bh_parts, rx, rh, tables = [], [], [], [], [], [], []
    peepholes = {}
    for gate, offset in gates:
        wx, wh, bias = w(inputs, 1 + offset), w(inputs, 5 + offset), w(inputs, 12 + offset)
        wx_parts.append(wx.T.astype(np.float64))
        wh_parts.append(wh.T.astype(np.float64))
        if op.layer_norm:
            bias = None  # added after normalising
        bx_parts.append((bias.astype(np.int64) if bias is not None else 0) - x_zero * wx.astype(np.int64).sum(1))
        bh_parts.append(-h_zero * wh.astype(np.int64).sum(axis=1))
        for requantizers, key in ((rx, f"x_{gate}"), (rh, f"h_{gate}")):
            requantizers.append((params[key].multipliers[0], params[key].shifts[0]))
        tables.append(32768 + (65536 if gate == "cell" else 0))
        peephole = w(inputs, PEEPHOLE[offset]) if offset in PEEPHOLE else None
        if peephole is not None:
            peepholes[gate] = (len(tables) - 1, peephole.astype(np.int64), params[f"c_{gate}"])

    def requantizer(pairs):
        multipliers, shifts = zip(*pairs)
        return Requantizer.from_pairs(np.repeat(multipliers, units), np.repeat(shifts, units))

    prepared = {
        "gates": [gate for gate, _ in gates], "units": units,
        "wx": np.ascontiguousarray(np.concatenate(wx_parts, axis=1)), "bx": np.concatenate(bx_parts),
        "wh": np.ascontiguousarray(np.concatenate(wh_parts, axis=1)), "bh": np.concatenate(bh_parts),
        "rx": requantizer(rx), "rh": requantizer(rh), "peepholes": peepholes,
        "table": np.concatenate([int16_table("logistic", 3), int16_table("tanh", 3)]),
        "table_offsets": np.repeat(tables, units),
        "layer_norm": op.integer_layer_norm(recipe, inputs),
    }
    projection = w(inputs, 16)
    if projection is not None:
        hidden_zero = zero_of(op.hidden_q)
        bias = w(inputs, 17)
        pb = (bias.astype(np.int64) if bias is not None else 0) + hidden_zero * projection.astype(np.int64).sum(1)
        prepared["projection"] = (projection.T.astype(np.float64), pb)
    return prepared


def run_integer(state, recipe: LstmQuantization, p: dict, sequence: np.ndarray) -> list[np.ndarray]:
    """All time steps of TFLite's reference 8x8_16 kernel from the state's (h, c); updates them."""
    op = state.op
    params = recipe.params
    steps, batch = sequence.shape[0], sequence.shape[1]
    units, gates = p["units"], p["gates"]
    columns = {gate: slice(i * units, (i + 1) * units) for i, gate in enumerate(gates)}
    projected = (sequence.reshape(steps * batch, -1).astype(np.float64) @ p["wx"]).astype(np.int64)
    projected += p["bx"]
    x_parts = clip_inplace(p["rx"](projected), -32768, 32767).reshape(steps, batch, -1)
    h = state.h.reshape(batch, -1).astype(np.int64)
    c = state.c.reshape(batch, -1).astype(np.int64)
    cell_scale = params["cell_scale"]
    cell_table = int16_table("tanh", 15 + cell_scale)
    table, offsets, peepholes = p["table"], p["table_offsets"], p["peepholes"]
    rows = batch if op.time_major else 1  # TFLite's reference runs batch-major rows one by one
    peephole_weights = {gate: _peephole_layout(weights, rows, state.h.reshape(batch, -1).shape[1])
                        for gate, (_, weights, _) in peepholes.items()}
    outputs = []
    for step in range(steps):
        values = (h.astype(np.float64) @ p["wh"]).astype(np.int64)
        values += p["bh"]
        p["rh"].apply_inplace(values)
        values += x_parts[step]
        clip_inplace(values, -32768, 32767)
        for gate, (_, _, requant) in peepholes.items():
            if gate != "output":
                part = values[:, columns[gate]]
                part[...] = clip_inplace(requant(peephole_weights[gate] * c) + part, -32768, 32767)
        if op.layer_norm:
            for gate in gates:
                if gate != "output" or gate not in peepholes:
                    values[:, columns[gate]] = op.normalise_gate(p, gate, values[:, columns[gate]])
        activated = table[values + offsets]
        forget, cell_gate = activated[:, columns["forget"]], activated[:, columns["cell"]]
        c = _wrap16(rounding_divide_by_pot(forget * c, 15))
        if "input" in columns:
            update = activated[:, columns["input"]] * cell_gate
        else:
            update = (32767 - forget) * cell_gate
        c = clip_inplace(c + _wrap16(rounding_divide_by_pot(update, 30 + cell_scale)), -32768, 32767)
        if params["cell_clip"] > 0:
            c = clip_inplace(c, -params["cell_clip"], params["cell_clip"])
        output_gate = activated[:, columns["output"]]
        if "output" in peepholes:
            requant = peepholes["output"][2]
            raw = clip_inplace(requant(peephole_weights["output"] * c) + values[:, columns["output"]],
                               -32768, 32767)
            output_gate = table[op.normalise_gate(p, "output", raw) + 32768]
        product = output_gate * cell_table[c + 32768]
        if "projection" in p:
            hidden = clip_inplace(params["hidden"](product) - zero_of(op.hidden_q), -128, 127)
            weights, bias = p["projection"]
            acc = (hidden.astype(np.float64) @ weights).astype(np.int64) + bias
            h = clip_inplace(params["projection"](acc) + zero_of(op.state_q[0]), -128, 127)
            if params["proj_clip"] > 0:
                h = clip_inplace(h, -params["proj_clip"], params["proj_clip"])
        else:
            h = clip_inplace(params["hidden"](product) + zero_of(op.hidden_q), -128, 127)
        outputs.append(h.astype(np.int8))
    state.h = h.astype(state.h.dtype).reshape(state.h.shape)
    state.c = c.astype(state.c.dtype).reshape(state.c.shape)
    return outputs


def _peephole_layout(weights: np.ndarray, batch: int, outputs: int) -> np.ndarray:
    """Peephole weights per (row, cell) as TFLite's reference kernel applies them in one call
    over ``batch`` rows: along the flattened gates with a period of ``outputs`` (not units), to
    the first batch * outputs cells only. The plain layout when the LSTM has no projection."""
    units = weights.shape[0]
    flat = np.arange(batch * units).reshape(batch, units)
    return np.where(flat < batch * outputs, weights[flat % outputs], 0)


def _wrap16(values: np.ndarray) -> np.ndarray:
    return ((values + 32768) & 0xFFFF) - 32768
