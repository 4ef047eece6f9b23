"""The shared TFLite models: bit-exact with TFLite on random and upstream inputs."""
from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import shared_model
from tests.tflite.oracle import (
    assert_float_close,
    micro_interpreter,
    random_inputs,
    reference_interpreter,
    run_micro,
    run_reference,
)
from tractile.fact import TypedFact
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.writer import write_model

RUNS = 100
TESTDATA = "tflite/testdata/"


def quantize(value: float, fact) -> int:
    q = fact.qparams
    return int(np.clip(round(value / q.scale[0]) + q.zero_point[0], -128, 127))


def compare_sequence(model, interpreter, rng, runs: int = RUNS, runner=run_reference) -> int:
    """Run ``runs`` random inputs through both (one state, as TFLite's variables persist)."""
    state = model.state()
    for _ in range(runs):
        inputs = random_inputs(model.input_facts, rng)
        expected = runner(interpreter, inputs)
        got = state.run(inputs)
        for value, reference in zip(got, expected):
            if value.dtype.kind == "f":
                assert_float_close(value, reference)
            else:
                assert value.dtype == reference.dtype
                np.testing.assert_array_equal(value, reference)
    return runs


@pytest.fixture(scope="module")
def person_detect_fixed():
    """person_detect as tractile loads it, and a copy the full TFLite interpreter accepts.

    The copy is written by tractile's writer: the loader reads the 14 bias tensors'
    quantized dimension 3 as 0, so the written file has quantized_dimension 0 there.
    """
    path = shared_model("tflite/person_detect.tflite")
    model = load_tflite(path)
    return model.into_optimized(), write_model(model)


@pytest.mark.parametrize("name", ["hello_world_int8", "microflow_sine"])
def test_sine_models_batched_random(name):
    path = shared_model(f"tflite/{name}.tflite")
    model = load_tflite(path)
    fact = model.input_fact(0)
    model.set_input_fact(0, TypedFact(fact.dtype, (RUNS, 1), qparams=fact.qparams))
    model = model.into_optimized()
    inputs = random_inputs(model.input_facts, np.random.default_rng(1))
    assert inputs[0].shape == (RUNS, 1)
    expected = run_reference(reference_interpreter(path), inputs)
    np.testing.assert_array_equal(model.run(inputs)[0], expected[0])


def test_hello_world_int8_upstream():
    model = load_tflite(shared_model("tflite/hello_world_int8.tflite")).into_optimized()
    outputs = [int(model.run([np.array([[q]], dtype=np.int8)])[0][0, 0]) for q in (-128, -64, 0, 64)]
    assert outputs == [4, 126, 4, -126]


def test_hello_world_float_upstream_and_random():
    path = shared_model("tflite/hello_world_float.tflite")
    model = load_tflite(path).into_optimized()
    got = [float(model.run([np.array([[x]], dtype=np.float32)])[0][0, 0]) for x in
           (0.0, math.pi / 2, math.pi, 3 * math.pi / 2)]
    np.testing.assert_allclose(got, [0.0264, 0.9957, -0.0050, -1.0057], atol=5e-4)
    assert compare_sequence(model, reference_interpreter(path), np.random.default_rng(2)) == RUNS


def test_microflow_sine_upstream():
    model = load_tflite(shared_model("tflite/microflow_sine.tflite")).into_optimized()
    x = quantize(0.5, model.input_fact(0))
    y = model.run([np.array([[x]], dtype=np.int8)])[0]
    assert int(y[0, 0]) == 57
    out = model.output_fact(0).qparams
    assert abs(out.scale[0] * (57 - out.zero_point[0]) - 0.41348344) < 1e-6


def test_micro_speech_random():
    path = shared_model("tflite/micro_speech_quantized.tflite")
    model = load_tflite(path).into_optimized()
    assert compare_sequence(model, reference_interpreter(path), np.random.default_rng(3)) == RUNS


