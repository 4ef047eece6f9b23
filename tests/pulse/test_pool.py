"""Pooling along the streamed axis (max, average with either count rule, Lp) and global pooling."""
import numpy as np
import pytest

from tractile import AnalysisError
from tractile.ops import AveragePool, GlobalPool, MaxPool, Relu, Window
from tractile.ops.pool import LpPool

from .helpers import LENGTH, Builder, assert_streams_like_batch, random_input


def pooled(op, spec="1,3,T,f32", relu_first=False):
    b = Builder(spec)
    x = b.conv("front", b.x, 3, 3, 3, pads=(1, 1)) if relu_first else b.x
    if relu_first:
        x = b.node("relu", Relu(), x)
    return b.output(b.node("pool", op, x))


@pytest.mark.parametrize("window", [
    Window.make((3,), (1,), None, (2, 0)),
    Window.make((4,), (2,), None, (1, 2)),
    Window.make((3,), (3,), (2,), None),
    Window.make((2,), (2,), None, (0, 1), ceil_mode=True),
])
@pytest.mark.parametrize("late", [False, True])
def test_max_pool_along_time(window, late):
    model = pooled(MaxPool(window), relu_first=late)
    x = -np.abs(random_input((1, 3, LENGTH)))  # all negative: padding must not leak zeros
    stride = window.strides[0]
    pulses = (1, 2, 7, 16) if stride == 1 else (stride, 4 * stride)
    assert_streams_like_batch(model, [x], pulses=pulses)


@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("window", [
    Window.make((3,), (1,), None, (1, 1)),
    Window.make((5,), (2,), None, (4, 0)),
    Window.make((3,), (2,), (2,), (1, 3)),
    Window.make((3,), (2,), None, (1, 0), ceil_mode=True),
])
def test_average_pool_along_time_counts_like_the_batch_model(window, count_include_pad):
    model = pooled(AveragePool(window, count_include_pad), relu_first=True)
    stride = window.strides[0]
    pulses = (1, 2, 7, 16) if stride == 1 else (2, 4, 16)
    assert_streams_like_batch(model, [random_input((1, 3, LENGTH))], pulses=pulses)


def test_two_dimensional_pools_with_frequency_padding():
    b = Builder("1,2,7,T,f32")
    y = b.node("max", MaxPool(Window.make((3, 2), (2, 1), None, (1, 1, 1, 0))), b.x)
    y = b.node("avg", AveragePool(Window.make((2, 3), (1, 2), None, (1, 1, 0, 1))), y)
    model = b.output(y)
    assert_streams_like_batch(model, [random_input((1, 2, 7, LENGTH))], pulses=(2, 4, 16))


def test_lp_pool_along_time():
    model = pooled(LpPool(Window.make((3,), (1,), None, (1, 1)), 2), relu_first=True)
    assert_streams_like_batch(model, [random_input((1, 3, LENGTH))])


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_global_pooling_over_time_is_refused(mode):
    b = Builder("1,3,T,f32")
    model = b.output(b.node("gap", GlobalPool(mode), b.node("relu", Relu(), b.x)))
    with pytest.raises(AnalysisError, match=rf'"gap" \(GlobalPool\).*global {mode} pooling.*streamed axis.*whole '
                                            "stream"):
        model.pulse("T", 4)
