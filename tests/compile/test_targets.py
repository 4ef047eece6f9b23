"""Microcontroller targets: firmware built with the real tool chains, run in QEMU and simavr,
outputs bit for bit against the interpreter, sizes and counts reported."""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.cli.main import main as cli_main
from tractile.compile.targets import board_for
from tractile.compile.targets.firmware import parse_console, toolchain_available
from tractile.compile.targets.verify import _outputs_match, verify, with_flavour
from tractile.errors import TractileError
from tractile.formats.tflite import load_tflite

from ..conftest import shared_model

REPORT_KEYS = {"target", "verified", "inputs_checked", "flash_bytes", "ram_bytes", "cycles_per_inference"}


def needs_board(target: str, board: str | None = None):
    chosen = board_for(target, board)
    missing = toolchain_available(chosen)
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (make test installs them with apt-get as root)")
    return chosen


@pytest.mark.parametrize("target,board", [("cortex-m0", None), ("cortex-m3", "lm3s6965evb"),
                                          ("cortex-m3", None), ("cortex-m4", None), ("cortex-m7", None),
                                          ("avr", None)])
def test_sine_int8_is_bit_exact_on_every_board(target, board, tmp_path):
    needs_board(target, board)
    model = tractile.load(shared_model("tflite/hello_world_int8.tflite"))
    every = [[np.array([[v]], np.int8)] for v in range(-128, 128, 3)]
    report = verify(model, target, board=board, runs=10, inputs=every, folder=tmp_path)
    assert REPORT_KEYS <= set(report)
    assert report["verified"], report["first_difference"]
    assert report["inputs_checked"] == len(every) + 10
    assert 0 < report["flash_bytes"]["model"] < report["flash_bytes"]["firmware"]
    code = report["code_bytes"]  # functions by kernel header, the rest (invoke, init, reset) in model.c
    assert code["model.c"] > 0 and set(code) <= {"model.c", "tl_common.h", "tl_fully_connected.h"}
    assert sum(code.values()) < report["flash_bytes"]["model"]
    ram = report["ram_bytes"]
    assert ram["arena"] == 32 and ram["state"] == 0 and ram["context"] >= 32 and ram["stack_peak"] > 0
    assert report["cycles_per_inference"] > 0
    assert sum(layer["count"] for layer in report["layers"]) <= report["cycles_per_inference"] * 1.2


def test_sine_models_on_the_atmega328p_beat_microflow(tmp_path):
    needs_board("avr")
    for name in ("hello_world_int8", "microflow_sine"):
        report = verify(tractile.load(shared_model(f"tflite/{name}.tflite")), "avr", runs=30, opt="size",
                        folder=tmp_path / name)
        assert report["verified"], report["first_difference"]
        assert report["flash_bytes"]["firmware"] < 13_600, "MicroFlow: 13.6 kB of flash"
        assert report["ram_bytes"]["firmware"] < 1_700, "MicroFlow: 1.7 kB of RAM"


def test_microflow_sine_expectation_holds_on_the_device(tmp_path):
    needs_board("cortex-m3", "lm3s6965evb")
    model = tractile.load(shared_model("tflite/microflow_sine.tflite"))
    q = model.input_fact(0).qparams
    x = np.array([[round(0.5 / q.scale[0]) + q.zero_point[0]]], np.int8)
    report = verify(model, "cortex-m3", board="lm3s6965evb", runs=0, inputs=[[x]], folder=tmp_path)
    assert report["verified"]
    micro = with_flavour(model, "micro")
    assert int(micro.run([x])[0][0, 0]) == 57


def test_float_sine_on_the_cortex_m4_fpu(tmp_path):
    needs_board("cortex-m4")
    model = tractile.load(shared_model("tflite/hello_world_float.tflite"))
    xs = [[np.array([[v]], np.float32)] for v in np.linspace(0, 2 * np.pi, 25, dtype=np.float32)]
    report = verify(model, "cortex-m4", runs=5, inputs=xs, folder=tmp_path)
    assert report["verified"], report["first_difference"]