def test_micro_speech_upstream():
    model = load_tflite(shared_model("tflite/micro_speech_quantized.tflite")).into_optimized()
    yes = np.load(shared_model(TESTDATA + "speech_yes.npy")).reshape(1, 1960)
    no = np.load(shared_model(TESTDATA + "speech_no.npy")).reshape(1, 1960)
    half = np.full((1, 1960), quantize(0.5, model.input_fact(0)), dtype=np.int8)
    assert model.run([yes])[0].tolist() == [[-128, -128, 127, -128]]
    assert model.run([no])[0].tolist() == [[-128, -114, -128, 114]]
    assert model.run([half])[0].tolist() == [[-88, -58, -58, -52]]


def test_person_detect_random(person_detect_fixed):
    model, fixed = person_detect_fixed
    assert compare_sequence(model, reference_interpreter(fixed), np.random.default_rng(4)) == RUNS


def test_person_detect_upstream(person_detect_fixed):
    """The README lists [60, -60] for no_person; TFLite's reference kernels and TFLite Micro
    both give [57, -57] on ``person_detect_no_person.npy`` (and on the BMP decoded either way
    up, never 60), so the interpreter's value is the oracle here."""
    model, fixed = person_detect_fixed
    interpreter = reference_interpreter(fixed)
    cases = {"person_detect_person": [-113, 113], "person_detect_no_person": [57, -57]}
    for name, expected in cases.items():
        image = np.load(shared_model(TESTDATA + f"{name}.npy")).reshape(1, 96, 96, 1)
        assert model.run([image])[0].tolist() == [expected]
        assert run_reference(interpreter, [image])[0].tolist() == [expected]
    half = np.full((1, 96, 96, 1), quantize(0.5, model.input_fact(0)), dtype=np.int8)
    assert model.run([half])[0].tolist() == [[56, -56]]


def test_person_detect_bias_quirk_is_read_as_axis_0():
    model = load_tflite(shared_model("tflite/person_detect.tflite"))
    biases = [n for n in model.nodes if n.op.name == "Const" and n.outputs[0].fact.rank == 1
              and n.outputs[0].fact.qparams is not None and len(n.outputs[0].fact.qparams.scale) > 1]
    assert len(biases) >= 14
    assert all(n.outputs[0].fact.qparams.axis == 0 for n in biases)


@pytest.mark.parametrize("name", ["mnist_lstm_int8", "mnist_lstm_float"])
def test_mnist_lstm_random_sequence(name):
    path = shared_model(f"tflite/{name}.tflite")
    model = load_tflite(path).into_optimized()
    assert compare_sequence(model, reference_interpreter(path), np.random.default_rng(5)) == RUNS


def test_keyword_model_against_tflite_micro():
    """keyword_scrambled_8bit keeps int8 SVDF memories, which only TFLite Micro runs.

    (The full TFLite interpreter reads an SVDF memory as int16 whatever its type.)
    """
    path = shared_model("tflite/keyword_scrambled_8bit.tflite")
    data = path.read_bytes()
    model = load_tflite(data, flavour="micro").into_optimized()
    interpreter = micro_interpreter(data)
    rng = np.random.default_rng(6)
    state = model.state()
    for run in range(RUNS):
        scale = 1 if run % 2 else 64
        x = (rng.integers(-32768, 32768, (1, 96)) // scale).astype(np.int16)
        expected = run_micro(interpreter, [x])[0]
        np.testing.assert_array_equal(state.run([x])[0], expected)


@pytest.mark.parametrize("name", ["hello_world_int8", "micro_speech_quantized"])
def test_micro_flavour_matches_tflite_micro(name):
    path = shared_model(f"tflite/{name}.tflite")
    model = load_tflite(path, flavour="micro").into_optimized()
    interpreter = micro_interpreter(path.read_bytes())
    assert compare_sequence(model, interpreter, np.random.default_rng(7), runs=50, runner=run_micro) == 50


def test_batching_with_a_text_spec_keeps_the_input_quantization():
    path = shared_model("tflite/hello_world_int8.tflite")
    model = load_tflite(path)
    quantization = model.input_fact(0).qparams
    model.set_input_fact(0, f"{RUNS},1,i8")
    assert model.input_fact(0).qparams == quantization and model.input_fact(0).shape == (RUNS, 1)
    model = model.into_optimized()
    inputs = random_inputs(model.input_facts, np.random.default_rng(11))
    np.testing.assert_array_equal(model.run(inputs)[0], run_reference(reference_interpreter(path), inputs)[0])
