"""Formats on the command line and onnxruntime's calling form: what users type first works or
says what to do."""
from __future__ import annotations

import numpy as np
import pytest

import tractile
from tests.conftest import shared_model
from tractile.cli.main import build_parser, main


def test_compare_refuses_an_engine_that_cannot_read_the_model(demo_model, capsys):
    sine = shared_model("tflite/hello_world_float.tflite")
    assert main(["compare", str(sine), "--with", "onnxruntime"]) == 2
    err = capsys.readouterr().err
    assert "onnxruntime runs ONNX models only" in err and "use --with tflite" in err, err
    assert main(["compare", str(demo_model), "-i", "1,1,28,28,f32", "--with", "tflite"]) == 2
    err = capsys.readouterr().err
    assert "tflite runs TFLite models only" in err and "use --with onnxruntime" in err, err


def test_help_texts_name_every_format(capsys):
    parser = build_parser()
    assert "TFLite" in parser.description and "ONNX" in parser.description
    for command in ("run", "dump", "compile", "batch", "profile", "compare"):
        with pytest.raises(SystemExit):
            parser.parse_args([command, "--help"])
        text = capsys.readouterr().out
        assert ".tflite" in text and ".onnx" in text, (command, text)


def test_run_accepts_onnxruntime_form(demo_model):
    model = tractile.load(demo_model, inputs=["1,1,28,28,f32"])
    x = np.random.default_rng(0).standard_normal((1, 1, 28, 28)).astype(np.float32)
    name = model.input_names()[0]
    by_name = model.run({name: x})
    everything = model.run(None, {name: x})
    assert isinstance(everything, list) and len(everything) == len(by_name)
    for produced, expected in zip(everything, by_name.values()):
        np.testing.assert_array_equal(produced, expected)
    only = model.run([model.output_names()[0]], {name: x})
    np.testing.assert_array_equal(only[0], by_name[model.output_names()[0]])
    with pytest.raises(tractile.TractileError, match="no output named 'nope'"):
        model.run(["nope"], {name: x})
    with pytest.raises(tractile.TractileError, match="feed must be a dict"):
        model.run(None, [x])
    with pytest.raises(tractile.TractileError, match="output_names must be a list"):
        model.run("logits", {name: x})
