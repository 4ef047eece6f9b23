"""silero-vad (both ONNX files of the pip package) run chunk by chunk against onnxruntime.

The files hold If nodes on the sample rate and on run-time shapes (squeeze-if-size-1 patterns
whose branches differ in rank). With the chunk shape given they load as they are (``sr`` a
run-time input); with ``values={"sr": 16000}`` the sample-rate If folds away as well. With no
facts at all they load as dynamic models, typed at the first chunk of each signature.
"""
from __future__ import annotations

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

import tractile  # noqa: E402
from tractile import AnalysisError, DatumType, RunError  # noqa: E402
from tractile.runtime.dynamic import DynamicModel  # noqa: E402

from ..speech import CHUNK, CONTEXT, chunks, silero_vad_files, speech_like  # noqa: E402

FILES = silero_vad_files()
CHUNKS = 120
#: the speech probability must match to 1e-5; the LSTM state holds cell values up to ~9,
#: where float32 sums differ between engines by a few 1e-5 (onnxruntime itself is 1.4e-5 away
#: from a float64 run of the same model on this signal; tractile 1e-5)
STATE_TOLERANCE = dict(rtol=1e-5, atol=5e-5)


def model_path(name: str):
    if name not in FILES:
        pytest.skip("silero_vad is not installed (pip install silero-vad): its ONNX files are the test data")
    return str(FILES[name])


def reference_session(path: str):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("name", ["silero_vad.onnx", "silero_vad_16k_op15.onnx"])
@pytest.mark.parametrize("specialised", [True, False], ids=["sr-value", "sr-input"])
def test_chunked_16k_run_matches_onnxruntime(name: str, specialised: bool):
    path = model_path(name)
    facts = {"input": f"1,{CONTEXT + CHUNK},f32", "state": "2,1,128,f32"}
    model = tractile.load(path, inputs=facts, values={"sr": 16000} if specialised else None)
    assert model.input_names() == (["input", "state"] if specialised else ["input", "state", "sr"])
    if specialised:
        assert not any(n.op.name == "If" for n in model.nodes)
    ours = model.plan().state(check_facts=True)
    reference = reference_session(path)
    sr = np.array(16000, np.int64)
    state = expected_state = np.zeros((2, 1, 128), np.float32)
    probabilities = []
    audio = speech_like(CHUNKS * CHUNK / 16000)
    for count, x in enumerate(chunks(audio), 1):
        prob, state = ours.run([x, state] if specialised else [x, state, sr])
        expected, expected_state = reference.run(None, {"input": x, "state": expected_state, "sr": sr})
        np.testing.assert_allclose(prob, expected, rtol=0, atol=1e-5, err_msg=f"chunk {count}")
        np.testing.assert_allclose(state, expected_state, **STATE_TOLERANCE, err_msg=f"chunk {count}")
        probabilities.append(float(expected[0, 0]))
    assert count >= 100
    # the signal is real-looking enough for the detector to switch both ways
    assert min(probabilities) < 0.1 and max(probabilities) > 0.5


def test_8k_chunks_of_the_multi_rate_file():
    path = model_path("silero_vad.onnx")
    model = tractile.load(path, inputs={"input": "1,288,f32", "state": "2,1,128,f32"}, values={"sr": 8000})
    reference = reference_session(path)
    state = expected_state = np.zeros((2, 1, 128), np.float32)
    audio = speech_like(3.0, rate=8000)
    for x in chunks(audio, 256, 32):
        prob, state = model.run([x, state])
        expected, expected_state = reference.run(None, {"input": x, "state": expected_state,
                                                        "sr": np.array(8000, np.int64)})
        np.testing.assert_allclose(prob, expected, rtol=0, atol=1e-5)
        np.testing.assert_allclose(state, expected_state, **STATE_TOLERANCE)


