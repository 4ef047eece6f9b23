"""Functional control flow (If, While, PartitionedCall) and TensorLists: Keras LSTM and GRU models,
a tf.function with tf.cond and tf.while_loop, against TensorFlow."""
from __future__ import annotations

import numpy as np
import pytest

import tractile

from .oracle import assert_close, tensorflow, write_frozen


@pytest.fixture(scope="module")
def recurrent(tmp_path_factory):
    """A Keras LSTM (last state) and a GRU (whole sequence), each frozen and saved."""
    tf = tensorflow()
    tf.keras.utils.set_random_seed(5)
    folder = tmp_path_factory.mktemp("recurrent")
    models = {}
    for kind in ("lstm", "gru"):
        inputs = tf.keras.Input((6, 3))
        if kind == "lstm":
            outputs = tf.keras.layers.LSTM(4)(inputs)
        else:
            outputs = tf.keras.layers.GRU(5, return_sequences=True)(inputs)
        model = tf.keras.Model(inputs, outputs)
        write_frozen(folder / f"{kind}.pb", lambda x, model=model: model(x), tf.TensorSpec([None, 6, 3], tf.float32))
        tf.saved_model.save(model, str(folder / kind))
        models[kind] = model
    return models, folder


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("form", ["frozen", "saved"])
def test_keras_recurrent_models_match_tensorflow(recurrent, kind, form):
    models, folder = recurrent
    loaded = tractile.load(folder / (f"{kind}.pb" if form == "frozen" else kind))
    rng = np.random.default_rng(7)
    for batch in (1, 3):
        x = rng.standard_normal((batch, 6, 3)).astype(np.float32)
        assert_close(loaded.run([x])[0], models[kind](x).numpy(), what=f"{kind} {form} batch {batch}")


@pytest.fixture(scope="module")
def cond_and_loop(tmp_path_factory):
    tf = tensorflow()

    def function(x, n):
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0 + 1.0, lambda: tf.nn.relu(x) - 3.0)

        def body(i, acc, ta):
            acc = acc * 0.5 + tf.sin(y) * tf.cast(i, tf.float32)
            return i + 1, acc, ta.write(i, tf.reduce_mean(acc))

        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        _, acc, ta = tf.while_loop(lambda i, acc, ta: i < n, body, (tf.constant(0), y, ta))
        return acc, ta.stack()

    specs = (tf.TensorSpec([None, 4], tf.float32), tf.TensorSpec([], tf.int32))
    path = tmp_path_factory.mktemp("cond") / "cond_loop.pb"
    frozen, outputs = write_frozen(path, function, *specs)
    return tf.function(function), path, outputs


@pytest.mark.parametrize("sign,steps", [(1.0, 3), (-1.0, 5), (1.0, 0)])
def test_cond_and_while_loop_match_tensorflow(cond_and_loop, sign, steps):
    function, path, outputs = cond_and_loop
    from tractile.formats.tf import load_tf

    model = load_tf(path, outputs=outputs).into_optimized()
    x = (np.abs(np.random.default_rng(steps).standard_normal((2, 4))) * sign).astype(np.float32)
    expected = [t.numpy() for t in function(x, np.int32(steps))]
    actual = model.run([x, np.array(steps, np.int32)])
    for index, (got, want) in enumerate(zip(actual, expected)):
        assert_close(got, want, what=f"output {index}")
