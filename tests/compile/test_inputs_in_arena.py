"""Inputs planned in the arena (``inputs_in_arena``): the same outputs bit for bit as the default
plan, whether the input is written at ``NAME_INPUTi_IN(ctx)`` or passed from another buffer;
less RAM than TFLite Micro's arena alone for micro_speech; bit-exact on the emulated Cortex-M4."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import tractile
from tractile.compile import generate
from tractile.compile.program import ARENA

from ..conftest import shared_model
from .harness import assert_same_outputs, compiled, random_input

MODELS = ["hello_world_int8", "hello_world_float", "microflow_sine", "micro_speech_quantized", "person_detect",
          "mnist_lstm_int8", "mnist_lstm_float", "keyword_scrambled_8bit"]
RUNS = {"person_detect": 8}
#: TFLite Micro's planned activation arena for micro_speech, inputs and outputs included
TFLM_SPEECH_ARENA = 5_968


def run_at_accessor(cm, state, values: list[np.ndarray]) -> list[np.ndarray]:
    """One invoke with every input written where the plan keeps it in ``state``'s arena and that
    address passed (the ``NAME_INPUTi_IN(ctx)`` way: invoke copies nothing)."""
    context = state._memory.view(np.uint8)
    addresses = []
    for tensor, value in zip(cm.source.program.inputs, values):
        assert tensor.storage == ARENA and tensor.offset is not None
        data = np.ascontiguousarray(value, dtype=tensor.dtype.np).view(np.uint8).reshape(-1)
        context[tensor.offset:tensor.offset + data.size] = data
        addresses.append(state._context + tensor.offset)
    outputs = [np.empty(shape, dtype) for dtype, shape in cm._outputs]
    assert cm._invoke(state._context, *addresses, *[o.ctypes.data for o in outputs]) == 0
    return outputs


@pytest.mark.parametrize("name", MODELS)
def test_inputs_in_arena_same_outputs_both_ways(name, compile_cache):
    model = tractile.load(shared_model(f"tflite/{name}.tflite"))
    default = compiled(model, compile_cache, name=name)
    planned = compiled(model, compile_cache, name=name, inputs_in_arena=True)
    header = planned.source.header
    for index, tensor in enumerate(planned.source.program.inputs):
        assert f"#define {name.upper()}_INPUT{index}_IN(ctx) " in header
        assert f"+ {tensor.offset}))" in header
    assert "_IN(ctx)" not in default.source.header
    assert planned.report["io_bytes"] == sum(t.nbytes for t in planned.source.program.outputs)
    assert planned.report["arena_bytes"] >= max(t.nbytes for t in planned.source.program.inputs)
    by_copy, at_accessor, reference = planned.state(), planned.state(), default.state()
    rng = np.random.default_rng(len(name) + 7)
    for run in range(RUNS.get(name, 40)):
        values = [random_input(fact, rng) for fact in default.input_facts]
        want = reference.run(values)
        assert_same_outputs(want, by_copy.run(values), rtol=0, atol=0, what=f"{name} copied in, run {run}")
        got = run_at_accessor(planned, at_accessor, values)
        for index, (w, g) in enumerate(zip(want, got)):
            assert np.array_equal(w, g, equal_nan=w.dtype.kind == "f"), f"{name} at the accessor, run {run}, {index}"


def test_caller_buffer_inside_the_arena_is_moved_safely(compile_cache):
    """A caller buffer overlapping the input's arena slot (shifted by a few bytes) is memmoved."""
    model = tractile.load(shared_model("tflite/micro_speech_quantized.tflite"))
    planned = compiled(model, compile_cache, name="speech_moved", inputs_in_arena=True)
    reference = compiled(model, compile_cache, name="speech_moved").state()
    tensor = planned.source.program.inputs[0]
    rng = np.random.default_rng(3)
    for shift in (-5, 5):
        state = planned.state()
        value = random_input(planned.input_facts[0], rng)
        context = state._memory.view(np.uint8)
        start = tensor.offset + shift
        context[start:start + tensor.nbytes] = value.view(np.uint8).reshape(-1)
        output = np.empty(tuple(planned.output_facts[0].shape), planned.output_facts[0].dtype.np)
        assert planned._invoke(state._context, ctypes.c_void_p(state._context + start), output.ctypes.data) == 0
        assert np.array_equal(output, reference.run([value])[0]), f"shift {shift}"


def test_micro_speech_ram_below_tflite_micro_arena():
    model = tractile.load(shared_model("tflite/micro_speech_quantized.tflite"))
    default = generate(model, "speech", target="cortex-m4").report
    report = generate(model, "speech", target="cortex-m4", inputs_in_arena=True).report
    assert report["inputs_in_arena"] and not default["inputs_in_arena"]
    planned = report["arena_bytes"] + report["state_bytes"] + report["io_bytes"]
    assert planned < TFLM_SPEECH_ARENA, f"arena {report['arena_bytes']} B + outputs {report['io_bytes']} B"
    assert planned < default["arena_bytes"] + default["state_bytes"] + default["io_bytes"]


def test_verify_on_cortex_m4_with_inputs_in_arena(tmp_path):
    from tractile.compile.targets import board_for
    from tractile.compile.targets.firmware import toolchain_available
    from tractile.compile.targets.verify import verify

    missing = toolchain_available(board_for("cortex-m4", "mps2-an386"))
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    model = tractile.load(shared_model("tflite/micro_speech_quantized.tflite"))
    report = verify(model, "cortex-m4", board="mps2-an386", runs=3, inputs_in_arena=True, folder=tmp_path,
                    profile=False)
    assert report["verified"], report["first_difference"]
    main = (tmp_path / "main.c").read_text()
    assert "MODEL_INPUT0_IN(&ctx)" in main and "static int8_t in0[" not in main
    ram = report["ram_bytes"]
    assert ram["io"] == 4 and ram["total"] == ram["context"] + 4 + ram["stack_peak"]
    assert ram["total"] < TFLM_SPEECH_ARENA, ram
