"""ONNX LSTM and GRU compiled (float, forward), whole sequences and streamed push by push."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile

from .harness import check_against_interpreter, needs_cc

OPSET = [helper.make_opsetid("", 17)]


def rnn_proto(kind: str, layout: int, with_bias: bool, initial: str, hidden: int = 5, inputs: int = 3,
              linear_before_reset: int = 0):
    rng = np.random.default_rng(hash((kind, layout, with_bias, initial)) % 1000)
    gates = 4 if kind == "LSTM" else 3
    tensors = [numpy_helper.from_array((rng.standard_normal((1, gates * hidden, inputs)) / 2).astype(np.float32), "w"),
               numpy_helper.from_array((rng.standard_normal((1, gates * hidden, hidden)) / 2).astype(np.float32), "r")]
    names = ["x", "w", "r", "", "", ""]
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "T", inputs] if layout
                                                  else ["T", "B", inputs])]
    if with_bias:
        tensors.append(numpy_helper.from_array(rng.standard_normal((1, 2 * gates * hidden)).astype(np.float32), "b"))
        names[3] = "b"
    state_shape = ["B", 1, hidden] if layout else [1, "B", hidden]
    if initial == "input":
        names[5] = "h0"
        graph_inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT, state_shape))
    outputs = ["y", "y_h"] + (["y_c"] if kind == "LSTM" else [])
    attrs = {"hidden_size": hidden, "layout": layout}
    if kind == "GRU":
        attrs["linear_before_reset"] = linear_before_reset
    node = helper.make_node(kind, names[:6] if initial == "input" else [n for n in names[:4]], outputs, **attrs)
    graph = helper.make_graph([node], "rnn", graph_inputs,
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs], tensors)
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8)


@pytest.mark.parametrize("kind,linear", [("LSTM", 0), ("GRU", 0), ("GRU", 1)])
@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("with_bias,initial", [(True, "input"), (False, "none")])
def test_whole_sequences(kind, linear, layout, with_bias, initial, compile_cache):
    proto = rnn_proto(kind, layout, with_bias, initial, linear_before_reset=linear)
    facts = ["2,7,3,f32" if layout else "7,2,3,f32"] + (["2,1,5,f32" if layout else "1,2,5,f32"]
                                                        if initial == "input" else [])
    model = tractile.load(proto, inputs=facts)
    check_against_interpreter(model, compile_cache, runs=3, rtol=1e-5, atol=1e-5, name="rnn")


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("pulse", [1, 3])
def test_streamed_pushes_equal_the_whole_sequence(kind, pulse, compile_cache):
    needs_cc()
    model = tractile.load(rnn_proto(kind, 0, True, "none"), inputs=["T,1,3,f32"])
    model.outputs = model.outputs[:1]
    compiled = model.pulse("T", pulse).compile(name=f"{kind.lower()}_p{pulse}", cache_dir=compile_cache)
    x = np.random.default_rng(pulse).standard_normal((30, 1, 3)).astype(np.float32)
    got = np.concatenate([compiled.run([x[t:t + pulse]])[0] for t in range(0, 30, pulse)], axis=0)
    np.testing.assert_allclose(got, model.run([x])[0][:got.shape[0]], rtol=1e-5, atol=1e-5)
    compiled.reset()
    again = np.concatenate([compiled.run([x[t:t + pulse]])[0] for t in range(0, 30, pulse)], axis=0)
    np.testing.assert_array_equal(again, got)


def test_a_late_stream_skips_the_frames_before_its_start(compile_cache):
    """A centred convolution before the LSTM makes its input one frame late: the compiled
    stream must skip that frame, as the interpreter's does, and output zeros for it."""
    needs_cc()
    rng = np.random.default_rng(4)
    hidden = 4
    tensors = [numpy_helper.from_array(rng.standard_normal((3, 3, 3)).astype(np.float32), "k"),
               numpy_helper.from_array((rng.standard_normal((1, 4 * hidden, 3)) / 2).astype(np.float32), "w"),
               numpy_helper.from_array((rng.standard_normal((1, 4 * hidden, hidden)) / 2).astype(np.float32), "r")]
    nodes = [helper.make_node("Conv", ["x", "k"], ["c"], pads=[1, 1]),
             helper.make_node("Transpose", ["c"], ["t"], perm=[2, 0, 1]),
             helper.make_node("LSTM", ["t", "w", "r"], ["y"], hidden_size=hidden)]
    graph = helper.make_graph(nodes, "late", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], tensors)
    model = tractile.load(helper.make_model(graph, opset_imports=OPSET, ir_version=8))
    pulsed = model.pulse("T", 2)
    compiled = pulsed.compile(name="late_lstm", cache_dir=compile_cache)
    assert compiled.delay == 1
    x = rng.standard_normal((1, 3, 40)).astype(np.float32)
    pushes = [compiled.run([x[:, :, t:t + 2]])[0] for t in range(0, 40, 2)]
    stream = pulsed.start()
    expected = [stream.push([x[:, :, t:t + 2]])[0] for t in range(0, 40, 2)]
    for got, want in zip(pushes, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    whole = np.concatenate(pushes, axis=0)[compiled.delay:]
    np.testing.assert_allclose(whole, model.run([x])[0][:whole.shape[0]], rtol=1e-5, atol=1e-5)
