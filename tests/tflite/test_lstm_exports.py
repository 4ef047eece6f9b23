"""Integer LSTMs as TensorFlow's converter emits them from Keras, bit-exact with TFLite's
reference kernels (reference flavour) and TFLite Micro (micro flavour).

The models are converted at test time (``tests/tflite/lstm_converter.py``, in one child
process for the session: a crash inside TensorFlow cannot end the session). Each model
runs many random input sets through one interpreter and one tractile state, so the LSTM
states (variable tensors) carry over between invocations.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.tflite.oracle import micro_interpreter, reference_interpreter, run_micro, run_reference
from tractile.formats.tflite import load_tflite

# found, not imported: TensorFlow only runs in the converter's child process
if importlib.util.find_spec("tensorflow") is None or importlib.util.find_spec("tf_keras") is None:
    pytest.skip("the converter needs tensorflow-cpu and tf-keras", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
RUNS = 24
#: what the converter emits for Keras LSTMs: 8x8_16 (int8 activations, int16 cell state).
#: (It refuses 16x8 for UNIDIRECTIONAL_SEQUENCE_LSTM: "Quantization to 16x8-bit not yet
#: supported"; Keras' LSTM has no peepholes, projection, layer norm or CIFG.)
SPECS = [
    # two stacked LSTMs with return_sequences, inputs far from zero (nonzero input and state
    # zero points), then a FULLY_CONNECTED + LOGISTIC mask
    dict(name="stacked_mask", steps=5, features=6, layers=[8, 6], return_sequences=True,
         head="sigmoid", head_units=4, seed=3, input_offset=0.7, input_scale=2.0),
    # time-major input, the last step only, a Dense head; a cell state scale of 2^-14
    # (TFLite Micro's tanh then shifts its input right)
    dict(name="time_major_last", steps=5, features=3, layers=[4], return_sequences=False, seed=4,
         time_major=True, head="dense", head_units=2),
    # a Keras Bidirectional LSTM: two UNIDIRECTIONAL_SEQUENCE_LSTMs, the backward one between
    # two REVERSE_V2 along time, outputs concatenated
    dict(name="bidirectional", steps=4, features=3, layers=[5], return_sequences=True, seed=6,
         bidirectional=True, input_offset=-0.4),
]
#: LSTM ops per model
LSTMS = {"stacked_mask": 2, "time_major_last": 1, "bidirectional": 2}


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("lstm_exports")
    specs = [dict(spec, mode="int8") for spec in SPECS]
    (folder / "specs.json").write_text(json.dumps(specs))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "tests.tflite.lstm_converter", str(folder / "specs.json"),
                           str(folder)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the converter failed ({done.returncode}):\n{done.stderr[-3000:]}"
    return {spec["name"]: (folder / f"{spec['name']}.tflite").read_bytes() for spec in specs}


def _lstm_ops(data: bytes) -> list:
    model = load_tflite(data)
    return [node.op for node in model.nodes if type(node.op).__name__ == "ProjectedLstm"]


def _inputs(data: bytes, rng: np.random.Generator) -> list[np.ndarray]:
    detail = reference_interpreter(data).get_input_details()[0]
    info = np.iinfo(detail["dtype"])
    return [rng.integers(info.min, info.max + 1, detail["shape"]).astype(detail["dtype"]) for _ in range(RUNS)]


@pytest.mark.parametrize("name", [spec["name"] for spec in SPECS])
def test_converter_emits_integer_lstms(exported, name):
    """The exports hold fused int8 LSTMs whose output state has a nonzero zero point."""
    ops = _lstm_ops(exported[name])
    assert len(ops) == LSTMS[name]
    if name == "bidirectional":
        from tractile.formats.tflite.reader import read_model

        opcodes = [op.opcode for op in read_model(exported[name]).subgraphs[0].operators]
        assert opcodes.count("REVERSE_V2") == 2, opcodes
    assert all(op.hidden_q is not None and op.state_q[1].scale[0] < 2 ** -8 for op in ops)
    assert any(op.state_q[0].zero_point[0] != 0 for op in ops)


@pytest.mark.parametrize("name", [spec["name"] for spec in SPECS])
def test_reference_flavour_matches_builtin_ref(exported, name):
    data = exported[name]
    interpreter = reference_interpreter(data)
    state = load_tflite(data).into_optimized().state()
    for run, x in enumerate(_inputs(data, np.random.default_rng(11))):
        expected = run_reference(interpreter, [x])[0]
        np.testing.assert_array_equal(state.run([x])[0], expected, err_msg=f"{name}, run {run}")


@pytest.mark.parametrize("name", [spec["name"] for spec in SPECS])
def test_micro_flavour_matches_tflite_micro(exported, name):
    data = exported[name]
    interpreter = micro_interpreter(data)
    state = load_tflite(data, flavour="micro").into_optimized().state()
    for run, x in enumerate(_inputs(data, np.random.default_rng(12))):
        expected = run_micro(interpreter, [x])[0]
        np.testing.assert_array_equal(state.run([x])[0], expected, err_msg=f"{name}, run {run}")


def test_the_two_flavours_differ(exported):
    """TFLite Micro's LSTM rounds differently: the micro test is not the reference one again."""
    data = exported["stacked_mask"]
    reference = load_tflite(data).into_optimized().state()
    micro = load_tflite(data, flavour="micro").into_optimized().state()
    inputs = _inputs(data, np.random.default_rng(13))
    assert any(not np.array_equal(reference.run([x])[0], micro.run([x])[0]) for x in inputs)


def test_states_start_at_their_zero_point(exported):
    """TFLite resets a variable without a buffer to its zero point, not to 0."""
    for op in _lstm_ops(exported["time_major_last"]):
        zero = op.state_q[0].zero_point[0]
        assert zero != 0 and np.all(np.asarray(op.initial_states[0]) == zero)


def test_reset_restores_the_first_run(exported):
    data = exported["stacked_mask"]
    state = load_tflite(data).into_optimized().state()
    x = _inputs(data, np.random.default_rng(14))[0]
    first = state.run([x])[0]
    second = state.run([x])[0]
    state.reset()
    np.testing.assert_array_equal(state.run([x])[0], first)
    assert not np.array_equal(first, second), "the state did not carry over"
