"""Pooling: MaxPool (with indices), AveragePool, LpPool, GlobalLpPool, MaxUnpool."""
import numpy as np
import pytest

import tractile
from tractile.errors import AnalysisError

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value

RNG = np.random.default_rng(23)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def both(proto, inputs):
    return tractile.load(proto).run(list(inputs)), run_onnxruntime(proto, list(inputs))


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
    {"kernel_shape": [2, 3], "storage_order": 1},
    {"kernel_shape": [2, 2], "dilations": [2, 1], "ceil_mode": 1, "strides": [2, 2]},
])
def test_max_pool_indices_match_onnxruntime(attrs):
    x = rand(2, 3, 7, 6)
    proto = model([node("MaxPool", ["x"], ["y", "i"], **attrs)], [value("x", "f32", [2, 3, 7, 6])],
                  [value("y"), value("i", "i64")], opset=12)
    ours, theirs = both(proto, [x])
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])
    if not attrs.get("storage_order"):
        np.testing.assert_array_equal(x.reshape(-1)[ours[1]], ours[0])


def test_max_pool_indices_by_hand_are_flat_over_batch_and_channels():
    x = np.arange(2 * 2 * 4, dtype=np.float32).reshape(2, 2, 4)
    proto = model([node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2], strides=[2])], [value("x", "f32", [2, 2, 4])],
                  [value("y"), value("i", "i64")], opset=12)
    y, indices = tractile.load(proto).run([x])
    np.testing.assert_array_equal(indices, [[[1, 3], [5, 7]], [[9, 11], [13, 15]]])
    np.testing.assert_array_equal(y, indices.astype(np.float32))


def test_lp_pool_and_global_lp_pool():
    x = rand(1, 2, 6, 5)
    proto = model([node("LpPool", ["x"], ["y"], kernel_shape=[3, 2], p=3, pads=[1, 0, 1, 1], strides=[2, 1]),
                   node("GlobalLpPool", ["x"], ["g"], p=1)],
                  [value("x", "f32", [1, 2, 6, 5])], [value("y"), value("g")], opset=18)
    ours, theirs = both(proto, [x])
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
    np.testing.assert_allclose(ours[1][..., 0, 0], np.abs(x).sum(axis=(2, 3)), rtol=1e-5)


def test_average_pool_count_include_pad_matches_onnxruntime():
    x = rand(1, 1, 5, 5)
    proto = model([node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 2, 2], strides=[2, 2],
                        count_include_pad=1, ceil_mode=1)], [value("x", "f32", [1, 1, 5, 5])], [value("y")],
                  opset=19)
    ours, theirs = both(proto, [x])
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)


def test_max_unpool_inverts_max_pool():
    x = rand(1, 2, 4, 6)
    proto = model([node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2]),
                   node("MaxUnpool", ["y", "i"], ["u"], kernel_shape=[2, 2], strides=[2, 2])],
                  [value("x", "f32", [1, 2, 4, 6])], [value("u")], opset=11)
    (unpooled,) = tractile.load(proto).run([x])
    pooled = x.reshape(1, 2, 2, 2, 3, 2).max(axis=(3, 5))
    kept = unpooled != 0
    assert kept.sum() == pooled.size
    np.testing.assert_array_equal(np.sort(unpooled[kept]), np.sort(pooled.reshape(-1)))
    np.testing.assert_array_equal(unpooled[kept], x[kept])


def test_max_unpool_with_output_shape_pads_at_the_end():
    y = np.array([[[[5.0, 6.0], [7.0, 8.0]]]], np.float32)
    indices = np.array([[[[5, 7], [13, 15]]]], np.int64)
    proto = model([node("MaxUnpool", ["y", "i", "s"], ["u"], kernel_shape=[2, 2], strides=[2, 2])],
                  [value("y", "f32", [1, 1, 2, 2]), value("i", "i64", [1, 1, 2, 2]), value("s", "i64", [4])],
                  [value("u")], opset=11)
    (u,) = tractile.load(proto).run([y, indices, np.array([1, 1, 5, 5], np.int64)])
    expected = np.zeros((1, 1, 5, 5), np.float32)
    expected[0, 0, 1, 1], expected[0, 0, 1, 3], expected[0, 0, 3, 1], expected[0, 0, 3, 3] = 5, 6, 7, 8
    np.testing.assert_array_equal(u, expected)


def test_pool_rank_mismatch_is_an_analysis_error():
    proto = model([node("LpPool", ["x"], ["y"], kernel_shape=[2, 2])], [value("x", "f32", [1, 2, 5])],
                  [value("y")], opset=18)
    with pytest.raises(AnalysisError, match="2-d kernel needs a rank 4 input"):
        tractile.load(proto)
