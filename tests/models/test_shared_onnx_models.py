"""Real ONNX models from ../shared/models: load, analyse, and match their recorded outputs."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import tractile  # noqa: E402
from tractile.formats.onnx import load_onnx  # noqa: E402

from ..conftest import run_onnxruntime, shared_model  # noqa: E402


def recorded(folder) -> tuple[str, dict]:
    """The model path and io.npz's arrays by name."""
    with np.load(folder / "io.npz") as data:
        return str(folder / "model.onnx"), {name: data[name] for name in data.files}


def test_byte_bidirectional_lstm_matches_its_recorded_output():
    """A byte embedding (Gather), two bidirectional LSTMs and a MatMul, on uint8[2,58]."""
    path, io = recorded(shared_model("onnx/byte_sb_bidi_lstm"))
    model = tractile.load(path)
    assert [n.op.name for n in model.nodes].count("LSTM") == 2
    output_fact = str(model.outlet_fact(model.outputs[0]))
    assert output_fact == "batch,length,2,f32"
    (got,) = model.plan().state(check_facts=True).run([io["input"]])
    expected = io["Add_26"]
    assert got.shape == expected.shape == (2, 58, 2)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_byte_bidirectional_lstm_analyses_with_symbolic_batch_and_length():
    path, io = recorded(shared_model("onnx/byte_sb_bidi_lstm"))
    inference = load_onnx(path)
    inference.analyse()
    typed = inference.into_typed()
    lstm_outputs = [[str(o.fact) for o in n.outputs] for n in typed.nodes if n.op.name == "LSTM"]
    assert lstm_outputs == [["length,2,batch,128,f32", "2,batch,128,f32", "2,batch,128,f32"],
                            ["length,2,batch,64,f32", "2,batch,64,f32", "2,batch,64,f32"]]
    shorter = io["input"][1:, :20]
    (got,) = typed.into_optimized().plan().state(check_facts=True).run([shorter])
    (expected,) = run_onnxruntime(onnx.load(path), [shorter])
    assert got.shape == (1, 20, 2)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
