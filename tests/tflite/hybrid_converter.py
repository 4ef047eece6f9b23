"""Convert small Keras models to hybrid (dynamic-range) TFLite with TensorFlow's converter:
``optimizations = [DEFAULT]`` without a representative dataset gives int8 weights (layers of
1024 weights or more; per-channel for dense and convolution layers) and float activations,
quantized on the fly with ``asymmetric_quantize_inputs``.

Run as a child process (``python -m tests.tflite.hybrid_converter OUT_DIR``), as
``lstm_converter``: a crash inside TensorFlow cannot take the test session down.
"""
from __future__ import annotations

import os
import sys

import numpy as np


def models():
    import tf_keras as keras

    x = keras.Input(batch_shape=(2, 64))
    dense = keras.Model(x, keras.layers.Dense(40)(keras.layers.Dense(48, activation="relu")(x)))
    x = keras.Input(batch_shape=(1, 5, 40))
    lstm = keras.Model(x, keras.layers.Dense(32)(keras.layers.LSTM(36, return_sequences=True)(x)))
    x = keras.Input(batch_shape=(1, 9, 8, 16))
    conv = keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")(x)
    depthwise = keras.layers.DepthwiseConv2D(3, depth_multiplier=4, padding="same")(conv)
    return {"dense": dense, "lstm": lstm, "conv": keras.Model(x, [conv, depthwise])}


def convert(model, seed: int) -> bytes:
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    for weight in model.weights:
        weight.assign(rng.standard_normal(weight.shape).astype(np.float32) * 0.3)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter.convert()


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for index, (name, model) in enumerate(models().items()):
        with open(os.path.join(sys.argv[1], name + ".tflite"), "wb") as handle:
            handle.write(convert(model, index))
