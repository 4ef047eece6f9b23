"""Integer LSTM configurations Keras does not produce (CIFG, peepholes, projection, clips,
time-major batches), written by tractile and checked bit for bit against TFLite's reference
kernels over many invocations with the states carried over.

The states have no buffer in the file (TFLite refuses buffers on variable tensors): both
engines start them at their zero points.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, check_model, q
from tractile.ops.lstm_projected import ProjectedLstm

VARIANTS = {
    "plain": {},
    "cifg": {"cifg": True},
    "time_major_batches": {"time_major": True, "batch": 3},
    "peepholes": {"peepholes": True},
    "projection": {"projection": 3},
    "peepholes_projection_clips": {"peepholes": True, "projection": 3, "cell_clip": 1.5, "proj_clip": 0.4},
    "cifg_peepholes_wide": {"cifg": True, "peepholes": True, "units": 7, "depth": 9},
    "cell_scale_2_-14": {"cell_scale": 2.0 ** -14},
    # with a projection, TFLite's reference applies peepholes with a period of outputs, per call
    "time_major_peepholes_projection": {"time_major": True, "batch": 3, "peepholes": True, "projection": 3},
}


def lstm_model(batch=2, steps=5, depth=3, units=4, cifg=False, peepholes=False, projection=0,
               time_major=False, cell_clip=0.0, proj_clip=0.0, seed=0, cell_scale=2.0 ** -11):
    rng = np.random.default_rng(seed)
    outputs = projection or units
    g = GraphBuilder()
    x_q, h_q, c_q = q(0.03, -5), q(0.008, 3), q(cell_scale)
    hidden_q = q(0.007, -2) if projection else h_q
    shape = (steps, batch, depth) if time_major else (batch, steps, depth)
    x = g.input("x", "i8", shape, x_q)
    slot_values = {}
    for slot in (1, 2, 3, 4):
        slot_values[slot] = ("i8", rng.integers(-127, 128, (units, depth)), q(0.004 + 0.001 * slot))
    for slot in (5, 6, 7, 8):
        slot_values[slot] = ("i8", rng.integers(-127, 128, (units, outputs)), q(0.004 + 0.001 * slot))
    for slot in (12, 13, 14, 15):
        slot_values[slot] = ("i32", rng.integers(-20000, 20000, units), q(0.0001 + 0.00001 * slot))
    if cifg:
        for slot in (1, 5, 12):
            del slot_values[slot]
    if peepholes:
        for slot in (10, 11) if cifg else (9, 10, 11):
            slot_values[slot] = ("i16", rng.integers(-3000, 3000, units), q(0.0002 * slot))
    if projection:
        slot_values[16] = ("i8", rng.integers(-127, 128, (projection, units)), q(0.01))
        slot_values[17] = ("i32", rng.integers(-500, 500, projection), q(0.01 * 0.007))
    slots = (0, *sorted(slot_values))
    inputs = [x] + [g.const(f"w{slot}", value, dtype, quant)
                    for slot, (dtype, value, quant) in sorted(slot_values.items())]
    initial = (np.full((batch, outputs), h_q.zero_point[0], np.int8), np.zeros((batch, units), np.int16))
    op = ProjectedLstm(slots=slots, cell_clip=cell_clip, proj_clip=proj_clip, time_major=time_major,
                       initial_states=initial, state_q=(h_q, c_q), hidden_q=hidden_q, quant=h_q)
    return g.outputs(g.op("lstm", op, inputs))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_int8_lstm_matches_builtin_ref(variant):
    model = lstm_model(**VARIANTS[variant])
    rng = np.random.default_rng(3)
    fact = model.input_facts[0]
    runs = [[rng.integers(-128, 128, tuple(fact.shape)).astype(np.int8)] for _ in range(24)]
    results = check_model(model, runs)
    outputs = np.concatenate([r[0].reshape(-1) for r in results])
    assert len(np.unique(outputs)) > 20, "outputs too uniform to tell kernels apart"
