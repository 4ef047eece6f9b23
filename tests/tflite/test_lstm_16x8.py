"""TFLite's 16x8 integer LSTM (int16 activations and states, int8 weights, int64 biases), bit for
bit against TFLite Micro over many invocations with the states carried over, and through the
writer.

TensorFlow's converter refuses to quantize UNIDIRECTIONAL_SEQUENCE_LSTM to 16x8 ("Quantization
to 16x8-bit not yet supported"), so the tests build the models; LiteRT's kernels refuse an int16
LSTM (they take int16 input for a float one), so TFLite Micro is the only oracle.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, check_model, q, write_model
from tests.tflite.oracle import reference_interpreter
from tractile.ops.lstm_projected import ProjectedLstm

VARIANTS = {
    "plain": {},
    "batches": {"batch": 3},
    "time_major_batches": {"time_major": True, "batch": 2},
    "wide_cell_2_-14_clip": {"units": 9, "depth": 7, "cell_scale": 2.0 ** -14, "cell_clip": 0.3},
}


def lstm16_model(batch=1, steps=5, depth=3, units=4, time_major=False, cell_clip=0.0, seed=0,
                 cell_scale=2.0 ** -11):
    """An int16 LSTM: int16 input and output state (zero points 0), int8 weights, int64 biases."""
    rng = np.random.default_rng(seed)
    g = GraphBuilder()
    x_q, h_q, c_q = q(1.0 / 12000), q(1.0 / 30000), q(cell_scale)
    shape = (steps, batch, depth) if time_major else (batch, steps, depth)
    x = g.input("x", "i16", shape, x_q)
    slot_values = {}
    for slot in (1, 2, 3, 4):
        slot_values[slot] = ("i8", rng.integers(-127, 128, (units, depth)), q(0.004 + 0.001 * slot))
    for slot in (5, 6, 7, 8):
        slot_values[slot] = ("i8", rng.integers(-127, 128, (units, units)), q(0.004 + 0.001 * slot))
    for slot in (12, 13, 14, 15):
        scale = x_q.scale[0] * slot_values[slot - 11][2].scale[0]
        slot_values[slot] = ("i64", rng.integers(-40000, 40000, units), q(scale))
    slots = (0, *sorted(slot_values))
    inputs = [x] + [g.const(f"w{slot}", value, dtype, quant)
                    for slot, (dtype, value, quant) in sorted(slot_values.items())]
    initial = (np.zeros((batch, units), np.int16), np.zeros((batch, units), np.int16))
    op = ProjectedLstm(slots=slots, cell_clip=cell_clip, time_major=time_major, initial_states=initial,
                       state_q=(h_q, c_q), hidden_q=h_q, quant=h_q, flavour="micro")
    return g.outputs(g.op("lstm", op, inputs))


def int16_runs(model, count: int, seed: int = 3) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    shape = tuple(model.input_facts[0].shape)
    return [[rng.integers(-32768, 32768, shape).astype(np.int16)] for _ in range(count)]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_int16_lstm_matches_tflite_micro(variant):
    model = lstm16_model(**VARIANTS[variant])
    results = check_model(model, int16_runs(model, 16), oracle="micro")
    outputs = np.concatenate([r[0].reshape(-1) for r in results])
    assert outputs.dtype == np.int16
    assert len(np.unique(outputs)) > 100, "outputs too uniform to tell kernels apart"
    assert np.abs(outputs.astype(np.int64)).max() > 128, "the outputs never leave the int8 range"


def test_the_reference_flavour_runs_tflite_micros_arithmetic_too():
    """LiteRT has no 16x8 LSTM: loaded with either flavour, the model runs TFLite Micro's."""
    from tractile.formats.tflite import load_tflite

    model = lstm16_model(batch=2, seed=5)
    data = write_model(model)
    runs = int16_runs(model, 4, seed=7)
    reference = load_tflite(data, flavour="reference").into_optimized().state()
    micro = load_tflite(data, flavour="micro").into_optimized().state()
    for inputs in runs:
        np.testing.assert_array_equal(reference.run(inputs)[0], micro.run(inputs)[0])
    with pytest.raises(RuntimeError, match="INT64 != FLOAT32"):
        reference_interpreter(data)


def test_an_int16_lstm_with_a_projection_is_refused_by_name():
    from tractile.datum import DatumType
    from tractile.errors import AnalysisError
    from tractile.fact import TypedFact

    model = lstm16_model()
    lstm = next(node for node in model.nodes if isinstance(node.op, ProjectedLstm))
    op = lstm.op
    facts = [model.outlet_fact(outlet) for outlet in lstm.inputs] + [TypedFact(DatumType.I8, (3, 4), q(0.01))]
    projected = ProjectedLstm(slots=op.slots + (16,), initial_states=op.initial_states, state_q=op.state_q,
                              hidden_q=op.hidden_q, quant=op.quant, flavour="micro")
    with pytest.raises(AnalysisError, match="16x8.*projection_weights"):
        projected.output_facts(facts)
