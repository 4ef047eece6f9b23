"""ONNX RNN, GRU and LSTM compiled (float): whole sequences against the interpreter, and pulsed
models (the recurrent state in the context) pushed chunk by chunk against the batch model."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile

from .harness import assert_builds_without_warnings, check_against_interpreter, needs_cc

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


GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def recurrent_proto(op: str, steps="T", batch=2, size=3, hidden=5, directions=1, layout=0, bias=True,
                    initial=False, peepholes=False, seed=0, state_outputs=True, **attrs):
    """One ONNX recurrent node; weights (and initial states) as initializers."""
    rng = np.random.default_rng(seed)
    rand = lambda *shape: (rng.standard_normal(shape) * 0.6).astype(np.float32)  # noqa: E731
    gates = GATES[op] * hidden
    init = {"W": rand(directions, gates, size), "R": rand(directions, gates, hidden)}
    names = ["x", "W", "R"]
    optional = [("B", rand(directions, 2 * gates) if bias else None), ("sequence_lens", None)]
    state_shape = (batch, directions, hidden) if layout else (directions, batch, hidden)
    optional.append(("initial_h", rand(*state_shape) if initial else None))
    if op == "LSTM":
        optional += [("initial_c", rand(*state_shape) if initial else None),
                     ("P", rand(directions, 3 * hidden) if peepholes else None)]
    for name, value in optional:
        names.append(name if value is not None else "")
        if value is not None:
            init[name] = value
    while not names[-1]:
        names.pop()
    outputs = ["y", "y_h"] + (["y_c"] if op == "LSTM" else [])
    if not state_outputs:
        outputs = ["y"]
    node = helper.make_node(op, names, outputs, hidden_size=hidden, layout=layout,
                            direction={1: "forward", 2: "bidirectional"}[directions] if "direction" not in attrs
                            else attrs.pop("direction"), **attrs)
    x_shape = [batch, steps, size] if layout else [steps, batch, size]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                              [numpy_helper.from_array(v, k) for k, v in init.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


BATCH_CASES = {
    "rnn": ("RNN", {}),
    "rnn_reverse_layout1_relu": ("RNN", {"direction": "reverse", "layout": 1, "activations": ["Relu"]}),
    "gru": ("GRU", {"initial": True}),
    "gru_lbr_bidirectional": ("GRU", {"linear_before_reset": 1, "directions": 2, "clip": 1.5}),
    "lstm": ("LSTM", {"initial": True}),
    "lstm_bidirectional_layout1_peepholes": ("LSTM", {"directions": 2, "layout": 1, "peepholes": True,
                                                       "initial": True}),
    "lstm_input_forget_clip_activations": ("LSTM", {
        "input_forget": 1, "clip": 2.0, "activations": ["HardSigmoid", "LeakyRelu", "ScaledTanh"],
        "activation_alpha": [0.3, 0.1, 0.8], "activation_beta": [0.4, 1.2], "bias": False}),
    "gru_affine_softsign": ("GRU", {"activations": ["Softsign", "Affine"], "activation_alpha": [0.7],
                                    "activation_beta": [0.1]}),
    "rnn_elu_softplus_bidirectional": ("RNN", {"directions": 2, "activations": ["Elu", "Softplus"]}),
    "lstm_peepholes_clip": ("LSTM", {"peepholes": True, "clip": 0.7}),
    "gru_wide": ("GRU", {"hidden": 37, "initial": True}),  # vectorised activations and their tails
    "lstm_wide_reverse": ("LSTM", {"hidden": 21, "direction": "reverse"}),
    # recurrent weights packed in blocks of 64 columns: z and r over a block and a tail, the candidate apart
    "gru_lbr_packed": ("GRU", {"hidden": 40, "linear_before_reset": 1, "directions": 2}),
}


@pytest.mark.parametrize("case", sorted(BATCH_CASES))
def test_batch_recurrent(case, compile_cache, tmp_path):
    op, attrs = BATCH_CASES[case]
    model = tractile.load(recurrent_proto(op, steps=7, **attrs))
    cm = check_against_interpreter(model, compile_cache, runs=3, name=case)
    assert_builds_without_warnings(cm.source, tmp_path)


@pytest.mark.parametrize("steps, batch, projected", [(7, 2, True), (1, 1, False)])
def test_host_input_products_in_one_gemm(steps, batch, projected, compile_cache):
    """On the host, every step's input products come from one GEMM before the recurrence (not
    worth it for a single row)."""
    model = tractile.load(recurrent_proto("LSTM", steps=steps, batch=batch, size=11, hidden=13, directions=2))
    cm = check_against_interpreter(model, compile_cache, runs=2, name=f"lstm_rows{steps * batch}")
    text = cm.source.files[f"lstm_rows{steps * batch}.c"]
    assert ("tl_dense_gemm_f32" in text) == projected
    assert "tl_onnx_lstm_f32" in text


def delayed_recurrent_proto(op: str = "GRU", layout: int = 0, hidden: int = 5):
    """x [1, 3, T] -> concat(x[t], x[t+3]) -> time first -> a recurrent op -> its sequence output.
    The look-ahead delays the stream by 3 frames, which the recurrent op skips."""
    rng = np.random.default_rng(1)
    ints = lambda name, values: numpy_helper.from_array(np.array(values, np.int64), name)  # noqa: E731
    rand = lambda *shape: (rng.standard_normal(shape) * 0.6).astype(np.float32)  # noqa: E731
    gates = GATES[op] * hidden
    inits = [ints("p", [0, 0, 0, 0, 0, 3]), ints("s", [3]), ints("e", [1 << 30]), ints("a", [2]),
             numpy_helper.from_array(rand(1, gates, 6), "W"), numpy_helper.from_array(rand(1, gates, hidden), "R"),
             numpy_helper.from_array(rand(1, 2 * gates), "B"),
             numpy_helper.from_array(rand(*((1, 1, hidden) if layout else (1, 1, hidden))), "h0")]
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a"], ["ahead"]),
             helper.make_node("Pad", ["ahead", "p"], ["padded"], mode="constant"),
             helper.make_node("Concat", ["x", "padded"], ["both"], axis=1),
             helper.make_node("Transpose", ["both"], ["seq"], perm=[0, 2, 1] if layout else [2, 0, 1]),
             helper.make_node(op, ["seq", "W", "R", "B", "", "h0"], ["y"], hidden_size=hidden, layout=layout)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "T"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def push_all(compiled, x: np.ndarray, pulse: int, axis: int) -> np.ndarray:
    """Push whole chunks of ``x`` (time on its axis 2); outputs joined along ``axis``, delay dropped."""
    chunks = [compiled.run([x[:, :, t:t + pulse]])[0] for t in range(0, x.shape[2] - pulse + 1, pulse)]
    joined = np.concatenate(chunks, axis=axis)
    return np.take(joined, range(compiled.delay, joined.shape[axis]), axis=axis)


@pytest.mark.parametrize("op, layout", [("GRU", 0), ("LSTM", 1), ("RNN", 0)])
@pytest.mark.parametrize("pulse", [1, 2, 7])
def test_pushed_recurrent_chunks_equal_the_batch_model(op, layout, pulse, compile_cache):
    needs_cc()
    model = tractile.load(delayed_recurrent_proto(op, layout))
    pulsed = model.pulse("T", pulse)
    carried = [n for n in pulsed.model.nodes if n.op.name.startswith("Streaming")]
    assert len(carried) == 1 and carried[0].op.delay == 3
    compiled = pulsed.compile(name=f"stream_{op}_{pulse}", cache_dir=compile_cache)
    assert compiled.report["state_bytes"] >= 2 * 5 * 4 * (2 if op == "LSTM" else 1)
    x = np.random.default_rng(pulse).standard_normal((1, 3, 42)).astype(np.float32)
    time_axis = 1 if layout else 0
    batch = model.run([x])[0]
    got = push_all(compiled, x, pulse, time_axis)
    want = np.take(batch, range(got.shape[time_axis]), axis=time_axis)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    compiled.reset()
    np.testing.assert_array_equal(push_all(compiled, x, pulse, time_axis), got)


@pytest.mark.parametrize("target", ["avr", "cortex-m4"])
def test_recurrent_ops_on_microcontrollers(target, tmp_path):
    """Constant initial states read from program memory on AVR, avr-libc's missing expm1f/log1pf."""
    from tractile.compile.targets import board_for
    from tractile.compile.targets.firmware import toolchain_available
    from tractile.compile.targets.verify import verify

    missing = toolchain_available(board_for(target, None))
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    for case in ("lstm_bidirectional_layout1_peepholes", "rnn_elu_softplus_bidirectional"):
        op, attrs = BATCH_CASES[case]
        model = tractile.load(recurrent_proto(op, steps=7, state_outputs=False, **attrs))
        report = verify(model, target, runs=5, folder=tmp_path / case)
        assert report["verified"], report["first_difference"]


def test_a_stream_takes_a_computed_initial_state_at_its_start(compile_cache):
    """initial_h as a model input: taken when the stream starts, ignored by later pushes."""
    needs_cc()
    model = tractile.load(rnn_proto("GRU", 0, True, "input"), inputs=["T,1,3,f32", "1,1,5,f32"])
    model.outputs = model.outputs[:1]
    compiled = model.pulse("T", 2).compile(name="gru_h0", cache_dir=compile_cache)
    rng = np.random.default_rng(8)
    x, h0 = rng.standard_normal((20, 1, 3)).astype(np.float32), rng.standard_normal((1, 1, 5)).astype(np.float32)
    pushes = [compiled.run([x[t:t + 2], h0 if t == 0 else np.zeros_like(h0)])[0] for t in range(0, 20, 2)]
    np.testing.assert_allclose(np.concatenate(pushes), model.run([x, h0])[0], rtol=1e-5, atol=1e-5)
