"""A Keras CNN (Conv2D, DepthwiseConv2D, BatchNorm, pooling, Dense, Softmax) as a frozen graph and
as a SavedModel: tractile's outputs against TensorFlow's, the batch dim staying symbolic."""
from __future__ import annotations

import numpy as np
import pytest

import tractile
from tractile.dim import TDim

from .oracle import assert_close, tensorflow, write_frozen


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    tf = tensorflow()
    tf.keras.utils.set_random_seed(3)
    inputs = tf.keras.Input((9, 8, 3))
    x = tf.keras.layers.Conv2D(6, 3, padding="same", activation="relu")(inputs)
    x = tf.keras.layers.DepthwiseConv2D(3, strides=2, depth_multiplier=2)(x)
    x = tf.keras.layers.BatchNormalization()(x)
    x = tf.keras.layers.ReLU(max_value=6.0)(x)
    x = tf.keras.layers.AveragePooling2D(2, padding="same")(x)
    x = tf.keras.layers.Conv2D(4, 1, strides=1)(x)
    x = tf.keras.layers.MaxPooling2D(pool_size=(1, 2))(x)
    x = tf.keras.layers.Flatten()(x)
    outputs = tf.keras.layers.Dense(5, activation="softmax")(x)
    model = tf.keras.Model(inputs, outputs)
    bn = model.layers[3]
    rng = np.random.default_rng(0)
    bn.set_weights([w + rng.uniform(0.1, 1, w.shape).astype(np.float32) for w in bn.get_weights()])
    folder = tmp_path_factory.mktemp("cnn")
    frozen, _ = write_frozen(folder / "cnn.pb", lambda x: model(x), tf.TensorSpec([None, 9, 8, 3], tf.float32))
    tf.saved_model.save(model, str(folder / "saved"))
    return model, folder, frozen


def test_frozen_cnn_matches_tensorflow_and_keeps_the_batch_symbolic(cnn):
    model, folder, _ = cnn
    loaded = tractile.load(folder / "cnn.pb")
    batch = loaded.input_fact(0).shape[0]
    assert isinstance(batch, TDim) and batch.symbols()
    assert loaded.output_fact(0).shape[0] == batch
    assert loaded.output_fact(0).shape[1] == 5
    rng = np.random.default_rng(1)
    for size in (1, 3):
        x = rng.standard_normal((size, 9, 8, 3)).astype(np.float32)
        assert_close(loaded.run([x])[0], model(x).numpy(), what=f"batch {size}")


def test_saved_model_cnn_matches_tensorflow(cnn):
    tf = tensorflow()
    model, folder, _ = cnn
    loaded = tractile.load(folder / "saved")
    assert loaded.input_fact(0).shape[1:] == (9, 8, 3)
    x = np.random.default_rng(2).standard_normal((2, 9, 8, 3)).astype(np.float32)
    signature = tf.saved_model.load(str(folder / "saved")).signatures["serving_default"]
    expected = list(signature(tf.constant(x)).values())[0].numpy()
    assert_close(loaded.run([x])[0], expected)


def test_a_fixed_input_shape_given_at_load_time(cnn):
    model, folder, _ = cnn
    loaded = tractile.load(folder / "cnn.pb", inputs=["2,9,8,3,f32"])
    assert loaded.output_fact(0).shape == (2, 5)
    x = np.random.default_rng(4).standard_normal((2, 9, 8, 3)).astype(np.float32)
    assert_close(loaded.run([x])[0], model(x).numpy())
