"""Streaming TensorFlow models along a symbolic time axis: Keras Conv1D and NHWC Conv2D stacks
frozen with a placeholder of shape [1, None, ...], pulsed chunk by chunk, against TensorFlow."""
from __future__ import annotations

import numpy as np
import pytest

import tractile
from tractile.cli.main import main
from tractile.dim import TDim
from tractile.tools.compare import stream_through

from .oracle import assert_close, tensorflow, write_frozen

FRAMES = 37


def conv1d_model(tf):
    """Conv1D layers with same, valid and causal padding, then a Dense over time steps."""
    return tf.keras.Sequential([
        tf.keras.Input((None, 3)),
        tf.keras.layers.Conv1D(4, 3, padding="same", activation="relu", bias_initializer="random_normal"),
        tf.keras.layers.Conv1D(6, 2, bias_initializer="random_normal"),
        tf.keras.layers.Conv1D(5, 3, padding="causal", activation="tanh", bias_initializer="random_normal"),
        tf.keras.layers.Dense(2, bias_initializer="random_normal")], name="speech")


def conv2d_model(tf):
    """NHWC convolutions over (time, features): batch norm, pooling along features, depthwise along time."""
    return tf.keras.Sequential([
        tf.keras.Input((None, 8, 1)),
        tf.keras.layers.Conv2D(4, 3, padding="same", activation="relu", bias_initializer="random_normal"),
        tf.keras.layers.BatchNormalization(beta_initializer="random_normal", moving_variance_initializer="ones"),
        tf.keras.layers.MaxPooling2D((1, 2)),
        tf.keras.layers.DepthwiseConv2D((3, 1), bias_initializer="random_normal"),
        tf.keras.layers.Conv2D(3, 2, strides=(1, 2), bias_initializer="random_normal"),
        tf.keras.layers.Reshape((-1, 6)),
        tf.keras.layers.Dense(2, activation="tanh")], name="spectrogram")


MODELS = {"conv1d": (conv1d_model, (3,)), "conv2d": (conv2d_model, (8, 1))}


@pytest.fixture(scope="module", params=sorted(MODELS))
def streamable(request, tmp_path_factory):
    """(name, keras model, frozen .pb, SavedModel folder, input, TensorFlow's output, fact with T)."""
    tf = tensorflow()
    tf.keras.utils.set_random_seed(7)
    build, features = MODELS[request.param]
    model = build(tf)
    folder = tmp_path_factory.mktemp(request.param)
    write_frozen(folder / "model.pb", lambda x: model(x), tf.TensorSpec((1, None) + features, tf.float32))
    tf.saved_model.save(model, str(folder / "saved"))
    x = np.random.default_rng(2).standard_normal((1, FRAMES) + features).astype(np.float32)
    np.save(folder / "x.npy", x)
    fact = ",".join(["1", "T", *map(str, features), "f32"])
    return request.param, model, folder, x, model(x).numpy(), fact


@pytest.mark.parametrize("pulse", [1, 4, 5])
def test_pulsed_frozen_graph_matches_tensorflow(streamable, pulse):
    name, _, folder, x, expected, fact = streamable
    model = tractile.load(folder / "model.pb", inputs=[fact])
    assert_close(model.run([x])[0], expected, what=f"{name} batch")
    pulsed = model.pulse("T", pulse)
    assert pulsed.output_streams[0].axis == 1
    assert_close(stream_through(pulsed, [x])[0], expected, what=f"{name} pulse {pulse}")


def test_the_placeholders_own_time_symbol_streams(streamable):
    """No facts given: the [1, None, ...] placeholder's unknown dim is a symbol to stream along."""
    name, _, folder, x, expected, _ = streamable
    model = tractile.load(folder / "model.pb")
    time = model.input_fact(0).shape[1]
    assert isinstance(time, TDim) and len(time.symbols()) == 1
    pulsed = model.pulse(next(iter(time.symbols())), 3)
    assert_close(stream_through(pulsed, [x])[0], expected, what=name)


def test_stream_command_on_a_saved_model_folder(streamable, tmp_path, capsys):
    name, _, folder, x, expected, fact = streamable
    out = tmp_path / "streamed.npz"
    assert main(["stream", str(folder / "saved"), "-i", fact, "--pulse", "4", "--input", str(folder / "x.npy"),
                 "--check", "--save-output", str(out)]) == 0
    assert "the stream matches the batch model" in capsys.readouterr().out
    (streamed,) = np.load(out).values()
    assert_close(streamed, expected, what=name)
