"""1-D convolutions of one sequence run as one product over gathered taps (Conv._taps_1d)."""
import numpy as np
import pytest

from tractile.ops import Conv, Relu, Window

from .single_node import check_node

RNG = np.random.default_rng(29)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3], "pads": [2, 0]},
    {"kernel_shape": [3], "dilations": [8], "pads": [16, 0]},
    {"kernel_shape": [3], "dilations": [128], "pads": [256, 0]},
    {"kernel_shape": [5], "pads": [1, 3]},
    {"kernel_shape": [2], "auto_pad": "SAME_UPPER"},
    {"kernel_shape": [4], "dilations": [3]},
    {"kernel_shape": [7], "pads": [40, 0], "dilations": [9]},
])
@pytest.mark.parametrize("frames", [5, 60])
@pytest.mark.parametrize("with_bias", [True, False])
def test_taps_1d_matches_onnxruntime(attrs, frames, with_bias):
    kernel = attrs["kernel_shape"][0]
    length = frames + (kernel - 1) * attrs.get("dilations", [1])[0]
    inputs = {"x": rand(1, 6, length), "w": rand(5, 6, kernel), "b": rand(5) if with_bias else None}
    check_node("Conv", inputs, constants=("w", "b"), rtol=1e-5, atol=1e-5, **attrs)


def test_cached_weights_follow_new_arrays():
    """The [W | b] matrix is kept for read-only constants only, and only while they come back."""
    op = Conv(Window.make((3,), None, None, (2, 0)), activation=Relu())
    x = rand(1, 4, 30)
    first, second = [rand(3, 4, 3), rand(3)], [rand(3, 4, 3), rand(3)]
    for array in first + second:
        array.flags.writeable = False
    plain = Conv(Window.make((3,), None, None, (2, 0)))
    padded = np.concatenate([np.zeros((1, 4, 2), np.float32), x], axis=2)
    for w, b in (first, second, first):
        linear = sum(w[:, :, k].astype(np.float64) @ padded[0, :, k:k + 30] for k in range(3)) + b[:, None]
        np.testing.assert_allclose(op.eval([x, w, b])[0][0], np.maximum(linear, 0), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(plain.eval([x, w, b])[0][0], linear, rtol=1e-5, atol=1e-5)
