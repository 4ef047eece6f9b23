"""The keyword spotting example (examples/keyword_spotting): the compiled micro_speech front end,
streamed by 320-sample hops, and the compiled keyword model in one Cortex-M4 firmware, run in
QEMU on the shared recordings: after each recording's 49 frames the label TFLite Micro's
pipeline gives (yes, no, and its labels for noise and silence)."""
from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import shared_model

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "keyword_spotting" / "build.py"


def test_keyword_spotting_firmware_gives_tflite_micros_labels(tmp_path):
    pytest.importorskip("tflite_micro")
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    models = shared_model("tflite/audio_preprocessor_int8.tflite").parent
    spec = importlib.util.spec_from_file_location("keyword_spotting_build", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example  # its dataclass looks its module up
    spec.loader.exec_module(example)
    recordings = [example.read_wav(models / "testdata" / f"{name}.wav") for name in example.RECORDINGS]
    front, speech = example.sources(models)
    result = example.run(example.build(tmp_path, "mps2-an386", front, speech, recordings, "speed"), "mps2-an386")
    finals = [result.labels[index][-1] for index in range(len(recordings))]
    assert [frames for frames, _, _ in finals] == [49] * 4
    assert [label for _, label, _ in finals] == example.tflite_micro_labels(models, recordings)
    assert [label for _, label, _ in finals][:2] == ["yes", "no"]
    assert result.hops == 200 and result.runs == 4 * 13
    per_hop = result.front_ticks * result.per_tick / result.hops
    assert 20_000 < per_hop < 0.25 * example.BUDGET_CYCLES