@pytest.mark.parametrize("name", ["silero_vad.onnx", "silero_vad_16k_op15.onnx"])
def test_loaded_as_it_comes(name: str):
    """``tractile.load(path)`` with no facts, as onnxruntime users open it: the first chunk of
    each sample rate types and plans the model for its signature, later chunks reuse that plan."""
    path = model_path(name)
    model = tractile.load(path)
    assert isinstance(model, DynamicModel) and "LSTM" in model.reason and "depends on data" in model.reason
    assert model.input_names() == ["input", "state", "sr"] and model.output_fact(0).dtype == DatumType.F32
    reference = reference_session(path)
    ours = model.state(check_facts=True)
    rates = [(16000, CHUNK, CONTEXT)] + ([(8000, 256, 32)] if name == "silero_vad.onnx" else [])
    for planned, (rate, chunk, context) in enumerate(rates, 1):
        sr = np.array(rate, np.int64)
        state = expected_state = np.zeros((2, 1, 128), np.float32)
        for count, x in enumerate(chunks(speech_like(3.0, rate=rate), chunk, context), 1):
            prob, state = ours.run([x, state, sr])
            expected, expected_state = reference.run(None, {"input": x, "state": expected_state, "sr": sr})
            np.testing.assert_allclose(prob, expected, rtol=0, atol=1e-5, err_msg=f"{rate} Hz, chunk {count}")
            np.testing.assert_allclose(state, expected_state, **STATE_TOLERANCE, err_msg=f"{rate} Hz, chunk {count}")
        assert count >= 90 and len(model.plans) == planned  # one plan per signature, reused
    for signature, typed in model.plans:
        if name == "silero_vad.onnx":  # the sample rate decides the outer If: folded in each plan
            assert f"sr={16000 if '576' in signature else 8000}" in signature
            assert "sr" not in typed.input_names() and not any(n.name == "If_0" for n in typed.nodes)
        assert all(isinstance(d, int) for f in typed.input_facts for d in f.shape)
    # a truly wrong input is still named
    with pytest.raises(RunError, match='input "state"'):
        ours.run([np.zeros((1, CONTEXT + CHUNK), np.float32), np.zeros((2, 1, 128), np.float64),
                  np.array(16000, np.int64)])


def test_the_explicit_pipeline_names_the_rank_dependent_branch():
    path = model_path("silero_vad_16k_op15.onnx")
    # the squeeze-if-one-frame If yields rank 2 or 3 depending on the chunk length: the LSTM
    # after it needs to know which, and typing without the inputs says so and where
    with pytest.raises(AnalysisError, match=r"LSTM.*depends on data"):
        tractile.load(path, optimize=False).into_typed()


@pytest.mark.parametrize("name,compile", [("silero_vad.onnx", None), ("silero_vad_16k_op15.onnx", "all"),
                                          ("silero_vad.onnx", "all")])
def test_real_speech_recordings(name: str, compile):
    """The shared micro_speech recordings ("yes", "no", noise, silence: 125 chunks), also with
    compiled segments (compile="all": the whole network runs as one compiled function)."""
    soundfile = pytest.importorskip("soundfile")
    from ..conftest import shared_model

    path = model_path(name)
    audio = np.concatenate([soundfile.read(shared_model(f"tflite/testdata/{clip}_1000ms.wav"), dtype="float32")[0]
                            for clip in ("yes", "no", "noise", "silence")])
    model = tractile.load(path, inputs={"input": f"1,{CONTEXT + CHUNK},f32", "state": "2,1,128,f32"},
                          values={"sr": 16000}, compile=compile)
    if compile:
        assert sum(n.op.name == "Compiled" for n in model.nodes) >= 1
    ours = model.state()
    reference = reference_session(path)
    sr = np.array(16000, np.int64)
    state = expected_state = np.zeros((2, 1, 128), np.float32)
    probabilities = []
    # compiled C sums in other orders than NumPy: looser on the state it feeds back 125 times
    state_tolerance = STATE_TOLERANCE if compile is None else dict(rtol=1e-4, atol=1e-4)
    for count, x in enumerate(chunks(audio), 1):
        prob, state = ours.run([x, state])
        expected, expected_state = reference.run(None, {"input": x, "state": expected_state, "sr": sr})
        np.testing.assert_allclose(prob, expected, rtol=0, atol=1e-5, err_msg=f"chunk {count}")
        np.testing.assert_allclose(state, expected_state, **state_tolerance, err_msg=f"chunk {count}")
        probabilities.append(float(prob.reshape(-1)[0]))
    assert count >= 100
    assert max(probabilities[:len(probabilities) // 2]) > 0.5 > max(probabilities[-20:]), \
        "speech is detected in 'yes' and 'no', not in silence"
