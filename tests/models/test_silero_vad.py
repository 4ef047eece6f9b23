"""silero-vad (the pip package's ONNX files) run chunk by chunk as its users run it — 512 new
samples plus the 64-sample context at 16 kHz, the state fed back — against onnxruntime on
real speech (the shared micro_speech recordings: yes, no, noise, silence; 125 chunks)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tractile

from ..conftest import shared_model

CHUNK, CONTEXT = 512, 64


def silero_file(name: str) -> str:
    silero_vad = pytest.importorskip("silero_vad", reason="silero-vad is not installed (pip install silero-vad)")
    path = os.path.join(os.path.dirname(silero_vad.__file__), "data", name)
    if not os.path.exists(path):
        pytest.skip(f"{path} is not in this silero-vad release")
    return path


def speech() -> np.ndarray:
    soundfile = pytest.importorskip("soundfile")
    clips = [soundfile.read(shared_model(f"tflite/testdata/{name}_1000ms.wav"), dtype="float32")[0]
             for name in ("yes", "no", "noise", "silence")]
    return np.concatenate(clips)


def chunks(audio: np.ndarray):
    context = np.zeros(CONTEXT, np.float32)
    for start in range(0, len(audio) - CHUNK + 1, CHUNK):
        new = audio[start:start + CHUNK]
        yield np.concatenate([context, new])[None]
        context = new[-CONTEXT:]


@pytest.mark.parametrize("name,compile", [("silero_vad.onnx", None), ("silero_vad_16k_op15.onnx", None),
                                          ("silero_vad_16k_op15.onnx", "auto")])
def test_chunk_by_chunk_matches_onnxruntime(name, compile):
    import onnxruntime as ort

    path = silero_file(name)
    facts = {"input": f"1,{CHUNK + CONTEXT},f32", "state": "2,1,128,f32", "sr": "i64"}
    model = tractile.load(path, inputs=facts, compile=compile)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    state = model.state()
    ours_state = theirs_state = np.zeros((2, 1, 128), np.float32)
    sr = np.array(16000, np.int64)
    probabilities = []
    count = 0
    # compiled C sums in another order than NumPy; the state feeds those roundings back 125 times
    tolerance = 1e-5 if compile is None else 1e-4
    for x in chunks(speech()):
        ours, ours_state = state.run([x, ours_state, sr])
        theirs, theirs_state = session.run(None, {"input": x, "state": theirs_state, "sr": sr})
        np.testing.assert_allclose(ours, theirs, rtol=tolerance, atol=tolerance, err_msg=f"chunk {count}")
        np.testing.assert_allclose(ours_state, theirs_state, rtol=tolerance, atol=tolerance,
                                   err_msg=f"chunk {count} state")
        probabilities.append(float(ours.reshape(-1)[0]))
        count += 1
    assert count >= 100
    speech_part, silence_part = probabilities[:len(probabilities) // 2], probabilities[-20:]
    assert max(speech_part) > 0.5 > max(silence_part), "speech is detected in 'yes'/'no', not in silence"
