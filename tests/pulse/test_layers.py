"""Element-wise ops, normalisations, products, reshapes, slicing and padding along a stream."""
import numpy as np
import pytest

from tractile import AnalysisError
from tractile.datum import DatumType
from tractile.ops import (
    Add,
    BatchNorm,
    Cast,
    Clip,
    Concat,
    Flatten,
    Gemm,
    MatMul,
    Mul,
    Pad,
    Reduce,
    Relu,
    Reshape,
    Sigmoid,
    Slice,
    Softmax,
    Squeeze,
    Transpose,
    Unsqueeze,
)
from tractile.ops.norm import LayerNorm
from tractile.pulse import Delay

from .helpers import LENGTH, Builder, assert_streams_like_batch, random_input


def ints(*values):
    return np.asarray(values, dtype=np.int64)


def test_element_wise_and_broadcasting_against_constants():
    b = Builder("1,4,T,f32")
    y = b.node("mul", Mul(), b.x, b.const("scale", np.arange(4).reshape(4, 1) + 1.0))
    y = b.node("add", Add(), b.const("offset", 0.5), y)
    y = b.node("clip", Clip(-1.0, 2.0), y)
    y = b.node("sig", Sigmoid(), y)
    y = b.node("cast", Cast(DatumType.F64), y)
    model = b.output(y)
    assert_streams_like_batch(model, [random_input((1, 4, LENGTH))])


def test_time_major_features_last_with_norms_and_products():
    """A (T, 1, F) stream through BatchNorm-like affine, LayerNorm, MatMul, Gemm, Softmax."""
    b = Builder("T,1,6,f32")
    y = b.node("ln", LayerNorm(-1), b.x, b.const("g", np.linspace(0.5, 1.5, 6)), b.const("beta", np.ones(6)))
    y = b.node("mm", MatMul(), y, b.weights("w", 6, 5))
    y = b.node("relu", Relu(), y)
    y = b.node("flat", Reshape(), y, b.model.add_const("shape", ints(-1, 5)))
    y = b.node("gemm", Gemm(alpha=0.5, trans_b=True), y, b.weights("w2", 3, 5), b.weights("c", 3))
    y = b.node("softmax", Softmax(-1), y)
    model = b.output(y)
    assert_streams_like_batch(model, [random_input((LENGTH, 1, 6))])


def test_batch_norm_and_reductions_over_other_axes():
    b = Builder("1,3,5,T,f32")
    y = b.node("bn", BatchNorm(1e-3), b.x, b.const("s", [1.0, 2.0, 0.5]), b.const("o", [0.1, 0.0, -0.1]),
               b.const("m", [0.0, 0.5, 1.0]), b.const("v", [1.0, 2.0, 3.0]))
    y = b.node("mean", Reduce("mean", (2,), keepdims=False), y)
    y = b.node("max", Reduce("max", (1,), keepdims=True), y)
    model = b.output(y)
    pulsed = assert_streams_like_batch(model, [random_input((1, 3, 5, LENGTH))])
    assert pulsed[0].output_streams[0].axis == 2


def test_transpose_squeeze_unsqueeze_flatten_follow_the_time_axis():
    b = Builder("1,4,T,f32")
    y = b.node("t", Transpose((0, 2, 1)), b.x)                            # 1,T,4
    y = b.node("sq", Squeeze(), y, b.model.add_const("a0", ints(0)))       # T,4
    y = b.node("unsq", Unsqueeze(), y, b.model.add_const("a1", ints(1, 3)))  # T,1,4,1
    y = b.node("flat", Flatten(2), y)                                       # T,4
    y = b.node("mm", MatMul(), y, b.weights("w", 4, 2))
    y = b.node("r", Reshape(), y, b.model.add_const("shape", ints(1, -1, 2, 1)))  # 1,T,2,1
    model = b.output(y)
    pulsed = assert_streams_like_batch(model, [random_input((1, 4, LENGTH))])
    assert pulsed[0].output_streams[0].axis == 1


def test_reshape_mixing_time_with_features_is_refused():
    b = Builder("1,4,T,f32")
    model = b.output(b.node("merge", Flatten(1), b.x))
    with pytest.raises(AnalysisError, match=r'"merge" \(Flatten\).*mixes the streamed axis'):
        model.pulse("T", 4)


def test_slice_along_time_and_features():
    b = Builder("1,4,T,f32")
    y = b.node("cut", Slice(), b.x, b.model.add_const("s", ints(3, 1)), b.model.add_const("e", ints(-2, 3)),
               b.model.add_const("a", ints(2, 1)))
    model = b.output(b.node("relu", Relu(), y))
    pulsed = assert_streams_like_batch(model, [random_input((1, 4, LENGTH))])
    assert {p.delay for p in pulsed} == {3}


