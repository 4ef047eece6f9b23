"""Convolutions along the streamed axis: dilation, padding on either side, stride, residuals."""
import numpy as np
import pytest

from tractile import AnalysisError
from tractile.ops import Add, Conv, Relu, Window

from .helpers import LENGTH, Builder, assert_streams_like_batch, random_input, wavenet


def test_wavenet_dilated_causal_stack_streams_without_delay():
    model = wavenet()
    pulsed = assert_streams_like_batch(model, [random_input((1, 4, LENGTH))])
    assert {p.delay for p in pulsed} == {0}
    # the deepest layer keeps its dilation (8) worth of frames: buffers hold at least the receptive field
    assert all(p.start().memory_bytes() >= 4 * 4 * (1 + 2 + 4 + 8) for p in pulsed)


def test_non_causal_conv_with_right_context_adds_delay():
    b = Builder()
    y = b.conv("c1", b.x, 4, 6, 5, pads=(2, 2))
    y = b.node("relu", Relu(), y)
    y = b.conv("c2", y, 6, 3, 3, dilation=2, pads=(1, 3))
    model = b.output(y)
    pulsed = assert_streams_like_batch(model, [random_input((1, 4, LENGTH))])
    assert {p.delay for p in pulsed} == {2 + 3}


def test_valid_conv_delay_is_its_extent():
    b = Builder()
    model = b.output(b.conv("c", b.x, 4, 2, 3, dilation=3))
    pulsed = assert_streams_like_batch(model, [random_input((1, 4, LENGTH))])
    assert {p.delay for p in pulsed} == {6}


def test_strided_convs_divide_the_pulse():
    b = Builder()
    y = b.conv("c1", b.x, 4, 6, 4, stride=2, pads=(1, 1))
    y = b.node("relu", Relu(), y)
    y = b.conv("c2", y, 6, 3, 3, stride=2, pads=(2, 0))
    model = b.output(y)
    pulsed = assert_streams_like_batch(model, [random_input((1, 4, LENGTH))], pulses=(4, 8, 16))
    assert [p.output_pulses[0] for p in pulsed] == [1, 2, 4]
    assert_streams_like_batch(model, [random_input((1, 4, 50), seed=3)], pulses=(4, 12))


@pytest.mark.parametrize("pulse", [1, 2, 7])
def test_stride_needs_a_pulse_multiple(pulse):
    b = Builder()
    y = b.conv("c1", b.x, 4, 4, 3, stride=2, pads=(1, 1))
    model = b.output(b.conv("c2", y, 4, 4, 3, stride=2))
    with pytest.raises(AnalysisError, match=r'"c\d" \(Conv\).*stride 2.*multiple of 4' if pulse == 2
                       else r'"c1" \(Conv\).*stride 2.*multiple of 2'):
        model.pulse("T", pulse)


def test_stride_larger_than_kernel():
    b = Builder()
    model = b.output(b.conv("c", b.x, 4, 3, 2, stride=3, pads=(1, 0)))
    assert_streams_like_batch(model, [random_input((1, 4, LENGTH))], pulses=(3, 6, 15))


def test_residual_blocks_whose_branches_have_different_delays():
    b = Builder()
    x = b.x
    for index, (kernel, pads) in enumerate([(3, (1, 1)), (5, (0, 0)), (3, (2, 0)), (4, (0, 3))]):
        branch = b.node(f"relu{index}", Relu(), b.conv(f"conv{index}", x, 4, 4, kernel, pads=pads))
        if pads == (0, 0):  # a valid conv shortens the stream: crop the shortcut to match
            from tractile.ops import Slice
            shortcut = b.node(f"crop{index}", Slice(), x, b.model.add_const("s", np.array([2])),
                              b.model.add_const("e", np.array([-2])), b.model.add_const("a", np.array([2])))
        else:
            shortcut = x
        x = b.node(f"res{index}", Add(), branch, shortcut)
    model = b.output(x)
    pulsed = assert_streams_like_batch(model, [random_input((1, 4, LENGTH))])
    assert {p.delay for p in pulsed} == {1 + 4 + 0 + 3}


def test_conv2d_streams_along_time_with_padding_on_frequency():
    b = Builder("1,2,6,T,f32")
    w = b.weights("w", 3, 2, 3, 2)
    y = b.node("conv", Conv(Window.make((3, 2), (2, 1), (1, 2), (1, 2, 1, 0))), b.x, w, b.weights("b", 3))
    y = b.node("relu", Relu(), y)
    w2 = b.weights("w2", 2, 3, 1, 3)
    y = b.node("conv2", Conv(Window.make((1, 3), None, None, None, auto_pad="SAME_UPPER")), y, w2)
    model = b.output(y)
    pulsed = assert_streams_like_batch(model, [random_input((1, 2, 6, LENGTH))])
    assert {p.delay for p in pulsed} == {1}


def test_depthwise_conv_along_time():
    b = Builder("1,4,T,f32")
    model = b.output(b.conv("dw", b.x, 4, 4, 3, dilation=2, pads=(3, 1), group=4))
    assert_streams_like_batch(model, [random_input((1, 4, LENGTH))])


def test_conv_streams_along_batch_axis_as_it_is():
    b = Builder("T,4,9,f32")
    model = b.output(b.conv("c", b.x, 4, 2, 3, pads=(1, 1)))
    pulsed = assert_streams_like_batch(model, [random_input((LENGTH, 4, 9))])
    assert {p.delay for p in pulsed} == {0}


def test_same_padding_with_stride_is_refused():
    b = Builder()
    model = b.output(b.node("c", Conv(Window.make((3,), (2,), None, None, "SAME_UPPER")), b.x,
                            b.const("w", np.ones((2, 4, 3)))))
    with pytest.raises(AnalysisError, match=r'"c" \(Conv\).*SAME_UPPER.*stream'):
        model.pulse("T", 4)
