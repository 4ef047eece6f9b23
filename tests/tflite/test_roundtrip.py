"""tractile's writer: loading a written file gives the same outputs bit for bit, and TFLite agrees."""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import shared_model
from tests.tflite.oracle import assert_float_close, random_inputs, reference_interpreter, run_reference
from tractile.datum import DatumType
from tractile.errors import TractileError
from tractile.fact import TypedFact
from tractile.formats.tflite import load_tflite, save_tflite
from tractile.formats.tflite.writer import write_model
from tractile.model import TypedModel
from tractile.ops.linalg import Det

MODELS = ["hello_world_int8", "hello_world_float", "micro_speech_quantized", "mnist_lstm_int8", "mnist_lstm_float"]


@pytest.mark.parametrize("name", MODELS)
def test_round_trip_is_bit_exact_and_tflite_agrees(name, tmp_path):
    model = load_tflite(shared_model(f"tflite/{name}.tflite"))
    path = tmp_path / "copy.tflite"
    save_tflite(model, path)
    again = load_tflite(path)
    assert [str(f) for f in again.input_facts] == [str(f) for f in model.input_facts]
    assert [str(f) for f in again.output_facts] == [str(f) for f in model.output_facts]
    interpreter = reference_interpreter(path.read_bytes())
    first, second = model.into_optimized().state(), again.into_optimized().state()
    rng = np.random.default_rng(8)
    for _ in range(20):
        inputs = random_inputs(model.input_facts, rng)
        a, b = first.run(inputs)[0], second.run(inputs)[0]
        np.testing.assert_array_equal(a, b)
        expected = run_reference(interpreter, inputs)[0]
        if a.dtype.kind == "f":
            assert_float_close(a, expected)
        else:
            np.testing.assert_array_equal(a, expected)


def test_optimized_model_writes_too():
    model = load_tflite(shared_model("tflite/person_detect.tflite")).into_optimized()
    again = load_tflite(write_model(model)).into_optimized()
    x = random_inputs(model.input_facts, np.random.default_rng(9))
    np.testing.assert_array_equal(model.run(x)[0], again.run(x)[0])


def test_writing_an_op_tflite_lacks_names_the_node():
    model = TypedModel()
    x = model.add_source("x", TypedFact(DatumType.F32, (2, 2)))
    y = model.wire_node("sum", Det(), [x])
    model.outputs = y
    with pytest.raises(TractileError, match='"sum"'):
        write_model(model)


def test_a_folded_quantized_constant_is_written_with_its_consumers_quantization():
    from tests.tflite.builder import GraphBuilder, check_model, q
    from tractile.ops.shape import Reshape

    g = GraphBuilder()
    x = g.input("x", "i8", (2, 6), q(0.05, 3))
    constant = g.const("c", np.arange(-60, 60, 10).reshape(3, 4), "i8", q(0.02, 1))
    reshaped = g.op("r", Reshape(), [constant, g.const("shape", [2, 6], "i64")])
    model = g.outputs(g.binary("y", "add", [x, reshaped], q(0.1)))
    optimized = model.into_optimized()
    assert [n.op.name for n in optimized.nodes].count("Reshape") == 0
    rng = np.random.default_rng(12)
    check_model(optimized, [random_inputs(optimized.input_facts, rng) for _ in range(3)])
