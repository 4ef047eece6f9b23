"""Convolutions: Conv edge cases and ConvTranspose against onnxruntime and by hand."""
import numpy as np
import pytest

import tractile
from tractile.errors import AnalysisError

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value

RNG = np.random.default_rng(17)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def compare(proto, inputs, rtol=1e-5, atol=1e-5):
    (ours,) = tractile.load(proto).run(list(inputs))
    (theirs,) = run_onnxruntime(proto, list(inputs))
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)
    return ours


def conv_transpose_model(x_shape, w_shape, bias=False, **attrs):
    inputs = ["x", "w"] + (["b"] if bias else [])
    infos = [value("x", "f32", list(x_shape)), value("w", "f32", list(w_shape))]
    if bias:
        infos.append(value("b", "f32", [w_shape[1] * attrs.get("group", 1)]))
    return model([node("ConvTranspose", inputs, ["y"], **attrs)], infos, [value("y")], opset=17)


@pytest.mark.parametrize("attrs", [
    {},
    {"strides": [2, 3], "pads": [1, 0, 2, 1]},
    {"strides": [2, 2], "output_padding": [1, 0]},
    {"dilations": [2, 1], "strides": [1, 2]},
    {"group": 2, "strides": [2, 2]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"auto_pad": "SAME_LOWER", "strides": [3, 2]},
    {"output_shape": [8, 7], "strides": [2, 2]},
])
def test_conv_transpose_2d_matches_onnxruntime(attrs):
    group = attrs.get("group", 1)
    x, w, b = rand(2, 4, 4, 3), rand(4, 3, 3, 2), rand(3 * group)
    compare(conv_transpose_model(x.shape, w.shape, bias=True, **attrs), [x, w, b])


def test_conv_transpose_1d_and_3d():
    x, w = rand(1, 2, 5), rand(2, 3, 4)
    compare(conv_transpose_model(x.shape, w.shape, strides=[3]), [x, w])
    x, w = rand(1, 1, 2, 3, 2), rand(1, 2, 2, 2, 3)
    compare(conv_transpose_model(x.shape, w.shape, strides=[1, 2, 1]), [x, w])


def test_conv_transpose_by_hand():
    x = np.array([[[1.0, 2.0]]], np.float32)
    w = np.array([[[1.0, 10.0, 100.0]]], np.float32)
    (y,) = tractile.load(conv_transpose_model(x.shape, w.shape, strides=[2])).run([x, w])
    np.testing.assert_array_equal(y, [[[1, 10, 102, 20, 200]]])


def test_conv_transpose_channel_mismatch_is_an_analysis_error():
    with pytest.raises(AnalysisError, match="input has 3 channels, the kernel expects 2"):
        tractile.load(conv_transpose_model((1, 3, 4, 4), (2, 1, 3, 3)))


@pytest.mark.parametrize("attrs", [
    {"pads": [1, 2, 0, 1], "strides": [2, 1]},
    {"auto_pad": "SAME_LOWER", "strides": [2, 2]},
    {"dilations": [2, 2], "group": 2},
])
def test_conv_matches_onnxruntime(attrs):
    group = attrs.get("group", 1)
    x, w = rand(1, 4, 7, 6), rand(4, 4 // group, 3, 3)
    proto = model([node("Conv", ["x", "w"], ["y"], **attrs)], [value("x", "f32", [1, 4, 7, 6]),
                                                                value("w", "f32", list(w.shape))], [value("y")])
    compare(proto, [x, w], rtol=1e-4)
