"""MLPerf Tiny's own harness: ``tractile compile --project DIR --harness mlperf-tiny`` writes a
firmware implementing the benchmark's submitter API over the model and linking the benchmark's
command parser; built for the emulated Cortex-M4 and driven over its UART exactly as the
benchmark's runner drives a device, its results equal the interpreter's."""
from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

import tractile
from tractile.cli.main import main as cli_main
from tractile.compile.targets import board_for
from tractile.compile.targets.firmware import toolchain_available
from tractile.compile.targets.mlperf import default_api_path
from tractile.compile.targets.mlperf_runner import SerialRunner, expected_results, laps_us, parse_results
from tractile.compile.targets.verify import with_flavour

from ..conftest import shared_model


def needs_harness():
    board = board_for("cortex-m4")
    missing = toolchain_available(board)
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    api = default_api_path()
    if api is None:
        pytest.skip("MLPerf Tiny's API sources (../shared/mlperf_tiny_api) are absent")
    return board, api


def test_the_kws_firmware_answers_the_runner_like_the_interpreter(tmp_path):
    board, api = needs_harness()
    path = shared_model("mlperf_tiny/kws_dscnn_int8.tflite")
    sample_path = shared_model("mlperf_tiny/testdata/kws_dscnn_int8_sample.npy")
    assert cli_main(["compile", str(path), "--target", "cortex-m4", "--project", str(tmp_path), "--harness",
                     "mlperf-tiny", "--name", "kws"]) == 0
    makefile = (tmp_path / "Makefile").read_text()
    assert f"MLPERF_API ?= {api.resolve()}" in makefile and not (tmp_path / "api").exists(), \
        "the benchmark's sources are referenced by path, not copied"
    built = subprocess.run(["make"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    model = with_flavour(tractile.load(path), "micro")
    sample = np.load(sample_path).astype(np.int8).reshape(1, 49, 10, 1)
    noise = np.random.default_rng(26).integers(-128, 128, (1, 49, 10, 1)).astype(np.int8)
    in_q, out_q = model.input_fact(0).qparams, model.output_fact(0).qparams
    with SerialRunner(board, tmp_path / "firmware.elf", timeout=60) as dut:
        assert dut.banner[-1] == "m-init-done"
        assert dut.command("name") == ["m-name-dut-[unspecified]"]
        assert dut.command("profile")[1] == "m-model-[kws01]"
        for x in (sample, noise):
            loaded = dut.load(x.tobytes())
            assert loaded[0] == f"m-[Expecting {x.size} bytes]" and loaded[-1] == "m-load-done"
            inferred = dut.infer(1, 0)
            laps = laps_us(inferred)
            assert len(laps) == 2 and laps[1] > laps[0], inferred
            y = model.run([x])[0]
            want = expected_results("kws01", x, y, in_q, out_q)
            got = [line for line in dut.command("results") if line.startswith("m-results-")]
            assert got == [f"m-results-[{','.join(want)}]"]
            assert parse_results(inferred) == [float(v) for v in want]
            if x is sample:
                assert int(np.argmax(parse_results(got))) == 5, "the sample is 'on'"
        assert dut.command("bogus") == ["e-[Unknown command: bogus]"]


def test_the_ad01_score_is_the_mean_squared_error_the_reference_submission_prints(tmp_path):
    """ad01's results are one score (input against output, dequantized); the sine model stands in
    for the autoencoder (one value in, one out: a quick build)."""
    board, _ = needs_harness()
    path = shared_model("tflite/hello_world_int8.tflite")
    assert cli_main(["compile", str(path), "--target", "cortex-m4", "--project", str(tmp_path), "--harness",
                     "mlperf-tiny", "--harness-model", "ad01", "--stack", "4096"]) == 0
    built = subprocess.run(["make"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    model = with_flavour(tractile.load(path), "micro")
    in_q, out_q = model.input_fact(0).qparams, model.output_fact(0).qparams
    with SerialRunner(board, tmp_path / "firmware.elf", timeout=60) as dut:
        assert dut.command("profile")[1] == "m-model-[ad01]"
        scores = set()
        for value in (-128, -3, 127):
            x = np.array([[value]], np.int8)
            dut.load(x.tobytes())
            want = expected_results("ad01", x, model.run([x])[0], in_q, out_q)
            assert [line for line in dut.infer(1, 0) if line.startswith("m-results-")] == [f"m-results-[{want[0]}]"]
            scores.add(want[0])
        assert len(scores) == 3


def test_the_harness_refuses_what_the_runner_cannot_drive(tmp_path, capsys):
    needs_harness()
    path = str(shared_model("tflite/hello_world_int8.tflite"))
    base = ["compile", path, "--target", "cortex-m4", "--project", str(tmp_path), "--harness", "mlperf-tiny"]
    for extra, why in (([], "from its input shape \\(1, 1\\).*--harness-model kws01"),
                       (["--harness-model", "ad01", "--harness-api", str(tmp_path)], "--harness-api PATH"),
                       (["--build-system", "cmake"], "built by make")):
        assert cli_main([*base, *extra, "--stack", "4096"]) != 0
        assert re.search(why, capsys.readouterr().err.replace("\n", " ")), why
    assert cli_main(["compile", path, "--target", "cortex-m4", "--harness", "mlperf-tiny"]) != 0
    assert "--project DIR" in capsys.readouterr().err


def test_kws_on_the_cortex_m7_is_bit_exact_on_the_benchmark_sample(tmp_path):
    from tractile.compile.targets.verify import verify

    board = board_for("cortex-m7")
    if toolchain_available(board):
        pytest.skip(f"{', '.join(toolchain_available(board))} not installed")
    model = tractile.load(shared_model("mlperf_tiny/kws_dscnn_int8.tflite"))
    sample = np.load(shared_model("mlperf_tiny/testdata/kws_dscnn_int8_sample.npy")).astype(np.int8)
    report = verify(model, "cortex-m7", runs=1, inputs=[[sample.reshape(1, 49, 10, 1)]], opt="speed",
                    profile=False, folder=tmp_path)
    assert report["board"] == "mps2-an500" and report["verified"], report["first_difference"]
    assert report["ram_bytes"]["arena"] <= 10_816, "the RAM lead holds"
    # 7.75 M instructions when written; X-CUBE-AI's published H7A3 figure is 3.17 M cycles
    assert report["cycles_per_inference"] < 9_000_000
    assert int(np.argmax(with_flavour(model, "micro").run([sample.reshape(1, 49, 10, 1)])[0])) == 5
