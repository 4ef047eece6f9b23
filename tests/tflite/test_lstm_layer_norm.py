"""Layer-normalised UNIDIRECTIONAL_SEQUENCE_LSTMs (inputs 20-23), float32 and int8 8x8_16,
written by tractile and checked against TFLite's reference kernels (BUILTIN_REF) over many
invocations with the states carried over: bit for bit for int8, within 1e-5 for float.

TFLite Micro refuses layer normalisation (its LSTM kernel checks the inputs are absent), so
the micro flavour refuses it too; the C compiler has no lowering for it.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, check_model, q
from tests.tflite.oracle import micro_interpreter
from tractile.errors import AnalysisError, UnsupportedOpError
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.writer import write_model
from tractile.ops.lstm_layer_norm import LayerNormLstm
from tractile.ops.lstm_projected import ProjectedLstm
from tractile.ops.quantized.lstm_layer_norm import inverse_sqrt_multipliers

RUNS = 24
INT8_VARIANTS = {
    "plain": {},
    "cifg": {"cifg": True},
    "peepholes": {"peepholes": True},
    "projection": {"projection": 3},
    "cifg_peepholes_projection": {"cifg": True, "peepholes": True, "projection": 3},
    "time_major_batches_clips": {"time_major": True, "batch": 3, "cell_clip": 1.0, "proj_clip": 0.5,
                                 "projection": 3, "peepholes": True},
    "wide": {"units": 9, "depth": 7, "seed": 5, "cell_scale": 2.0 ** -12},
    # coarse gate scales: rows of nearly equal small values, whose integer variance is 0 and
    # is replaced by the guard max(1, 10000 * coefficient scale), here 20
    "variance_guard": {"gate_scale": 0.25, "ln_scale": 2e-3, "ln_range": (60, 700), "units": 4},
}
FLOAT_VARIANTS = {
    "plain": {},
    "cifg_peepholes": {"cifg": True, "peepholes": True},
    "projection_clips_time_major": {"projection": 3, "time_major": True, "batch": 3, "cell_clip": 1.5,
                                    "proj_clip": 0.8},
}


def layer_norm_lstm_model(dtype="i8", batch=2, steps=5, depth=4, units=5, cifg=False, peepholes=False,
                          projection=0, time_major=False, cell_clip=0.0, proj_clip=0.0, seed=0,
                          cell_scale=2.0 ** -11, gate_scale=3e-4, ln_scale=3e-5, ln_range=(5000, 32767),
                          flavour="reference"):
    rng = np.random.default_rng(seed)
    outputs = projection or units
    gates = [1, 2, 3] if cifg else [0, 1, 2, 3]
    shape = (steps, batch, depth) if time_major else (batch, steps, depth)
    g = GraphBuilder()
    slot_values: dict[int, tuple] = {}
    if dtype == "f32":
        x = g.input("x", "f32", shape)
        for offset in gates:
            slot_values[1 + offset] = ("f32", rng.standard_normal((units, depth)) * 0.5, None)
            slot_values[5 + offset] = ("f32", rng.standard_normal((units, outputs)) * 0.5, None)
            slot_values[12 + offset] = ("f32", rng.standard_normal(units) * 0.5, None)
            slot_values[20 + offset] = ("f32", rng.uniform(0.3, 1.5, units), None)
            if peepholes and offset != 2:
                slot_values[9 + offset if offset < 2 else 11] = ("f32", rng.standard_normal(units) * 0.3, None)
        if projection:
            slot_values[16] = ("f32", rng.standard_normal((projection, units)) * 0.4, None)
            slot_values[17] = ("f32", rng.standard_normal(projection) * 0.1, None)
        h_q = c_q = hidden_q = None
        gate_q: tuple = (None,) * 4
        initial = (np.zeros((batch, outputs), np.float32), np.zeros((batch, units), np.float32))
    else:
        x_q, h_q, c_q = q(0.03, -5), q(0.008, 3), q(cell_scale)
        hidden_q = q(0.007, -2) if projection else h_q
        x = g.input("x", "i8", shape, x_q)
        gate_q = tuple(q(gate_scale * (1 + 0.2 * offset)) for offset in range(4))
        for offset in gates:
            slot_values[1 + offset] = ("i8", rng.integers(-127, 128, (units, depth)), q(0.004 + 0.001 * offset))
            slot_values[5 + offset] = ("i8", rng.integers(-127, 128, (units, outputs)), q(0.003 + 0.001 * offset))
            scale = ln_scale * (1 + 0.03 * offset)
            slot_values[20 + offset] = ("i16", rng.integers(*ln_range, units), q(scale))
            # the bias is in the coefficients' scale / 1024: here within +-1.5
            bound = int(1.5 * 1024 / scale)
            slot_values[12 + offset] = ("i32", rng.integers(-bound, bound, units), q(scale / 1024))
            if peepholes and offset != 2:
                slot_values[9 + offset if offset < 2 else 11] = ("i16", rng.integers(-3000, 3000, units),
                                                                  q(0.0002 * (offset + 1)))
        if projection:
            slot_values[16] = ("i8", rng.integers(-127, 128, (projection, units)), q(0.01))
            slot_values[17] = ("i32", rng.integers(-500, 500, projection), q(0.01 * 0.007))
        initial = (np.full((batch, outputs), h_q.zero_point[0], np.int8), np.zeros((batch, units), np.int16))
    slots = (0, *sorted(slot_values))
    inputs = [x] + [g.const(f"w{slot}", value, kind, quant)
                    for slot, (kind, value, quant) in sorted(slot_values.items())]
    op = LayerNormLstm(
        slots=slots, cell_clip=cell_clip, proj_clip=proj_clip, time_major=time_major, initial_states=initial,
        state_q=(h_q, c_q), hidden_q=hidden_q, gate_q=gate_q, flavour=flavour, quant=h_q if dtype != "f32" else None)
    return g.outputs(g.op("lstm", op, inputs))


def random_runs(model, rng) -> list[list[np.ndarray]]:
    fact = model.input_facts[0]
    shape = tuple(fact.shape)
    if fact.dtype.np.kind == "f":
        return [[(rng.standard_normal(shape) * 2).astype(np.float32)] for _ in range(RUNS)]
    return [[rng.integers(-128, 128, shape).astype(np.int8)] for _ in range(RUNS)]


@pytest.mark.parametrize("variant", sorted(INT8_VARIANTS))
def test_int8_layer_norm_lstm_matches_builtin_ref(variant):
    model = layer_norm_lstm_model("i8", **INT8_VARIANTS[variant])
    results = check_model(model, random_runs(model, np.random.default_rng(3)))
    outputs = np.concatenate([r[0].reshape(-1) for r in results])
    assert len(np.unique(outputs)) > 20, "outputs too uniform to tell kernels apart"


@pytest.mark.parametrize("variant", sorted(FLOAT_VARIANTS))
def test_float_layer_norm_lstm_matches_builtin_ref(variant):
    model = layer_norm_lstm_model("f32", **FLOAT_VARIANTS[variant])
    results = check_model(model, random_runs(model, np.random.default_rng(4)), rtol=1e-5)
    outputs = np.concatenate([r[0].reshape(-1) for r in results])
    assert np.std(outputs) > 0.05, "outputs too uniform to tell kernels apart"


def test_inverse_sqrt_multipliers_approximate_the_real_inverse_square_root():
    values = np.concatenate([np.arange(2, 5000), np.geomspace(5000, 2 ** 31 - 1, 3000).astype(np.int64)])
    multiplier, shift = inverse_sqrt_multipliers(values)
    assert np.all(shift <= 0)
    real = multiplier.astype(np.float64) * 2.0 ** (shift - 31)
    np.testing.assert_allclose(real, 1 / np.sqrt(values.astype(np.float64)), rtol=2e-6)
    one, zero = inverse_sqrt_multipliers(np.array([0, 1]))
    assert one.tolist() == [2 ** 31 - 1] * 2 and zero.tolist() == [0, 0]


def test_micro_flavour_refuses_layer_norm_as_tflite_micro_does(capfd):
    data = write_model(layer_norm_lstm_model("i8"))
    with pytest.raises(UnsupportedOpError, match="TFLite Micro.*layer-normalised"):
        load_tflite(data, flavour="micro")
    with pytest.raises(RuntimeError):
        micro_interpreter(data)
    assert "UNIDIRECTIONAL_SEQUENCE_LSTM (number 0) failed to prepare" in capfd.readouterr().err


def test_the_c_compiler_refuses_layer_norm_and_auto_runs_it_interpreted(tmp_path):
    import tractile

    data = write_model(layer_norm_lstm_model("i8", cifg=True))
    model = load_tflite(data).into_optimized()
    with pytest.raises(UnsupportedOpError, match="LayerNormLstm"):
        model.compile()
    auto = tractile.load(data, compile="auto")
    x = np.random.default_rng(0).integers(-128, 128, tuple(model.input_facts[0].shape)).astype(np.int8)
    np.testing.assert_array_equal(auto.run([x])[0], model.run([x])[0])


def test_layer_norm_coefficients_must_match_the_gates():
    model = layer_norm_lstm_model("i8", cifg=True)
    node = next(n for n in model.nodes if isinstance(n.op, LayerNormLstm))
    inputs = [model.outlet_fact(o) for o in node.inputs]
    missing = dataclasses.replace(node.op, slots=tuple(s for s in node.op.slots if s != 22))
    with pytest.raises(AnalysisError, match="cell gate's layer-norm coefficients.*missing"):
        missing.output_facts([f for f, slot in zip(inputs, node.op.slots) if slot != 22])
    no_scale = dataclasses.replace(node.op, gate_q=(None,) * 4)
    with pytest.raises(AnalysisError, match="forget gate intermediate"):
        no_scale.output_facts(inputs)
    plain = ProjectedLstm(**{f.name: getattr(node.op, f.name) for f in dataclasses.fields(ProjectedLstm)})
    with pytest.raises(AnalysisError, match="without layer normalisation"):
        plain.output_facts(inputs)
