"""Channels-last depthwise convolution (small maps of many channels): the same values as the
phase-plane algorithm, bit for bit, and as onnxruntime."""
import numpy as np
import pytest

from tractile.ops import Relu, Window
from tractile.ops import conv_depthwise as dw
from tractile.ops.conv import Conv

from .single_node import check_node

RNG = np.random.default_rng(29)

WINDOWS = [  # kernel, strides, dilations, pads (begin..., end...)
    ((3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),
    ((3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),
    ((3, 3), (2, 2), (1, 1), (0, 0, 0, 0)),
    ((5, 3), (3, 2), (1, 2), (2, 0, 1, 2)),
    ((3, 3), (1, 1), (2, 3), (2, 3, 2, 3)),
    ((2, 2), (2, 2), (1, 1), (0, 0, 1, 1)),
    ((1, 1), (2, 1), (1, 1), (0, 0, 0, 0)),
    ((3, 3), (1, 1), (1, 1), (0, 0, -1, -2)),  # negative end pads crop the input
]


def _both(x, w, bias, window, activation=None):
    op = Conv(Window.make(*window), group=x.shape[1])
    plan = op._depthwise_plan(x.shape, w.shape)
    return dw.depthwise_channels_last(x, w, bias, plan, activation), _planes(x, w, bias, plan, activation)


def _planes(x, w, bias, plan, activation):
    saved = dw.CHANNELS_LAST_POSITIONS
    dw.CHANNELS_LAST_POSITIONS = -1
    try:
        return dw.depthwise(x, w, bias, plan, activation)
    finally:
        dw.CHANNELS_LAST_POSITIONS = saved


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("shape", [(1, 64, 9, 11), (2, 70, 6, 7), (1, 3, 5, 5)])
def test_channels_last_gives_the_phase_planes_values_bit_for_bit(window, shape):
    x = RNG.standard_normal(shape).astype(np.float32)
    w = RNG.standard_normal((shape[1], 1, *window[0])).astype(np.float32)
    bias = RNG.standard_normal(shape[1]).astype(np.float32)
    for b, activation in ((bias, Relu()), (None, None)):
        ours, planes = _both(x, w, b, window, activation)
        assert ours.shape == planes.shape
        np.testing.assert_array_equal(ours, planes)


def test_channels_last_one_dimensional():
    x = RNG.standard_normal((1, 64, 12)).astype(np.float32)
    w = RNG.standard_normal((64, 1, 3)).astype(np.float32)
    ours, planes = _both(x, w, None, ((3,), (1,), (2,), (4, 0)))
    np.testing.assert_array_equal(ours, planes)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
    {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"kernel_shape": [5, 3], "pads": [2, 0, 1, 2], "strides": [3, 2], "dilations": [1, 2]},
])
def test_small_maps_of_many_channels_match_onnxruntime(attrs):
    shape = (2, 96, 14, 15)  # 96 channels, at most 210 output positions: channels-last
    x = RNG.standard_normal(shape).astype(np.float32)
    w = RNG.standard_normal((96, 1, *attrs["kernel_shape"])).astype(np.float32)
    check_node("Conv", {"x": x, "w": w, "b": RNG.standard_normal(96).astype(np.float32)},
               group=96, rtol=1e-5, atol=1e-5, **attrs)
