"""``tractile convert``: the file it writes loads in TFLite and gives tractile's outputs."""
from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import shared_model
from tests.tflite.oracle import random_inputs, reference_interpreter, run_reference
from tractile.cli.main import main
from tractile.formats.tflite import load_tflite


@pytest.mark.parametrize("optimize", [False, True])
def test_convert_person_detect(tmp_path, optimize, capsys):
    source = shared_model("tflite/person_detect.tflite")
    target = tmp_path / "person_detect.tflite"
    assert main(["convert", str(source), str(target)] + (["--optimize"] if optimize else [])) == 0
    assert "operators" in capsys.readouterr().out
    model = load_tflite(source).into_optimized()
    interpreter = reference_interpreter(target.read_bytes())
    rng = np.random.default_rng(30)
    for _ in range(3):
        inputs = random_inputs(model.input_facts, rng)
        np.testing.assert_array_equal(model.run(inputs)[0], run_reference(interpreter, inputs)[0])


def test_convert_refuses_what_it_cannot_read_or_write(tmp_path, capsys, demo_model):
    source = shared_model("tflite/person_detect.tflite")
    assert main(["convert", str(demo_model), str(tmp_path / "out.tflite")]) == 2
    assert "is an ONNX model: convert writes TFLite models" in capsys.readouterr().err
    for wrong in ("out.onnx", "out"):
        assert main(["convert", str(source), str(tmp_path / wrong)]) == 2
        assert "convert writes TFLite FlatBuffers only" in capsys.readouterr().err
        assert not (tmp_path / wrong).exists()
