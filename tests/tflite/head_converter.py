"""Convert small Keras image classifiers (Conv2D, GlobalAveragePooling2D, Dense, Softmax) to TFLite
with TensorFlow's own converter: float32, and int8 with int8 inputs and outputs.

Run as a child process (``python -m tests.tflite.head_converter OUT_DIR``) so that TensorFlow is
imported once, outside the test session. Writes ``float.tflite`` and ``int8.tflite``.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from tests.tflite.keras_int8 import convert_keras

SHAPE = (1, 9, 7, 3)


def build_keras():
    import tf_keras as keras

    inputs = keras.Input(batch_shape=SHAPE)
    x = keras.layers.Conv2D(8, 3, activation="relu")(inputs)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dense(4)(x)
    model = keras.Model(inputs, keras.layers.Softmax()(x))
    rng = np.random.default_rng(3)
    for weight in model.weights:
        weight.assign(rng.standard_normal(weight.shape).astype(np.float32) * 0.5)
    return model


def convert(int8: bool) -> bytes:
    return convert_keras(build_keras(), int8, seed=4)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for name, int8 in (("float", False), ("int8", True)):
        with open(os.path.join(sys.argv[1], f"{name}.tflite"), "wb") as handle:
            handle.write(convert(int8))
