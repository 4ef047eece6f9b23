"""Convert a Keras dilated Conv1D (unknown batch: TensorFlow's converter then keeps it as
SPACE_TO_BATCH_ND, CONV_2D, BATCH_TO_SPACE_ND) to float32 and int8 TFLite.

Run as a child process (``python -m tests.tflite.dilated_converter OUT_DIR``) so that a crash
inside TensorFlow cannot take the test session down; writes ``float32.tflite`` and ``int8.tflite``.
"""
from __future__ import annotations

import os
import sys

import numpy as np

from tests.tflite.keras_int8 import convert_keras

STEPS, FEATURES = 20, 4


def build():
    import tf_keras as keras

    inputs = keras.Input(shape=(STEPS, FEATURES))
    x = keras.layers.Conv1D(6, 3, dilation_rate=2, padding="causal", activation="relu")(inputs)
    x = keras.layers.Conv1D(5, 2, dilation_rate=3, padding="valid")(x)
    model = keras.Model(inputs, x)
    rng = np.random.default_rng(31)
    for weight in model.weights:
        weight.assign(rng.standard_normal(weight.shape).astype(np.float32) * 0.5)
    return model


def convert(int8: bool) -> bytes:
    return convert_keras(build(), int8, seed=32)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for name, int8 in (("float32", False), ("int8", True)):
        with open(os.path.join(sys.argv[1], f"{name}.tflite"), "wb") as handle:
            handle.write(convert(int8))
