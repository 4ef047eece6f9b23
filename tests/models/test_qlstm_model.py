"""The shared quantized LSTM (a Scan whose body does QLinearConv and Quantize/DequantizeLinear)."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import tractile  # noqa: E402
from tractile import TDim, UnsupportedOpError  # noqa: E402

from ..conftest import run_onnxruntime, shared_model  # noqa: E402

FOLDER = "onnx/qlstm_3-2-3_T3_S1"


def load_or_skip(path: str):
    try:
        return tractile.load(path)
    except UnsupportedOpError as error:
        missing = ", ".join(sorted({op for _, op, _, _ in error.ops})) or str(error).splitlines()[0]
        pytest.skip(f"the qlstm model needs ops tractile lacks for now: {missing}")


def recorded():
    folder = shared_model(FOLDER)
    with np.load(folder / "io.npz") as data:
        return str(folder / "model.onnx"), data["input"], data["output"]


def test_qlstm_matches_its_recorded_output():
    path, x, expected = recorded()
    model = load_or_skip(path)
    # the first input dim is declared -1: it stays symbolic, and the Scan iterates over it
    (dim, width) = model.input_fact(0).shape
    assert isinstance(dim, TDim) and width == 3
    assert any(n.op.name == "Scan" for n in model.nodes)
    (got,) = model.plan().state(check_facts=True).run([x])
    assert got.shape == expected.shape == (3, 3)
    np.testing.assert_array_equal(got, expected)


def test_qlstm_runs_on_other_lengths_like_onnxruntime():
    path, x, _ = recorded()
    model = load_or_skip(path)
    longer = np.concatenate([x, x[::-1], x * 0.5]).astype(np.float32)
    for steps in (1, 5, 9):
        (got,) = model.run([longer[:steps]])
        (reference,) = run_onnxruntime(onnx.load(path), [longer[:steps]])
        assert got.shape == (steps, 3)
        np.testing.assert_array_equal(got, reference)