def big_dense_model():
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((256, 512)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "big",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_a_model_too_big_for_the_board_is_refused_with_its_sizes(tmp_path):
    model = tractile.load(big_dense_model())
    with pytest.raises(TractileError, match=r"does not fit atmega328p.*524288 B of flash, the board has 32768 B"):
        verify(model, "avr", folder=tmp_path)
    with pytest.raises(TractileError, match=r"does not fit microbit.*524288 B of flash, the board has 262144 B"):
        verify(model, "cortex-m0", folder=tmp_path)


def test_a_differing_output_is_reported_with_its_place():
    board = board_for("cortex-m3")
    console = parse_console("o 0 0 0405\nt 10\nk 5\ns 4\nc 8\ne\n", board)
    expected = [np.array([[4, 6]], np.int8)]

    class Tensor:
        pass

    ok, why = _outputs_match(expected, console.outputs[0], [Tensor()])
    assert not ok and why == "output 0[1]: device 5, interpreter 6 (1 of 2 values differ)"
    with pytest.raises(TractileError, match="stopped before its end"):
        parse_console("o 0 0 04\n", board)


def test_cli_verify_prints_json_and_exit_status(capsys, tmp_path):
    needs_board("cortex-m3")
    path = shared_model("tflite/hello_world_int8.tflite")
    status = cli_main(["compile", str(path), "--target", "cortex-m3", "--verify", "--runs", "5", "--json",
                       "-o", str(tmp_path / "fw")])
    report = json.loads(capsys.readouterr().out)
    assert status == 0 and report["verified"] and report["board"] == "mps2-an385"
    assert set(report["ram_bytes"]) >= {"arena", "state", "context", "stack_peak", "total"}
    assert (tmp_path / "fw" / "firmware.elf").exists()


@pytest.mark.parametrize("target", ["cortex-m3", "avr"])
def test_example_project_builds_and_prints_the_interpreters_outputs(target, tmp_path):
    needs_board(target)
    path = shared_model("tflite/hello_world_int8.tflite")
    project = tmp_path / "project"
    assert cli_main(["compile", str(path), "--target", target, "--project", str(project), "--seed", "3"]) == 0
    assert {"Makefile", "main.c", "hello_world_int8.c", "hello_world_int8.h", "tl_common.h"} <= \
        {p.name for p in project.iterdir()}
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(["make", "run"], cwd=project, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    printed = [line for line in (done.stdout + done.stderr).replace(".\n", "\n").splitlines()
               if "StatefulPartitionedCall" in line][0]
    value = int(printed.split(":")[-1].split()[0].rstrip("."))
    rng = np.random.default_rng(3)
    sample = rng.integers(-128, 127, (1, 1), endpoint=True).astype(np.int8)
    micro = with_flavour(load_tflite(path).into_optimized(), "micro")
    assert value == int(micro.run([sample])[0][0, 0])


def test_int8_dense_layer_on_the_cortex_m4_takes_at_most_four_instructions_per_mac(tmp_path):
    """QEMU counts instructions deterministically (-icount): a count, not a timing."""
    needs_board("cortex-m4")
    from ..tflite.builder import GraphBuilder
    from .harness import q

    rng = np.random.default_rng(0)
    g = GraphBuilder()
    x = g.input("x", "i8", (1, 512), q(0.05, -3))
    w = g.const("w", rng.integers(-127, 128, (32, 512)), "i8", q(0.01))
    b = g.const("b", rng.integers(-1000, 1000, (32,)), "i32", q(0.0005))
    g.model.outputs = [g.dense("dense", x, w, b, quant=q(0.2, 5), flavour="micro")]
    report = verify(g.model, "cortex-m4", runs=3, opt="speed", folder=tmp_path)
    assert report["verified"]
    layer = report["layers"][0]
    assert layer["macs"] == 512 * 32 and layer["per_mac"] <= 4.0


#: TFLite Micro's planned arena (its recording allocator), which also holds the inputs and outputs
TFLM_ARENA = {"micro_speech_quantized": 5_968, "person_detect": 55_296, "mnist_lstm_int8": 1_536}


@pytest.mark.parametrize("name,target,board", [
    ("micro_speech_quantized", "cortex-m3", "lm3s6965evb"), ("keyword_scrambled_8bit", "cortex-m3", "lm3s6965evb"),
    ("micro_speech_quantized", "cortex-m4", None), ("person_detect", "cortex-m4", None),
    ("mnist_lstm_int8", "cortex-m4", None), ("keyword_scrambled_8bit", "cortex-m7", None)])
def test_shared_models_verify_bit_exact_on_cortex_m(name, target, board, tmp_path):
    needs_board(target, board)
    model = tractile.load(shared_model(f"tflite/{name}.tflite"))
    report = verify(model, target, board=board, runs=3, folder=tmp_path)
    assert report["verified"], report["first_difference"]
    assert report["inputs_checked"] == 3
    ram = report["ram_bytes"]
    assert ram["context"] >= ram["arena"] + ram["state"] and ram["stack_peak"] > 0
    if name in TFLM_ARENA:
        assert ram["context"] + ram["stack_peak"] < TFLM_ARENA[name]
        if name == "person_detect":  # with its input and output buffers too
            assert ram["total"] < TFLM_ARENA[name]
    assert report["cycles_per_inference"] > 0 and report["flash_bytes"]["model"] > 0


def integer_delay_line():
    """An int8 stream mixed with copies of itself 3 and 5 frames late (wrapping Add and Sub, Max):
    pulsed, its state is two int8 ring buffers."""
    ints = lambda name, values: numpy_helper.from_array(np.array(values, np.int64), name)  # noqa: E731
    nodes = [helper.make_node("Pad", ["x", "p3"], ["x3p"]),
             helper.make_node("Slice", ["x3p", "s0", "e3", "a2"], ["x3"]),
             helper.make_node("Pad", ["x", "p5"], ["x5p"]),
             helper.make_node("Slice", ["x5p", "s0", "e5", "a2"], ["x5"]),
             helper.make_node("Add", ["x", "x3"], ["sum"]), helper.make_node("Sub", ["x", "x5"], ["diff"]),
             helper.make_node("Max", ["sum", "diff"], ["top"]),
             helper.make_node("Concat", ["top", "diff"], ["y"], axis=1)]
    graph = helper.make_graph(nodes, "int_delay", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 4, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, None)],
                              [ints("p3", [0, 0, 3, 0, 0, 0]), ints("p5", [0, 0, 5, 0, 0, 0]), ints("s0", [0]),
                               ints("e3", [-3]), ints("e5", [-5]), ints("a2", [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("pulse", [1, 4])
def test_a_pulsed_integer_model_verifies_chunk_by_chunk_on_the_device(pulse, tmp_path):
    needs_board("cortex-m3", "lm3s6965evb")
    model = tractile.load(integer_delay_line())
    pulsed = model.pulse("T", pulse)
    x = np.random.default_rng(pulse).integers(-128, 128, (1, 4, 40)).astype(np.int8)
    chunks = [[x[:, :, t:t + pulse]] for t in range(0, 40, pulse)]
    report = verify(pulsed.model, "cortex-m3", board="lm3s6965evb", runs=0, inputs=chunks, folder=tmp_path)
    assert report["verified"], report["first_difference"]
    assert report["inputs_checked"] == len(chunks)
    assert report["ram_bytes"]["state"] >= 4 * (3 + 5), "the ring buffers keep 3 and 5 frames of 4 channels"
    stream = pulsed.start()  # the interpreter's pushes, which the device matched, equal the batch model
    pushed = np.concatenate([stream.push(chunk)[0] for chunk in chunks], axis=2)[:, :, pulsed.delay:]
    np.testing.assert_array_equal(pushed, model.run([x])[0][:, :, :pushed.shape[2]])


def test_cli_verifies_a_pulsed_model(tmp_path, capsys):
    needs_board("cortex-m3", "lm3s6965evb")
    import onnx

    path = tmp_path / "delay.onnx"
    onnx.save(integer_delay_line(), path)
    status = cli_main(["compile", str(path), "-i", "1,4,T,i8", "--pulse", "2", "--target", "cortex-m3", "--board",
                       "lm3s6965evb", "--verify", "--runs", "8", "--json", "-o", str(tmp_path / "out")])
    report = json.loads(capsys.readouterr().out)
    assert status == 0 and report["verified"] and report["ram_bytes"]["state"] > 0


def test_a_firmware_too_big_for_the_board_says_by_how_much(tmp_path):
    needs_board("cortex-m3", "lm3s6965evb")
    model = tractile.load(shared_model("tflite/person_detect.tflite"))
    with pytest.raises(TractileError, match=r"does not fit lm3s6965evb: its \w+ overflows by \d+ B \(the model alone"):
        verify(model, "cortex-m3", board="lm3s6965evb", runs=6, folder=tmp_path)


def test_a_model_with_several_outputs_verifies_each_of_them(tmp_path):
    """The console numbers the hex lines of a run across its outputs: a second output must
    not overwrite the first's lines (it did when each output restarted the count)."""
    needs_board("cortex-m3", "lm3s6965evb")
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"])]
    graph = helper.make_graph(nodes, "two", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 60])],
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])
    model = tractile.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    report = verify(model, "cortex-m3", board="lm3s6965evb", runs=3, folder=tmp_path)
    assert report["verified"], report["first_difference"]
