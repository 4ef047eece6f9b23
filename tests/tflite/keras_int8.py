"""What the converter scripts share: a Keras model converted by TensorFlow's TFLite converter,
float32 or fully int8 (int8 inputs and outputs, calibrated on standard normal samples)."""
from __future__ import annotations

import numpy as np


def convert_keras(model, int8: bool, seed: int, samples: int = 16) -> bytes:
    """``model`` as .tflite bytes: float32, or int8 calibrated on ``samples`` random inputs."""
    import tensorflow as tf

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if int8:
        shape = tuple(1 if d is None else int(d) for d in model.inputs[0].shape)  # an unknown batch: 1
        rng = np.random.default_rng(seed)

        def calibration():
            for _ in range(samples):
                yield [rng.standard_normal(shape).astype(np.float32)]

        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = calibration
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()
