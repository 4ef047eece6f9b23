"""Hybrid (dynamic-range) models built here: float activations, int8 weights, LiteRT's on-the-fly
quantization of each row (symmetric and asymmetric), FULLY_CONNECTED (per-tensor and
per-channel weights), SVDF and LSTM (CIFG, peepholes, projection, layer norm) within 1e-5 of
LiteRT's reference kernels, written back and reloaded; the quantization of rows checked
against LiteRT's own rounding on values that tie."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, check_model, q, qc
from tractile.ops.lstm_layer_norm import LayerNormLstm
from tractile.ops.lstm_projected import ProjectedLstm
from tractile.ops.matmul import MatMul
from tractile.ops.quantized.hybrid import quantize_rows
from tractile.ops.svdf import Svdf

RNG = np.random.default_rng(5)


def float_runs(model, count=4, seed=1, offset=0.0):
    rng = np.random.default_rng(seed)
    return [[(rng.standard_normal(tuple(f.shape)) * 2 + offset * (k % 2)).astype(np.float32)
             for f in model.input_facts] for k in range(count)]


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("asymmetric", [False, True])
def test_hybrid_fully_connected(per_channel, asymmetric):
    g = GraphBuilder()
    x = g.input("x", "f32", (3, 2, 20))
    w_q = qc(np.linspace(0.01, 0.03, 16), 0) if per_channel else q(0.02)
    w = g.const("w", RNG.integers(-127, 128, (16, 40)), "i8", w_q)
    b = g.const("b", RNG.standard_normal(16).astype(np.float32))
    model = g.outputs(g.dense("fc", x, w, b, asymmetric=asymmetric, activation="RELU"))
    assert any(isinstance(n.op, MatMul) and n.op.is_hybrid([model.outlet_fact(o) for o in n.inputs])
               for n in model.nodes)
    check_model(model, float_runs(model, offset=1.5) + [[np.zeros((3, 2, 20), np.float32)]])


def test_rows_quantize_as_litert():
    """Ties (x * 127 / max|x| exactly k + 0.5) round away from zero; a zero row quantizes to
    zeros with factor 1; the asymmetric zero point is nudged into [-128, 127]."""
    rows = np.array([[127.0, 0.5, -0.5, 1.5, -2.5], [0, 0, 0, 0, 0], [3.0, 2.0, 1.0, 0.5, 0.25]], np.float32)
    values, factors, offsets = quantize_rows(rows, asymmetric=False)
    assert values[0].tolist() == [127, 1, -1, 2, -3] and values[1].tolist() == [0] * 5
    assert factors[1] == 1.0 and factors[0] == np.float32(1.0)
    values, factors, offsets = quantize_rows(rows, asymmetric=True)
    assert offsets[2] == -128 and values[2, 0] == 127 and values[2, -1] == -128 + round(0.25 / factors[2])
    assert offsets[1] == 0 and factors[1] == 1.0


def svdf_model(asymmetric: bool, rank: int = 2, times_int8: bool = True):
    g = GraphBuilder()
    batch, depth, filters, frames = 2, 24, 8, 6
    x = g.input("x", "f32", (batch, depth))
    features = g.const("features", RNG.integers(-127, 128, (filters, depth)), "i8", q(0.01))
    if times_int8:
        times = g.const("times", RNG.integers(-127, 128, (filters, frames)), "i8", q(0.008))
    else:
        times = g.const("times", RNG.standard_normal((filters, frames)).astype(np.float32))
    bias = g.const("bias", RNG.standard_normal(filters // rank).astype(np.float32))
    op = Svdf(rank=rank, activation="RELU", initial_state=np.zeros((batch, filters * frames), np.float32),
              asymmetric_inputs=asymmetric)
    return g.outputs(g.op("svdf", op, [x, features, times, bias]))


@pytest.mark.parametrize("asymmetric", [False, True])
def test_hybrid_svdf_carries_its_memory(asymmetric):
    model = svdf_model(asymmetric)
    check_model(model, float_runs(model, 8, offset=0.7))


def hybrid_lstm_model(cifg=False, peepholes=False, projection=0, layer_norm=False, asymmetric=True,
                      time_major=False, batch=2, steps=4, depth=6, units=5, cell_clip=0.0, proj_clip=0.0):
    g = GraphBuilder()
    outputs = projection or units
    shape = (steps, batch, depth) if time_major else (batch, steps, depth)
    x = g.input("x", "f32", shape)
    gates = [1, 2, 3] if cifg else [0, 1, 2, 3]
    values: dict[int, tuple] = {}
    for offset in gates:
        values[1 + offset] = ("i8", RNG.integers(-127, 128, (units, depth)), q(0.01 + 0.002 * offset))
        values[5 + offset] = ("i8", RNG.integers(-127, 128, (units, outputs)), q(0.008 + 0.002 * offset))
        values[12 + offset] = ("f32", RNG.standard_normal(units) * 0.3, None)
        if peepholes and offset != 2:
            values[9 + offset if offset < 2 else 11] = ("i8", RNG.integers(-127, 128, units), q(0.004))
        if layer_norm:
            values[20 + offset] = ("f32", RNG.uniform(0.3, 1.5, units), None)
    if projection:
        values[16] = ("i8", RNG.integers(-127, 128, (projection, units)), q(0.006))
        values[17] = ("f32", RNG.standard_normal(projection) * 0.1, None)
    slots = (0, *sorted(values))
    inputs = [x] + [g.const(f"w{slot}", value, kind, quant) for slot, (kind, value, quant) in sorted(values.items())]
    kind = LayerNormLstm if layer_norm else ProjectedLstm
    initial = (np.zeros((batch, outputs), np.float32), np.zeros((batch, units), np.float32))
    op = kind(slots=slots, time_major=time_major, initial_states=initial, asymmetric_inputs=asymmetric,
              cell_clip=cell_clip, proj_clip=proj_clip)
    return g.outputs(g.op("lstm", op, inputs))


LSTM_VARIANTS = {
    "plain_symmetric": dict(asymmetric=False),
    "plain": {},
    "cifg_peepholes": dict(cifg=True, peepholes=True),
    "projection_clips": dict(projection=3, cell_clip=1.2, proj_clip=0.5),
    "layer_norm_peepholes": dict(layer_norm=True, peepholes=True),
    "time_major": dict(time_major=True, batch=3),
}


@pytest.mark.parametrize("variant", sorted(LSTM_VARIANTS))
def test_hybrid_lstm_matches_litert(variant):
    model = hybrid_lstm_model(**LSTM_VARIANTS[variant])
    check_model(model, float_runs(model, 5, offset=0.8))
