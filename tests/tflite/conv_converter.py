"""Convert small Keras convolution models over a time axis to int8 TFLite with TensorFlow's converter.

Run as a child process (``python -m tests.tflite.conv_converter OUT_DIR``), as the LSTM converter
is (a crash inside TensorFlow cannot take the test session down; TensorFlow is imported once):
one ``NAME.tflite`` per model of :data:`MODELS`, each with int8 input and output and a fixed
length of :data:`FRAMES` along axis 1 (time), which tests override with a symbol.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from tests.tflite.keras_int8 import convert_keras

FRAMES = 16


def frames_model(keras):
    """Conv2D over frames ([1, T, 1, 6], kernels (k, 1)): valid conv with ReLU, average pooling
    by 2 along time, a same-padded conv added back (residual), max pooling along features."""
    layers = keras.layers
    inputs = keras.Input(batch_shape=(1, FRAMES, 1, 6))
    x = layers.Conv2D(5, (3, 1), activation="relu")(inputs)
    x = layers.AveragePooling2D((2, 1))(x)
    y = layers.Conv2D(5, (3, 1), padding="same")(x)
    x = layers.Add()([x, y])
    return keras.Model(inputs, layers.Conv2D(4, (2, 1), dilation_rate=(2, 1), activation="relu6")(x))


def separable_model(keras):
    """A depthwise-separable block over [1, T, 5, 3] (time on H): separable 3x3 with ReLU, a
    same-padded depthwise 3x3 with multiplier 2, max pooling (2, 1), a 1x1 conv."""
    layers = keras.layers
    inputs = keras.Input(batch_shape=(1, FRAMES, 5, 3))
    x = layers.SeparableConv2D(4, 3, activation="relu")(inputs)
    x = layers.DepthwiseConv2D(3, padding="same", depth_multiplier=2)(x)
    x = layers.MaxPooling2D((2, 1))(x)
    return keras.Model(inputs, layers.Conv2D(3, 1)(x))


def conv1d_model(keras):
    """Keras Conv1D over [1, T, 6] (the converter wraps each CONV_2D in reshapes of fixed
    shapes): a valid conv with ReLU, max pooling by 2, a dilated conv, a same-padded one."""
    layers = keras.layers
    inputs = keras.Input(batch_shape=(1, FRAMES, 6))
    x = layers.Conv1D(5, 3, activation="relu")(inputs)
    x = layers.MaxPooling1D(2)(x)
    x = layers.Conv1D(4, 2, dilation_rate=2)(x)
    return keras.Model(inputs, layers.Conv1D(3, 3, padding="same", activation="relu")(x))


MODELS = {"frames": frames_model, "separable": separable_model, "conv1d": conv1d_model}


def convert(build, seed: int) -> bytes:
    import tf_keras as keras

    model = build(keras)
    rng = np.random.default_rng(seed)
    for weight in model.weights:  # weights of a trained model: larger than Keras' initial ones
        weight.assign(rng.standard_normal(weight.shape).astype(np.float32) * 0.5)
    return convert_keras(model, True, seed=int(rng.integers(1 << 30)), samples=8)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for index, (name, build) in enumerate(MODELS.items()):
        with open(os.path.join(sys.argv[1], name + ".tflite"), "wb") as handle:
            handle.write(convert(build, index))
