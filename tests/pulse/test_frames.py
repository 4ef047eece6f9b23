"""Keyword spotting from raw samples, streamed: TFLite Micro's micro_speech front end pulsed by
320-sample hops (``pulse_frames``) feeds a sliding window of 49 feature frames to the keyword
model; features and labels equal TFLite Micro's pipeline (its preprocessor frame by frame, then
micro_speech on the 49 frames). Also ``tractile stream`` on the front end with a recording."""
from __future__ import annotations

import wave

import numpy as np
import pytest

from tests.conftest import shared_model
from tests.tflite.oracle import micro_interpreter, run_micro
from tractile.cli.main import main
from tractile.errors import TractileError
from tractile.formats.tflite import load_tflite
from tractile.pulse.frames import pulse_frames, run_frames

WINDOW, HOP, FRAMES = 480, 320, 49
LABELS = ["silence", "unknown", "yes", "no"]
RECORDINGS = ("yes_1000ms", "no_1000ms", "noise_1000ms", "silence_1000ms")


def samples(name: str) -> np.ndarray:
    with wave.open(str(shared_model(f"tflite/testdata/{name}.wav"))) as handle:
        return np.frombuffer(handle.readframes(handle.getnframes()), dtype=np.int16)[None]


def tflite_micro_pipeline(audio: np.ndarray) -> tuple[np.ndarray, str]:
    """TFLite Micro's features (frame by frame) and the label micro_speech gives them."""
    front = micro_interpreter(shared_model("tflite/audio_preprocessor_int8.tflite").read_bytes())
    features = np.stack([run_micro(front, [audio[:, k * HOP:k * HOP + WINDOW]])[0] for k in range(FRAMES)])
    speech = micro_interpreter(shared_model("tflite/micro_speech_quantized.tflite").read_bytes())
    scores = run_micro(speech, [features.reshape(1, -1)])[0]
    return features, LABELS[int(np.argmax(scores))]


@pytest.fixture(scope="module")
def front_end():
    return load_tflite(shared_model("tflite/audio_preprocessor_int8.tflite")).into_optimized()


@pytest.fixture(scope="module")
def speech():
    return load_tflite(shared_model("tflite/micro_speech_quantized.tflite"), flavour="micro").into_optimized()


@pytest.mark.parametrize("name", RECORDINGS)
def test_streamed_keyword_spotting_matches_tflite_micro(name, front_end, speech):
    audio = samples(name)
    expected_features, expected_label = tflite_micro_pipeline(audio)
    stream = pulse_frames(front_end, HOP)
    assert stream.delay == 1
    state, keyword = stream.start(), speech.plan().state()
    ring = np.zeros((FRAMES, 40), dtype=np.int8)
    seen, labels = 0, []
    for hop in range(audio.shape[1] // HOP):
        frame = state.push([audio[:, hop * HOP:(hop + 1) * HOP]])[0]
        if hop < stream.delay:
            continue
        ring = np.concatenate([ring[1:], frame])
        seen += 1
        if seen >= FRAMES or seen % 4 == 0:
            labels.append(LABELS[int(np.argmax(keyword.run([ring.reshape(1, -1)])[0]))])
    assert seen == FRAMES
    np.testing.assert_array_equal(ring, expected_features)
    assert labels[-1] == expected_label
    if name in ("yes_1000ms", "no_1000ms"):
        assert expected_label == name.split("_")[0]


def test_frame_stream_is_the_frame_by_frame_run(front_end):
    audio = samples("no_1000ms")[:, :6400]
    stream = pulse_frames(front_end, 160)
    assert stream.delay == 2
    state = stream.start()
    pushed = [state.push([audio[:, k * 160:(k + 1) * 160]])[0] for k in range(39)]
    tail = state.finish([audio[:, 39 * 160:]])[0]
    streamed = np.concatenate(pushed + [tail])[stream.delay:]
    np.testing.assert_array_equal(streamed, run_frames(front_end, audio, 160)[0])
    state.reset()
    again = np.concatenate([state.push([audio[:, k * 160:(k + 1) * 160]])[0] for k in range(6)])
    np.testing.assert_array_equal(again, np.concatenate(pushed[:6]))


def test_frame_stream_refuses_a_hop_beyond_the_window(front_end):
    with pytest.raises(TractileError, match="hop must be 1 to 480"):
        pulse_frames(front_end, 481)


def test_cli_streams_the_front_end_over_a_recording(tmp_path, capsys):
    pytest.importorskip("soundfile")
    recording = shared_model("tflite/testdata/yes_1000ms.wav")
    saved = tmp_path / "features.npz"
    status = main(["stream", str(shared_model("tflite/audio_preprocessor_int8.tflite")), "--input", str(recording),
                   "--pulse", "320", "--check", "--save-output", str(saved)])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert "16000 frames in 50 chunks" in printed and "delay 1 frame(s)" in printed
    assert "largest difference with the batch model 0" in printed
    with np.load(saved) as data:
        features = data[data.files[0]]
    np.testing.assert_array_equal(features, tflite_micro_pipeline(samples("yes_1000ms"))[0])
