"""Recurrent ops along the stream: the state is carried from push to push."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile import AnalysisError

from .helpers import LENGTH, assert_streams_like_batch, random_input


def onnx_model(nodes, inputs, outputs, weights, opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def value(name, shape=None):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def rnn_weights(kind, features, hidden, directions=1, seed=0):
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    rng = np.random.default_rng(seed)
    return {"W": (rng.standard_normal((directions, gates * hidden, features)) * 0.5).astype(np.float32),
            "R": (rng.standard_normal((directions, gates * hidden, hidden)) * 0.5).astype(np.float32),
            "B": (rng.standard_normal((directions, 2 * gates * hidden)) * 0.1).astype(np.float32)}


@pytest.mark.parametrize("kind, attrs", [("LSTM", {}), ("GRU", {"linear_before_reset": 1}), ("RNN", {}),
                                         ("LSTM", {"layout": 1})])
def test_recurrent_layer_streams_with_its_state_carried(kind, attrs):
    weights = rnn_weights(kind, 4, 5)
    layout = attrs.get("layout", 0)
    spec = "1,T,4,f32" if layout else "T,1,4,f32"
    weights["h0"] = np.full((1, 1, 5) if not layout else (1, 1, 5), 0.3, np.float32)
    node = helper.make_node(kind, ["x", "W", "R", "B", "", "h0"], ["y"], hidden_size=5, **attrs)
    model = tractile.load(onnx_model([node], [value("x")], [value("y")], weights), inputs={"x": spec})
    x = random_input((1, LENGTH, 4) if layout else (LENGTH, 1, 4))
    pulsed = assert_streams_like_batch(model, [x])
    assert {p.delay for p in pulsed} == {0}
    state = pulsed[0].start()
    carried = (2 if kind == "LSTM" else 1) * 5 * 4  # h (and c) of a batch of one
    assert state.memory_bytes() >= carried  # known before the first frame
    before = state.memory_bytes()
    state.push([x[:, :1] if layout else x[:1]])
    assert state.memory_bytes() == before


def conv_then_lstm(hidden=6, channels=5):
    rng = np.random.default_rng(3)
    weights = {"cw": (rng.standard_normal((channels, 4, 3)) * 0.4).astype(np.float32),
               "cb": np.zeros(channels, np.float32), "perm_axes": np.asarray([1], np.int64),
               "head": (rng.standard_normal((hidden, 2)) * 0.5).astype(np.float32)}
    weights.update(rnn_weights("LSTM", channels, hidden, seed=4))
    nodes = [
        helper.make_node("Conv", ["x", "cw", "cb"], ["c"], pads=[1, 3], dilations=[2]),   # right context: delay
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 1]),                     # T,1,C
        helper.make_node("LSTM", ["t", "W", "R", "B"], ["y", "y_h"], hidden_size=hidden),
        helper.make_node("Squeeze", ["y", "perm_axes"], ["s"]),                          # T,1,H
        helper.make_node("MatMul", ["s", "head"], ["logits"]),
    ]
    return onnx_model(nodes, [value("x", [1, 4, "T"])], [value("logits")], weights)


def test_conv_front_end_then_lstm_skips_the_frames_before_the_stream():
    model = tractile.load(conv_then_lstm(), inputs={"x": "1,4,T,f32"})
    pulsed = assert_streams_like_batch(model, [random_input((1, 4, LENGTH))])
    assert {p.delay for p in pulsed} == {3}  # the conv's right padding


def test_reverse_and_bidirectional_recurrences_are_refused():
    for direction in ("reverse", "bidirectional"):
        weights = rnn_weights("GRU", 4, 3, directions=2 if direction == "bidirectional" else 1)
        node = helper.make_node("GRU", ["x", "W", "R", "B"], ["y"], name="gru", hidden_size=3, direction=direction)
        model = tractile.load(onnx_model([node], [value("x")], [value("y")], weights), inputs={"x": "T,1,4,f32"})
        with pytest.raises(AnalysisError, match=rf'"gru" \(GRU\).*{direction} GRU.*whole stream'):
            model.pulse("T", 4)


def test_final_state_output_is_refused_only_when_used():
    weights = rnn_weights("LSTM", 4, 3)
    node = helper.make_node("LSTM", ["x", "W", "R", "B"], ["y", "y_h"], name="lstm", hidden_size=3)
    model = tractile.load(onnx_model([node], [value("x")], [value("y"), value("y_h")], weights),
                          inputs={"x": "T,1,4,f32"})
    with pytest.raises(AnalysisError, match=r'"lstm" \(LSTM\).*output 1 of LSTM describes the end of the sequence'):
        model.pulse("T", 4)


@pytest.mark.parametrize("with_past", [False, True])
def test_causal_conv_with_state_streams(with_past):
    rng = np.random.default_rng(5)
    weights = {"w": rng.standard_normal((3, 1, 4)).astype(np.float32), "b": rng.standard_normal(3).astype(np.float32),
               "past": rng.standard_normal((1, 3, 3)).astype(np.float32), "start": np.asarray([1], np.int64),
               "end": np.asarray([np.iinfo(np.int64).max], np.int64), "axis": np.asarray([2], np.int64)}
    nodes = [helper.make_node("Slice", ["xx", "start", "end", "axis"], ["x"]),  # a late input: delay 1
             helper.make_node("CausalConvWithState", ["x", "w", "b"] + (["past"] if with_past else []),
                              ["y", "present"], activation="silu")]
    proto = onnx_model(nodes, [value("xx", [1, 3, "T"])], [value("y")], weights, opset=26)
    model = tractile.load(proto, inputs={"xx": "1,3,T,f32"})
    pulsed = assert_streams_like_batch(model, [random_input((1, 3, LENGTH))])
    assert {p.delay for p in pulsed} == {1}


def test_scan_stacked_backwards_is_refused():
    body = helper.make_graph([helper.make_node("Add", ["s", "x_t"], ["s_next"]),
                              helper.make_node("Identity", ["s_next"], ["y_t"])],
                             "body", [value("s", [3]), value("x_t", [3])], [value("s_next", [3]), value("y_t", [3])])
    scan = helper.make_node("Scan", ["s0", "x"], ["s_final", "y"], name="scan", body=body, num_scan_inputs=1,
                            scan_input_directions=[1])
    proto = onnx_model([scan], [value("x", ["T", 3])], [value("y")], {"s0": np.zeros(3, np.float32)})
    model = tractile.load(proto, inputs={"x": "T,3,f32"})
    with pytest.raises(AnalysisError, match=r'"scan" \(Scan\).*scanned backwards.*whole stream'):
        model.pulse("T", 2)


@pytest.mark.parametrize("late", [False, True])
def test_scan_along_time_carries_its_state(late):
    body = helper.make_graph(
        [helper.make_node("Mul", ["s", "decay"], ["kept"]), helper.make_node("Mul", ["x_t", "rate"], ["fresh"]),
         helper.make_node("Add", ["kept", "fresh"], ["s_next"]), helper.make_node("Tanh", ["s_next"], ["y_t"])],
        "body", [value("s", [3]), value("x_t", [3])], [value("s_next", [3]), value("y_t", [3])],
        [numpy_helper.from_array(np.float32(0.8), "decay"), numpy_helper.from_array(np.float32(0.2), "rate")])
    scan = helper.make_node("Scan", ["s0", "x"], ["s_final", "y"], body=body, num_scan_inputs=1)
    front = [helper.make_node("Relu", ["xx"], ["r"]),
             helper.make_node("Slice", ["r", "start", "end"], ["x"]) if late else helper.make_node("Neg", ["r"], ["x"])]
    proto = onnx_model(front + [scan], [value("xx", ["T", 3])], [value("y")],
                       {"s0": np.asarray([0.5, -0.5, 0.0], np.float32), "start": np.asarray([2], np.int64),
                        "end": np.asarray([1 << 40], np.int64)})
    model = tractile.load(proto, inputs={"xx": "T,3,f32"})
    pulsed = assert_streams_like_batch(model, [random_input((LENGTH, 3))])
    assert {p.delay for p in pulsed} == {2 if late else 0}


def test_initial_state_built_from_the_batch_size_of_the_stream():
    """PyTorch exports h0 as ConstantOfShape([1, Shape(x)[1], hidden]): usable in a stream."""
    weights = rnn_weights("LSTM", 4, 5)
    weights.update({"one": np.asarray([1], np.int64), "hidden": np.asarray([5], np.int64),
                    "batch_axis": np.asarray([1], np.int64)})
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "batch_axis"], ["batch"], axis=0),
             helper.make_node("Concat", ["one", "batch", "hidden"], ["h_shape"], axis=0),
             helper.make_node("ConstantOfShape", ["h_shape"], ["h0"],
                              value=numpy_helper.from_array(np.asarray([0.25], np.float32))),
             helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "h0"], ["y"], hidden_size=5)]
    model = tractile.load(onnx_model(nodes, [value("x")], [value("y")], weights), inputs={"x": "T,N,4,f32"})
    pulsed = assert_streams_like_batch(model, [random_input((LENGTH, 3, 4))])
    assert not any(node.op.name == "Concat" and "T" in str(node.outputs[0].fact) for node in pulsed[0].model.nodes)


def test_a_value_computed_from_the_stream_length_is_refused_naming_its_source():
    nodes = [helper.make_node("Shape", ["x"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "time_axis"], ["length"], axis=0),
             helper.make_node("Cast", ["length"], ["length_f"], to=TensorProto.FLOAT),
             helper.make_node("Div", ["x", "length_f"], ["y"])]
    proto = onnx_model(nodes, [value("x")], [value("y")], {"time_axis": np.asarray([2], np.int64)})
    model = tractile.load(proto, inputs={"x": "1,4,T,f32"})
    with pytest.raises(AnalysisError, match=r'"shape" \(Shape\).*stream\'s length'):
        model.pulse("T", 4)
