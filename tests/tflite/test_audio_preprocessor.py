"""TFLite Micro's micro_speech audio front end (../shared/models/tflite/audio_preprocessor_*):
every 30 ms frame of the shared one-second recordings, noise estimate carried from frame to
frame, equal to TFLite Micro's; the upstream expected features of the 30 ms recordings."""
from __future__ import annotations

import wave

import numpy as np
import pytest

from tests.conftest import shared_model
from tests.tflite.oracle import micro_interpreter, run_micro
from tractile.formats.tflite import load_tflite

#: the shared README's expected int8 features (TFLite Micro's micro_speech tests)
EXPECTED_30MS = {
    "no_30ms": [126, 103, 124, 102, 124, 102, 123, 100, 118, 97, 118, 100, 118, 98, 121, 100, 121, 98, 117, 91, 96,
                74, 54, 87, 100, 87, 109, 92, 91, 80, 64, 55, 83, 74, 74, 78, 114, 95, 101, 81],
    "yes_30ms": [124, 105, 126, 103, 125, 101, 123, 100, 116, 98, 115, 97, 113, 90, 91, 82, 104, 96, 117, 97, 121,
                 103, 126, 101, 125, 104, 126, 104, 125, 101, 116, 90, 81, 74, 80, 71, 83, 76, 82, 71],
}
WINDOW, HOP, FRAMES = 480, 320, 49


def samples(name: str) -> np.ndarray:
    with wave.open(str(shared_model(f"tflite/testdata/{name}.wav"))) as handle:
        return np.frombuffer(handle.readframes(handle.getnframes()), dtype=np.int16)


def windows(audio: np.ndarray) -> list[np.ndarray]:
    return [audio[None, k * HOP:k * HOP + WINDOW] for k in range(FRAMES)]


@pytest.mark.parametrize("name", sorted(EXPECTED_30MS))
def test_expected_features(name):
    model = load_tflite(shared_model("tflite/audio_preprocessor_int8.tflite")).into_optimized()
    features = model.plan().state().run([samples(name)[None, :WINDOW]])[0]
    assert features.dtype == np.int8
    assert features.tolist() == EXPECTED_30MS[name]


@pytest.mark.parametrize("kind", ["int8", "float"])
def test_every_frame_as_tflite_micro(kind):
    path = shared_model(f"tflite/audio_preprocessor_{kind}.tflite")
    model = load_tflite(path).into_optimized()
    for name in ("yes_1000ms", "no_1000ms", "noise_1000ms", "silence_1000ms"):
        interpreter = micro_interpreter(path.read_bytes())
        state = model.plan().state()
        for index, frame in enumerate(windows(samples(name))):
            expected = run_micro(interpreter, [frame])[0]
            ours = state.run([frame])[0]
            assert ours.dtype == expected.dtype
            if kind == "int8":
                np.testing.assert_array_equal(ours, expected, err_msg=f"{name} frame {index}")
            else:
                np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=0, err_msg=f"{name} frame {index}")
        state.reset()
        again = state.run([windows(samples(name))[0]])[0]
        first = load_tflite(path).into_optimized().plan().state().run([windows(samples(name))[0]])[0]
        np.testing.assert_array_equal(again, first, err_msg="reset does not forget the noise estimate")
