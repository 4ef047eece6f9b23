"""Depthwise and channel-multiplier convolutions (ops/conv_depthwise.py) against onnxruntime."""
import numpy as np
import pytest

from tractile.ops import Clip, Conv, LeakyRelu, Relu, Sigmoid, Window

from .single_node import check_node

RNG = np.random.default_rng(23)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2]},
    {"kernel_shape": [5, 3], "pads": [2, 0, 1, 2], "strides": [3, 2], "dilations": [1, 2]},
    {"kernel_shape": [3, 3], "dilations": [2, 3], "pads": [2, 3, 2, 3]},
    {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"kernel_shape": [4, 4], "auto_pad": "SAME_LOWER", "strides": [2, 3]},
    {"kernel_shape": [1, 1], "strides": [2, 1]},
    {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 1, 1]},
])
@pytest.mark.parametrize("shape", [(1, 8, 13, 11), (2, 5, 7, 9)])
def test_depthwise_2d_matches_onnxruntime(attrs, shape):
    channels = shape[1]
    kernel = attrs["kernel_shape"]
    check_node("Conv", {"x": rand(*shape), "w": rand(channels, 1, *kernel), "b": rand(channels)},
               group=channels, rtol=1e-5, atol=1e-5, **attrs)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3], "pads": [2, 0]},
    {"kernel_shape": [3], "dilations": [4], "pads": [8, 0]},
    {"kernel_shape": [5], "strides": [3], "pads": [1, 2]},
])
def test_depthwise_1d_matches_onnxruntime(attrs):
    x = rand(2, 6, 40)
    check_node("Conv", {"x": x, "w": rand(6, 1, attrs["kernel_shape"][0]), "b": rand(6)}, group=6,
               rtol=1e-5, atol=1e-5, **attrs)


@pytest.mark.parametrize("multiplier", [2, 3])
def test_channel_multiplier_matches_onnxruntime(multiplier):
    x = rand(1, 4, 10, 12)
    check_node("Conv", {"x": x, "w": rand(4 * multiplier, 1, 3, 3)}, group=4, kernel_shape=[3, 3],
               pads=[1, 1, 1, 1], strides=[1, 2], rtol=1e-5, atol=1e-5)


def direct_depthwise(x, w, pads):
    """The sum over taps in float64, stride 1."""
    kh, kw = w.shape[2:]
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads, pads), (pads, pads)))
    rows, cols = padded.shape[2] - kh + 1, padded.shape[3] - kw + 1
    out = np.zeros((x.shape[0], x.shape[1], rows, cols))
    for i in range(kh):
        for j in range(kw):
            out += padded[:, :, i:i + rows, j:j + cols] * w[None, :, 0, i, j, None, None]
    return out


def test_depthwise_f64_and_f16():
    x, w = rand(1, 3, 9, 9, dtype=np.float64), rand(3, 1, 3, 3, dtype=np.float64)
    got = Conv(Window.make((3, 3), None, None, (1, 1, 1, 1)), group=3).eval([x, w])[0]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, direct_depthwise(x, w, 1), rtol=1e-12, atol=1e-12)
    check_node("Conv", {"x": rand(1, 3, 9, 9, dtype=np.float16), "w": rand(3, 1, 3, 3, dtype=np.float16)},
               group=3, kernel_shape=[3, 3], strides=[2, 2], rtol=2e-3, atol=2e-3)


def test_fused_activation_and_blocks_of_channels():
    """Many channels over a large map run in several blocks; the fused ReLU applies to each."""
    x, w, b = rand(1, 40, 60, 70), rand(40, 1, 3, 3), rand(40)
    op = Conv(Window.make((3, 3), (1, 1), (1, 1), (1, 1, 1, 1)), group=40, activation=Relu())
    got = op.eval([x, w, b])[0]
    plain = Conv(Window.make((3, 3), (1, 1), (1, 1), (1, 1, 1, 1)), group=40)
    reference = direct_depthwise(x, w, 1) + b[None, :, None, None]
    assert op._depthwise_plan(x.shape, w.shape).block < 40
    np.testing.assert_allclose(got, np.maximum(reference, 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(plain.eval([x, w, b])[0], reference, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("activation", [Relu(), Sigmoid(), LeakyRelu(0.1), Clip(0.0, 6.0)])
@pytest.mark.parametrize("stride", [1, 2])
def test_fused_activations_equal_the_activation_applied_after(activation, stride):
    """A fused ReLU is applied by the copy out of the wide accumulator, the others in place on
    its cropped view: either way the same values as the activation applied to the plain output."""
    x, w, b = rand(2, 6, 17, 13) * 4, rand(6, 1, 3, 3), rand(6)
    window = Window.make((3, 3), (stride, stride), (1, 1), (1, 1, 1, 1))
    plain = Conv(window, group=6).eval([x, w, b])[0]
    fused = Conv(window, group=6, activation=activation).eval([x, w, b])[0]
    np.testing.assert_array_equal(fused, activation.eval([plain])[0])
