"""Honest flash figures: ``--verify`` reports the deployable firmware apart from the verification
inputs it bakes in, for -O2 and -Os; the figure does not move with the number of inputs."""
from __future__ import annotations

import pytest

import tractile
from tractile.compile.targets import board_for
from tractile.compile.targets.firmware import toolchain_available
from tractile.compile.targets.verify import verify

from ..conftest import shared_model


def test_the_deployable_flash_does_not_count_the_inputs(tmp_path):
    board = board_for("cortex-m4")
    if toolchain_available(board):
        pytest.skip(f"{', '.join(toolchain_available(board))} not installed")
    model = tractile.load(shared_model("tflite/micro_speech_quantized.tflite"))
    # two inputs at least: with one, the compiler drops main's loop over the runs (other code)
    few = verify(model, "cortex-m4", runs=2, folder=tmp_path / "few", profile=False, both_opts=True)
    many = verify(model, "cortex-m4", runs=5, folder=tmp_path / "many", profile=False)
    assert few["verified"] and many["verified"]
    one = 49 * 40  # one int8 spectrogram
    assert few["flash_bytes"]["inputs"] == 2 * one and many["flash_bytes"]["inputs"] == 5 * one
    assert many["flash_bytes"]["firmware"] - few["flash_bytes"]["firmware"] >= 3 * one
    # what remains is main's loop over the runs compiled for another count, and alignment
    assert abs(many["flash_bytes"]["deployable"] - few["flash_bytes"]["deployable"]) <= 32
    by_opt = few["flash_bytes"]["deployable_by_opt"]
    assert by_opt["-Os"] == few["flash_bytes"]["deployable"], "the verified build (-Os, no profiling) itself"
    assert few["flash_bytes"]["model"] < by_opt["-Os"] < by_opt["-O2"]
