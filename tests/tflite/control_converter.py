"""Convert a small tf.Module with a tf.Variable, tf.cond and tf.while_loop to TFLite with
TensorFlow's own converter (resource variables enabled): IF, WHILE, VAR_HANDLE, READ_VARIABLE,
ASSIGN_VARIABLE and CALL_ONCE (the variable's initialisation) in one model.

Run as a child process (``python -m tests.tflite.control_converter OUT_DIR``) so that TensorFlow
is imported once, outside the test session. Writes ``counter.tflite``.
"""
from __future__ import annotations

import os
import sys


def convert() -> bytes:
    import tensorflow as tf

    class Counter(tf.Module):
        """total := [1, 2, 3, 4] once; y = x * 2 if sum(x) > 0 else x - 1; n times acc = acc / 2 + y;
        total += acc; output total + acc."""

        def __init__(self):
            super().__init__()
            self.total = tf.Variable(tf.constant([1.0, 2.0, 3.0, 4.0]))

        @tf.function(input_signature=[tf.TensorSpec([4], tf.float32), tf.TensorSpec([], tf.int32)])
        def __call__(self, x, n):
            y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
            _, acc = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 0.5 + y), (tf.constant(0), y))
            self.total.assign_add(acc)
            return self.total.read_value() + acc

    module = Counter()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.__call__.get_concrete_function()], module)
    converter.experimental_enable_resource_variables = True
    return converter.convert()


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with open(os.path.join(sys.argv[1], "counter.tflite"), "wb") as handle:
        handle.write(convert())
