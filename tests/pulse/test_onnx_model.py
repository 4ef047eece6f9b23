"""A keyword-spotting-like ONNX model with a symbolic time axis, loaded and streamed."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile

from .helpers import LENGTH, assert_streams_like_batch, random_input


def kws_onnx():
    rng = np.random.default_rng(7)

    def init(name, *shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    ints = lambda name, *v: numpy_helper.from_array(np.asarray(v, np.int64), name)  # noqa: E731
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[2, 0], kernel_shape=[3]),
        helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"], ["bn"]),
        helper.make_node("Relu", ["bn"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[2, 2], dilations=[2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("MaxPool", ["r2"], ["p"], kernel_shape=[2], strides=[2]),
        helper.make_node("Transpose", ["p"], ["t"], perm=[0, 2, 1]),                  # N,T/2,16
        helper.make_node("Shape", ["t"], ["shape"]),                                   # the exporter's reshape
        helper.make_node("Gather", ["shape", "first_two"], ["lead"], axis=0),
        helper.make_node("Concat", ["lead", "four_four"], ["target"], axis=0),
        helper.make_node("Reshape", ["t", "target"], ["groups"]),                      # N,T/2,4,4
        helper.make_node("ReduceMean", ["groups"], ["pooled"], axes=[-1], keepdims=0),   # N,T/2,4
        helper.make_node("MatMul", ["pooled", "w3"], ["mm"]),
        helper.make_node("Add", ["mm", "b3"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
    ]
    inits = [init("w1", 16, 40, 3), init("b1", 16), init("w2", 16, 16, 3),
             numpy_helper.from_array(np.linspace(0.5, 1.5, 16).astype(np.float32), "gamma"),
             init("beta", 16), init("mean", 16),
             numpy_helper.from_array(np.linspace(1, 2, 16).astype(np.float32), "var"),
             init("w3", 4, 5), init("b3", 5), ints("first_two", 0, 1), ints("four_four", 4, 4)]
    graph = helper.make_graph(nodes, "kws", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 40, "T"])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("batch", ["1", "N"])
def test_onnx_model_with_symbolic_time_streams_like_batch(batch):
    model = tractile.load(kws_onnx(), inputs={"x": f"{batch},40,T,f32"})
    x = random_input((1 if batch == "1" else 2, 40, LENGTH))
    pulsed = assert_streams_like_batch(model, [x], pulses=(2, 4, 16))
    assert {p.delay for p in pulsed} == {1}   # 2 frames of right padding, halved by the pool
    assert [p.output_pulses[0] for p in pulsed] == [1, 2, 8]
    assert not any(node.op.name in ("Shape", "Gather", "Concat") for node in pulsed[0].model.nodes)


def test_odd_pulse_is_refused_because_of_the_pool_stride():
    model = tractile.load(kws_onnx(), inputs={"x": "1,40,T,f32"})
    with pytest.raises(tractile.AnalysisError, match=r'"p" \(MaxPool\).*stride 2.*multiple of 2'):
        model.pulse("T", 7)


def test_the_pulsed_model_is_an_ordinary_typed_model():
    model = tractile.load(kws_onnx(), inputs={"x": "1,40,T,f32"})
    typed = model.pulse("T", 8).into_typed()
    assert isinstance(typed, tractile.TypedModel)
    assert [str(f) for f in typed.input_facts] == ["1,40,8,f32"]
    assert [str(f) for f in typed.output_facts] == ["1,4,5,f32"]
    assert any(not node.op.is_stateless for node in typed.nodes)
