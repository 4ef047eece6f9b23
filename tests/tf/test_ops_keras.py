"""Keras layers as TensorFlow emits them (frozen with a symbolic batch): the op mix of real
models — layer and group normalization, attention with a causal mask (MatrixBandPart or its
equivalent), embeddings, causal dilated Conv1D, separable and 3-d convolutions, transposed
convolutions whose output size is computed from the batch, bidirectional and masked LSTMs,
padding, cropping and pooling — against the Keras model itself, at two batch sizes."""
from __future__ import annotations

import numpy as np
import pytest

import tractile

from .oracle import assert_close, freeze
from .test_ops import tf

K = tf.keras.layers

LAYERS = {
    "layer_norm_dense_gelu": (lambda x: K.Dense(3, activation="gelu")(K.LayerNormalization()(x)), (5, 6)),
    "causal_attention": (lambda x: K.MultiHeadAttention(2, 3)(x, x, use_causal_mask=True), (5, 6)),
    "dot_attention": (lambda x: K.Attention()([x, x]), (4, 3)),
    "embedding": (lambda x: K.Embedding(10, 4)(x), (5,)),
    "causal_dilated_conv1d": (lambda x: K.Conv1D(4, 3, dilation_rate=2, padding="causal")(x), (9, 3)),
    "separable_conv": (lambda x: K.SeparableConv2D(4, 3, dilation_rate=2, padding="same")(x), (8, 8, 3)),
    "pad_crop_pool": (lambda x: K.GlobalAveragePooling2D()(K.ZeroPadding2D(1)(K.Cropping2D(1)(x))), (8, 8, 3)),
    "pool1d": (lambda x: K.AveragePooling1D(2)(K.MaxPooling1D(2, padding="same")(x)), (9, 3)),
    "conv2d_transpose": (lambda x: K.Conv2DTranspose(2, 3, strides=2)(x), (4, 4, 3)),
    "conv1d_transpose": (lambda x: K.Conv1DTranspose(2, 3, strides=2, padding="same")(x), (4, 3)),
    "conv3d_pool3d": (lambda x: K.MaxPooling3D(2)(K.Conv3D(2, 3, padding="same")(x)), (4, 4, 4, 2)),
    "group_norm_prelu": (lambda x: K.PReLU()(K.GroupNormalization(2)(x)), (4, 4, 6)),
    "bidirectional_lstm": (lambda x: K.Bidirectional(K.LSTM(3, return_sequences=True))(x), (5, 4)),
    "masked_gru": (lambda x: K.GRU(3)(K.Masking()(x)), (5, 4)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_keras_layers_match_tensorflow(tmp_path, name):
    tf.keras.utils.set_random_seed(11)
    build, shape = LAYERS[name]
    dtype = tf.int32 if name == "embedding" else tf.float32
    inputs = tf.keras.Input(shape, dtype=dtype)
    model = tf.keras.Model(inputs, build(inputs))
    graph_def, _, _ = freeze(lambda x: model(x), tf.TensorSpec((None, *shape), dtype))
    path = tmp_path / f"{name}.pb"
    path.write_bytes(graph_def.SerializeToString())
    loaded = tractile.load(path)
    rng = np.random.default_rng(3)
    for batch in (1, 3):
        if dtype == tf.int32:
            x = rng.integers(0, 10, (batch, *shape)).astype(np.int32)
        else:
            x = rng.standard_normal((batch, *shape)).astype(np.float32)
        if name == "masked_gru":
            x[:, 3:] = 0.0  # masked steps
        assert_close(loaded.run([x])[0], model(x).numpy(), what=f"batch {batch}")
