"""int32 accumulators that leave the int32 range: TFLite sums SVDF and FULLY_CONNECTED in int32,
which wraps modulo 2^32; the interpreter wraps the same way, and the compiled C (unsigned
arithmetic, no signed overflow) matches both, where the compiler used to refuse the node."""
from __future__ import annotations

import numpy as np
import pytest

from tractile.datum import DatumType
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.writer import write_model
from tractile.ops.quantized import dense as dense_module
from tractile.ops.quantized import svdf as svdf_module
from tractile.ops.svdf import Svdf

from ..tflite.builder import GraphBuilder, q
from ..tflite.oracle import micro_interpreter, reference_interpreter, run_micro, run_reference
from .harness import assert_builds_without_warnings, assert_same_outputs, compiled, random_input


def svdf_bytes(memory: str) -> bytes:
    """An int8 SVDF whose time reduction leaves int32: TFLite's form (int16 memory and time
    weights, whose products reach 2^30) or TFLite Micro's (int8 memory with a zero point, int8
    time weights, biases near the ends of the int32 range)."""
    rng = np.random.default_rng(5)
    batch, depth, filters, frames, rank = 2, 16, 8, 8, 2
    g = GraphBuilder()
    x = g.input("x", "i8", (batch, depth), q(0.05, -3))
    features = g.const("features", rng.integers(-127, 128, (filters, depth)), "i8", q(0.02))
    if memory == "i16":
        times = g.const("times", rng.integers(-32767, 32768, (filters, frames)), "i16", q(0.001))
        state_q, time_scale = q(0.002), 0.001
        bias = rng.integers(-(2 ** 31), 2 ** 31, filters // rank)
    else:
        times = g.const("times", rng.integers(-127, 128, (filters, frames)), "i8", q(0.01))
        state_q, time_scale = q(0.05, -5), 0.01
        bias = np.array([2 ** 31 - 1500, -(2 ** 31) + 1500, 2 ** 31 - 4000, -(2 ** 31) + 800])
    bias_wire = g.const("bias", bias, "i32", q(float(state_q.scale[0]) * time_scale))
    initial = np.full((batch, frames * filters), state_q.zero_point[0], DatumType(memory).np)
    # the output step: an accumulator of about 2^31 lands near the int8 limits
    out_scale = float(state_q.scale[0]) * time_scale / (100 / 2 ** 31)
    op = Svdf(rank=rank, activation="RELU", initial_state=initial, state_q=state_q,  # TFLite: int8 needs RELU
              quant=q(out_scale))
    y = g.op("svdf", op, [x, features, times, bias_wire])
    return write_model(g.outputs(y))


def fc_bytes() -> bytes:
    """An int8 FULLY_CONNECTED whose biases sit near the ends of the int32 range."""
    rng = np.random.default_rng(8)
    depth, units = 32, 6
    g = GraphBuilder()
    x = g.input("x", "i8", (3, depth), q(0.5, -3))
    w = g.const("w", rng.integers(-127, 128, (units, depth)), "i8", q(0.01))
    bias = np.array([2 ** 31 - 20_000, -(2 ** 31) + 20_000] * 3)
    b = g.const("b", bias, "i32", q(0.005))
    y = g.dense("fc", x, w, b, q(0.5 * 0.01 * 2 ** 31 / 100))
    return write_model(g.outputs(y))


def oracle_outputs(data: bytes, inputs: list, micro: bool) -> list[np.ndarray]:
    """TFLite's outputs (TFLite Micro's for int8 SVDF memories), one interpreter over the runs."""
    if micro:
        interpreter = micro_interpreter(data)
        return [run_micro(interpreter, [x])[0] for x in inputs]
    interpreter = reference_interpreter(data)
    return [run_reference(interpreter, [x])[0] for x in inputs]


def interpreter_outputs(model, inputs: list) -> list[np.ndarray]:
    state = model.state()
    return [state.run([x])[0] for x in inputs]


def check_wrapping(data: bytes, flavour: str, micro: bool, module, compile_cache, monkeypatch, tmp_path, name: str):
    model = load_tflite(data, flavour=flavour).into_optimized()
    rng = np.random.default_rng(2)
    inputs = [random_input(model.input_facts[0], rng) for _ in range(12)]
    expected = oracle_outputs(data, inputs, micro)
    ours = interpreter_outputs(model, inputs)
    for index, (got, want) in enumerate(zip(ours, expected)):
        np.testing.assert_array_equal(got, want, err_msg=f"run {index}: the interpreter differs from TFLite")
    cm = compiled(model, compile_cache, name=name)
    assert_builds_without_warnings(cm.source, tmp_path)
    for index, (x, want) in enumerate(zip(inputs, expected)):
        assert_same_outputs([want], cm.run([x]), 0, 0, what=f"compiled run {index}")
    # the inputs do make the sums wrap: without wrapping, the outputs would differ
    monkeypatch.setattr(module, "wrap32", lambda values: values)
    unwrapped = interpreter_outputs(load_tflite(data, flavour=flavour).into_optimized(), inputs)
    assert any(not np.array_equal(a, b) for a, b in zip(unwrapped, expected))


@pytest.mark.parametrize("memory", ["i16", "i8"])
def test_svdf_sums_wrap_as_in_tflite(memory, compile_cache, monkeypatch, tmp_path):
    micro = memory == "i8"  # int8 memories are TFLite Micro's (what keyword models use)
    check_wrapping(svdf_bytes(memory), "micro" if micro else "reference", micro, svdf_module, compile_cache,
                   monkeypatch, tmp_path, f"svdf_wrap_{memory}")


@pytest.mark.parametrize("flavour", ["reference", "micro"])
def test_fully_connected_sums_wrap_as_in_tflite(flavour, compile_cache, monkeypatch, tmp_path):
    check_wrapping(fc_bytes(), flavour, flavour == "micro", dense_module, compile_cache, monkeypatch, tmp_path,
                   f"fc_wrap_{flavour}")
