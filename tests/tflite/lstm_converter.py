"""Convert small Keras LSTM models to integer TFLite with TensorFlow's own converter.

Run as a child process (``python -m tests.tflite.lstm_converter SPECS.json OUT_DIR``: a list
of specifications, one ``NAME.tflite`` each) so that a crash inside TensorFlow cannot take the
test session down, and TensorFlow is imported once for all models.

The layers are ``tf_keras``'s (Keras 2): the converter fuses its LSTM into one
UNIDIRECTIONAL_SEQUENCE_LSTM. Keras 3's LSTM converts to a WHILE loop instead, and TF 2.21's
calibrator crashes on that loop (SIGSEGV in ``MinMax::Update`` under ``LoggingEval``).
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np


def build_keras(spec: dict):
    import tf_keras as keras

    steps, features = spec["steps"], spec["features"]
    shape = (steps, 1, features) if spec.get("time_major") else (1, steps, features)
    inputs = keras.Input(batch_shape=shape)
    x = inputs
    layers = spec["layers"]
    for index, units in enumerate(layers):
        last = index == len(layers) - 1
        layer = keras.layers.LSTM(units, return_sequences=(not last) or spec["return_sequences"],
                                  time_major=spec.get("time_major", False))
        x = keras.layers.Bidirectional(layer)(x) if spec.get("bidirectional") else layer(x)
    if spec.get("head") == "sigmoid":
        x = keras.layers.Dense(spec["head_units"], activation="sigmoid")(x)
    elif spec.get("head") == "dense":
        x = keras.layers.Dense(spec["head_units"])(x)
    model = keras.Model(inputs, x)
    rng = np.random.default_rng(spec["seed"])
    for weight in model.weights:  # weights of a trained model: larger than Keras' initial ones
        value = rng.standard_normal(weight.shape).astype(np.float32) * spec.get("weight_scale", 0.5)
        weight.assign(value)
    return model


def representative(spec: dict):
    def samples():
        rng = np.random.default_rng(spec["seed"] + 1)
        for _ in range(spec.get("samples", 16)):
            shape = (spec["steps"], 1) if spec.get("time_major") else (1, spec["steps"])
            x = rng.standard_normal(shape + (spec["features"],)) * spec.get("input_scale", 1.0)
            yield [(x + spec.get("input_offset", 0.0)).astype(np.float32)]
    return samples


def convert(spec: dict) -> bytes:
    import tensorflow as tf

    model = build_keras(spec)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative(spec)
    if spec["mode"] == "16x8":
        converter.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        io_type = tf.int16
    else:
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        io_type = tf.int8
    converter.inference_input_type = io_type
    converter.inference_output_type = io_type
    return converter.convert()


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with open(sys.argv[1]) as handle:
        specifications = json.load(handle)
    for specification in specifications:
        data = convert(specification)
        with open(os.path.join(sys.argv[2], specification["name"] + ".tflite"), "wb") as handle:
            handle.write(data)