@pytest.mark.parametrize("begin, end", [(3, 2), (0, 4), (2, 0), (-2, 1)])
def test_pad_along_time_and_features(begin, end):
    b = Builder("1,4,T,f32")
    front = b.node("relu", Relu(), b.conv("c", b.x, 4, 4, 3, pads=(0, 2)))  # a late input: delay 2
    y = b.node("pad", Pad(), front, b.model.add_const("p", ints(0, 1, begin, 0, 0, end)),
               b.const("v", 0.25))
    model = b.output(y)
    assert_streams_like_batch(model, [random_input((1, 4, LENGTH))])


def test_edge_padding_along_time_is_refused():
    b = Builder("1,4,T,f32")
    model = b.output(b.node("pad", Pad("edge"), b.x, b.model.add_const("p", ints(0, 0, 1, 0, 0, 0))))
    with pytest.raises(AnalysisError, match=r'"pad" \(Pad\).*edge padding.*only constant'):
        model.pulse("T", 4)


def test_concat_along_features_realigns_delays():
    b = Builder("1,4,T,f32")
    late = b.conv("right", b.x, 4, 3, 5, pads=(0, 4))
    early = b.conv("left", b.x, 4, 2, 3, pads=(2, 0))
    model = b.output(b.node("cat", Concat(1), late, early, b.x))
    pulsed = assert_streams_like_batch(model, [random_input((1, 4, LENGTH))])
    assert {p.delay for p in pulsed} == {4}


@pytest.mark.parametrize("axis, words", [(2, "along the streamed axis joins input 1"),
                                         (1, "along axis 1 joins input 1")])
def test_concat_with_a_constant_is_refused(axis, words):
    b = Builder("1,4,T,f32")
    shape = (1, 4, 3) if axis == 2 else (1, 2, 3)
    model = b.output(b.node("cat", Concat(axis), b.x, b.const("k", np.zeros(shape))))
    with pytest.raises(AnalysisError, match=rf'"cat" \(Concat\).*{words}.*not streamed'):
        model.pulse("T", 3)


def test_concat_of_streams_along_time_is_refused():
    b = Builder("1,4,T,f32")
    model = b.output(b.node("cat", Concat(2), b.x, b.node("relu", Relu(), b.x)))
    with pytest.raises(AnalysisError, match=r'"cat" \(Concat\).*along the streamed axis'):
        model.pulse("T", 3)


@pytest.mark.parametrize("op, words", [
    (Reduce("mean", (2,)), r'"r" \(ReduceMean\): ReduceMean reduces over axis 2, the streamed axis'),
    (Softmax(2), r'"r" \(Softmax\): Softmax normalises over axis 2'),
])
def test_ops_that_need_the_whole_stream_are_refused(op, words):
    b = Builder("1,4,T,f32")
    model = b.output(b.node("r", op, b.node("relu", Relu(), b.x)))
    with pytest.raises(AnalysisError, match=words + ".*whole stream"):
        model.pulse("T", 4)


def test_a_lag_in_the_batch_model_streams_on_a_late_input():
    b = Builder("1,4,T,f32")
    late = b.conv("c", b.x, 4, 4, 3, pads=(0, 2))
    model = b.output(b.node("lag", Delay(2, 3), late), late)
    x = random_input((1, 4, LENGTH))
    lagged, conv = model.run([x])
    np.testing.assert_allclose(lagged[:, :, 3:], conv[:, :, :-3], rtol=1e-6)
    assert not lagged[:, :, :3].any()
    assert_streams_like_batch(model, [x])


def test_pulse_argument_errors():
    b = Builder("1,4,T,f32")
    model = b.output(b.node("relu", Relu(), b.x))
    from tractile import TractileError
    with pytest.raises(TractileError, match="positive number of frames"):
        model.pulse("T", 0)
    with pytest.raises(AnalysisError, match=r"no model input has the stream symbol S.*\"x\" \(1,4,T,f32\)"):
        model.pulse("S", 4)


def test_quantize_dequantize_per_channel_along_a_stream():
    from tractile.ops.quant import DequantizeLinear, QuantizeLinear

    b = Builder("1,4,T,f32")
    scale = b.const("scale", [0.02, 0.05, 0.1, 0.03])
    zero = b.model.add_const("zero", np.asarray([0, 3, -2, 1], np.int8))
    q = b.node("q", QuantizeLinear(axis=1), b.x, scale, zero)
    y = b.node("dq", DequantizeLinear(axis=1), q, scale, zero)
    model = b.output(b.conv("c", y, 4, 2, 3, pads=(1, 1)))
    assert_streams_like_batch(model, [random_input((1, 4, LENGTH))])
