"""LiteRT's hybrid recurrent kernels: LSTM (``LstmStepHybrid``) and SVDF (``EvalHybridSVDF``)
with int8 weights and float activations, inputs and states quantized row by row on the fly
(``hybrid.quantize_rows``), everything else in float32 as LiteRT's reference kernels."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...datum import DatumType
from ...errors import AnalysisError
from ...fact import TypedFact
from .hybrid import check_hybrid_weights, integer_products, quantize_rows
from .lstm import PEEPHOLE

#: weight slots of an LSTM that hybrid models hold as int8 (products, peepholes, projection)
INT8_SLOTS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16)


@dataclass
class HybridLstmScales:
    """Each int8 weight slot's scale (LiteRT's hybrid LSTM takes per-tensor weights)."""

    scales: dict


def hybrid_lstm_scales(op, inputs: list[TypedFact]) -> HybridLstmScales:
    scales = {}
    for slot, fact in zip(op.slots, inputs):
        if slot in INT8_SLOTS:
            found = check_hybrid_weights(fact, f"LSTM {slot} weights")
            if found.size != 1:
                raise AnalysisError(f"hybrid LSTM weights must be quantized per tensor, got {fact}")
            scales[slot] = np.float32(found[0])
        elif slot != 0 and fact.dtype != DatumType.F32:
            raise AnalysisError(f"a hybrid LSTM takes float32 biases and coefficients, got {fact} at input {slot}")
    return HybridLstmScales(scales)


class _Product:
    """One int8 weight matrix (rows, depth) against rows of floats quantized on the fly."""

    def __init__(self, weights: np.ndarray, scale: np.float32):
        self.weights_t = np.ascontiguousarray(weights.T.astype(np.float32))
        self.row_sums = weights.astype(np.int64).sum(axis=1)
        self.scale = np.float32(scale)

    def accumulate(self, out: np.ndarray, quantized) -> np.ndarray:
        """``out + products * (row factor * scale)``, as LiteRT's MatrixBatchVectorMultiplyAccumulate."""
        values, factors, offsets, asymmetric = quantized
        dots = integer_products(values, self.weights_t)
        if asymmetric:
            dots -= offsets.astype(np.int64)[:, None] * self.row_sums[None, :]
        scales = (factors * self.scale).astype(np.float32)[:, None]
        return (out + dots.astype(np.float32) * scales).astype(np.float32)


def run_hybrid_lstm(state, recipe: HybridLstmScales, inputs, sequence: np.ndarray) -> list[np.ndarray]:
    """All time steps of LiteRT's hybrid LSTM from the state's float (h, c); updates them."""
    from ..lstm_projected import cell_activation, sigmoid

    op = state.op
    w, scales = op.weights, recipe.scales
    gates = [offset for offset in range(4) if w(inputs, 1 + offset) is not None]
    feed = {o: _Product(w(inputs, 1 + o), scales[1 + o]) for o in gates}
    recurrent = {o: _Product(w(inputs, 5 + o), scales[5 + o]) for o in gates}
    peepholes = {o: (w(inputs, PEEPHOLE[o]).astype(np.float32) * scales[PEEPHOLE[o]]).astype(np.float32)
                 for o in gates if o in PEEPHOLE and w(inputs, PEEPHOLE[o]) is not None}
    biases = {o: w(inputs, 12 + o) for o in gates}
    projection = w(inputs, 16)
    project = _Product(projection, scales[16]) if projection is not None else None
    projection_bias = w(inputs, 17)
    asymmetric = op.asymmetric_inputs
    steps, batch = sequence.shape[0], sequence.shape[1]
    h = state.h.reshape(batch, -1).astype(np.float32)
    c = state.c.reshape(batch, -1).astype(np.float32)
    units = c.shape[1]

    def gate(offset: int, x_rows, h_rows, cell, activation):
        bias = biases[offset]
        start = np.zeros((batch, units), np.float32) if op.layer_norm or bias is None else \
            np.broadcast_to(bias.astype(np.float32), (batch, units))
        values = feed[offset].accumulate(start, x_rows)
        values = recurrent[offset].accumulate(values, h_rows)
        if offset in peepholes:
            values = (values + peepholes[offset] * cell).astype(np.float32)
        if op.layer_norm:
            values = op.finish_gate_float(inputs, offset, values)
        return sigmoid(values) if activation is None else cell_activation(values, activation)

    outputs = []
    for step in range(steps):
        x_rows = (*quantize_rows(sequence[step], asymmetric), asymmetric)
        h_rows = (*quantize_rows(h, asymmetric), asymmetric)
        forget = gate(1, x_rows, h_rows, c, None)
        input_gate = (np.float32(1) - forget) if 0 not in gates else gate(0, x_rows, h_rows, c, None)
        cell_gate = gate(2, x_rows, h_rows, None, op.activation)
        c = (forget * c).astype(np.float32)
        c = (c + cell_gate * input_gate).astype(np.float32)
        if op.cell_clip > 0:
            c = np.clip(c, -np.float32(op.cell_clip), np.float32(op.cell_clip))
        output_gate = gate(3, x_rows, h_rows, c, None)
        hidden = (output_gate * cell_activation(c.copy(), op.activation)).astype(np.float32)
        if project is not None:
            start = np.zeros((batch, projection.shape[0]), np.float32) if projection_bias is None else \
                np.broadcast_to(projection_bias.astype(np.float32), (batch, projection.shape[0]))
            h = project.accumulate(start, (*quantize_rows(hidden, asymmetric), asymmetric))
            if op.proj_clip > 0:
                h = np.clip(h, -np.float32(op.proj_clip), np.float32(op.proj_clip))
        else:
            h = hidden
        outputs.append(h)
    state.h, state.c = h.reshape(state.h.shape), c.reshape(state.c.shape)
    return outputs


class HybridSvdf:
    """The feature projection of a hybrid SVDF (int8 feature weights) and its time weights
    dequantized once (LiteRT dequantizes int8 time weights into a float tensor)."""

    def __init__(self, features: TypedFact, times: TypedFact, asymmetric: bool):
        if features.konst is None:
            raise AnalysisError(f"a hybrid SVDF needs constant feature weights, got {features}")
        scale = check_hybrid_weights(features, "SVDF feature weights")
        if scale.size != 1:
            raise AnalysisError(f"hybrid SVDF feature weights must be quantized per tensor, got {features}")
        self.product = _Product(features.konst, scale[0])
        self.asymmetric = asymmetric
        if times.dtype == DatumType.I8:
            time_scale = check_hybrid_weights(times, "SVDF time weights")
            if times.konst is None or time_scale.size != 1:
                raise AnalysisError(f"hybrid SVDF time weights must be constant and per tensor, got {times}")
            self.times = (times.konst.astype(np.float32) * np.float32(time_scale[0])).astype(np.float32)
        elif times.dtype == DatumType.F32 and times.konst is not None:
            self.times = times.konst
        else:
            raise AnalysisError(f"hybrid SVDF time weights must be constant int8 or float32, got {times}")

    def features(self, x: np.ndarray) -> np.ndarray:
        start = np.zeros((x.shape[0], self.product.row_sums.size), np.float32)
        return self.product.accumulate(start, (*quantize_rows(x, self.asymmetric), self.asymmetric))


def hybrid_svdf(op, inputs: list[TypedFact]) -> HybridSvdf:
    return HybridSvdf(inputs[1], inputs[2], op.asymmetric_inputs)
