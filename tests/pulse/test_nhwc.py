"""NHWC convolutions and pools (TFLite's layout) streamed along H or W, float32: a same-padded
convolution, a depthwise one, then an average, an L2 and a max pool, each padded along time or
not."""
import pytest

from tests.tflite.builder import GraphBuilder, Window2D

from .helpers import LENGTH, assert_streams_like_batch, random_input


def nhwc_stack(time_axis: int):
    """[1, T, 4, 3] (time on H) or [1, 6, T, 3] (time on W), windows sized by ``time_axis``."""
    g = GraphBuilder()
    shape = (1, 12, 4, 3) if time_axis == 1 else (1, 6, 12, 3)
    rng = random_input((6, 3, 3, 3), seed=3)
    x = g.input("x", "f32", shape)
    x = g.conv("conv", [x, g.const("w", rng), g.const("b", random_input((6,), seed=4))], Window2D("SAME", 1, 1),
               activation="RELU")
    w = g.const("dw", random_input((1, 3, 2, 6), seed=5))
    x = g.depthwise("dw", [x, w], Window2D("VALID", 1, 1, 2, 1) if time_axis == 1 else Window2D("VALID", 1, 1, 1, 2))
    x = g.pool("avg", "average", x, Window2D("SAME", 1, 1), 3, 3)
    x = g.pool("l2", "l2", x, Window2D("VALID", 1, 1), 2, 2)
    x = g.pool("max", "max", x, Window2D("VALID", 2, 1) if time_axis == 1 else Window2D("VALID", 1, 2), 2, 2,
               activation="RELU6")
    model = g.outputs(x)
    spec = "1,T,4,3,f32" if time_axis == 1 else "1,6,T,3,f32"
    return model.set_input_fact(0, spec)


@pytest.mark.parametrize("time_axis", [1, 2])
def test_nhwc_windows_stream_like_the_batch_model(time_axis):
    model = nhwc_stack(time_axis).into_optimized()
    shape = (1, LENGTH, 4, 3) if time_axis == 1 else (1, 6, LENGTH, 3)
    pulsed = assert_streams_like_batch(model, [random_input(shape)], pulses=(2, 4))
    assert all(p.output_streams[0].axis == time_axis for p in pulsed)
