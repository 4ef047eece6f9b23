"""RNN, GRU and LSTM: against onnxruntime, against the ONNX equations written out in NumPy,
streaming through :func:`scan`, and errors."""
from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import tractile  # noqa: E402
from tractile.errors import AnalysisError, ModelFormatError, RunError  # noqa: E402
from tractile.ops.recurrent import LSTM  # noqa: E402
from tractile.ops.recurrent_activations import RnnActivation  # noqa: E402
from tractile.ops.recurrent_cells import GruCell, LstmCell, RnnCell  # noqa: E402
from tractile.ops.recurrent_scan import scan  # noqa: E402

from ..conftest import run_onnxruntime  # noqa: E402
from .single_node import run_tractile, single_node  # noqa: E402

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
STATES = {"RNN": ["initial_h"], "GRU": ["initial_h"], "LSTM": ["initial_h", "initial_c"]}


def make_inputs(op: str, steps=5, batch=3, size=4, hidden=6, directions=1, seed=0, bias=True,
                initial=False, lengths=None, peepholes=False, dtype=np.float32, scale=0.6) -> dict:
    """ONNX-ordered inputs in layout 0 (None for the omitted ones)."""
    rng = np.random.default_rng(seed)

    def rand(*shape):
        return (rng.standard_normal(shape) * scale).astype(dtype)

    gates = GATES[op] * hidden
    inputs = {"X": rand(steps, batch, size), "W": rand(directions, gates, size), "R": rand(directions, gates, hidden),
              "B": rand(directions, 2 * gates) if bias else None,
              "sequence_lens": None if lengths is None else np.asarray(lengths, np.int32)}
    for name in STATES[op]:
        inputs[name] = rand(directions, batch, hidden) if initial else None
    if op == "LSTM":
        inputs["P"] = rand(directions, 3 * hidden) if peepholes else None
    return inputs


def to_layout1(inputs: dict) -> dict:
    """The same inputs for layout 1 (batch first)."""
    moved = dict(inputs)
    moved["X"] = inputs["X"].transpose(1, 0, 2).copy()
    for name in ("initial_h", "initial_c"):
        if inputs.get(name) is not None:
            moved[name] = inputs[name].transpose(1, 0, 2).copy()
    return moved


def outputs_to_layout1(outputs: list[np.ndarray]) -> list[np.ndarray]:
    return [outputs[0].transpose(2, 0, 1, 3)] + [o.transpose(1, 0, 2) for o in outputs[1:]]


CONSTANTS = ("W", "R", "B", "initial_h", "initial_c", "P")


def compare(op: str, inputs: dict, layout: int = 0, rtol=1e-4, atol=1e-5, **attrs) -> list[np.ndarray]:
    """Run ``op`` through tractile (in ``layout``) and onnxruntime (layout 0, which it only has)."""
    count = len(STATES[op]) + 1
    attrs.setdefault("hidden_size", inputs["R"].shape[-1])
    proto, feeds = single_node(op, inputs, count, opset=14, constants=CONSTANTS, **attrs)
    expected = run_onnxruntime(proto, feeds)
    if layout:
        proto, feeds = single_node(op, to_layout1(inputs), count, opset=14, constants=CONSTANTS, layout=1, **attrs)
        expected = outputs_to_layout1(expected)
    got = run_tractile(proto, feeds)
    assert len(got) == len(expected)
    for index, (g, e) in enumerate(zip(got, expected)):
        assert g.shape == e.shape and g.dtype == e.dtype, f"output {index}: {g.shape} {g.dtype} vs {e.shape} {e.dtype}"
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=f"output {index}")
    return got


@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("variant", ["plain", "initial_state", "lengths"])
def test_matches_onnxruntime(op, direction, layout, variant):
    directions = 2 if direction == "bidirectional" else 1
    inputs = make_inputs(op, directions=directions, initial=variant != "plain",
                         lengths=[5, 0, 2] if variant == "lengths" else None, seed=len(op) + directions)
    got = compare(op, inputs, layout=layout, hidden_size=6, direction=direction)
    if variant == "lengths":
        y = got[0] if layout == 0 else outputs_to_layout1_inverse(got[0])
        assert not y[:, :, 1].any() and not y[2:, :, 2].any()  # nothing past a row's length


def outputs_to_layout1_inverse(y: np.ndarray) -> np.ndarray:
    return y.transpose(1, 2, 0, 3)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op, attrs", [("RNN", {}), ("GRU", {}), ("GRU", dict(linear_before_reset=1)),
                                       ("LSTM", {}), ("LSTM", dict(clip=0.6))])
def test_batch_of_one_matches_onnxruntime(op, attrs, direction):
    """One row (and one direction): the kernels then work on 1-d views."""
    directions = 2 if direction == "bidirectional" else 1
    inputs = make_inputs(op, batch=1, directions=directions, initial=True, peepholes=op == "LSTM", seed=9)
    compare(op, inputs, direction=direction, **attrs)


@pytest.mark.parametrize("case", [
    dict(op="LSTM", peepholes=True, direction="bidirectional", initial=True, lengths=[3, 5, 1]),
    dict(op="LSTM", peepholes=True, initial=True, clip=0.7),
    dict(op="LSTM", initial=True, input_forget=1),
    dict(op="LSTM", peepholes=True, initial=True, input_forget=1, direction="reverse"),
    dict(op="LSTM", clip=0.4, direction="bidirectional"),
    dict(op="LSTM", bias=False, batch=1, steps=9),
    dict(op="GRU", linear_before_reset=1, initial=True, direction="bidirectional", lengths=[5, 1, 4]),
    dict(op="GRU", linear_before_reset=1, clip=0.3, initial=True),
    dict(op="GRU", clip=0.3, bias=False),
    dict(op="RNN", clip=0.5, initial=True, direction="reverse"),
])
def test_options_match_onnxruntime(case):
    case = dict(case)
    op, direction = case.pop("op"), case.pop("direction", "forward")
    attrs = {k: case.pop(k) for k in ("clip", "input_forget", "linear_before_reset") if k in case}
    inputs = make_inputs(op, directions=2 if direction == "bidirectional" else 1, **case)
    compare(op, inputs, direction=direction, **attrs)


def test_empty_sequence_keeps_the_initial_state():
    inputs = make_inputs("LSTM", steps=0, initial=True)
    y, y_h, y_c = run_tractile(*single_node("LSTM", inputs, 3, opset=14, constants=CONSTANTS, hidden_size=6))
    assert y.shape == (0, 1, 3, 6)
    np.testing.assert_array_equal(y_h, inputs["initial_h"])
    np.testing.assert_array_equal(y_c, inputs["initial_c"])


@pytest.mark.parametrize("op, attrs", [
    ("RNN", dict(activations=["Relu"])),
    ("RNN", dict(activations=["Affine"], activation_alpha=[0.7], activation_beta=[0.2])),
    ("RNN", dict(activations=["LeakyRelu"], activation_alpha=[0.3])),
    ("RNN", dict(activations=["LeakyRelu"])),
    ("RNN", dict(activations=["ThresholdedRelu"], activation_alpha=[0.3])),
    ("RNN", dict(activations=["ScaledTanh"], activation_alpha=[1.5], activation_beta=[0.5])),
    ("RNN", dict(activations=["HardSigmoid"], activation_alpha=[0.3], activation_beta=[0.4])),
    ("RNN", dict(activations=["HardSigmoid"])),
    ("RNN", dict(activations=["Elu"], activation_alpha=[0.5])),
    ("RNN", dict(activations=["Elu"])),
    ("RNN", dict(activations=["Softsign"])),
    ("RNN", dict(activations=["Softplus"])),
    ("GRU", dict(activations=["HardSigmoid", "LeakyRelu"], activation_alpha=[0.3, 0.2], activation_beta=[0.4])),
    ("GRU", dict(activations=["Relu", "Affine"], activation_alpha=[0.2], activation_beta=[0.1])),
    ("GRU", dict(activations=["Sigmoid", "Sigmoid"], linear_before_reset=1)),
    ("GRU", dict(activations=["Sigmoid", "Sigmoid"])),
    ("LSTM", dict(activations=["Tanh", "LeakyRelu", "Affine"], activation_alpha=[0.2, 0.5], activation_beta=[0.3])),
    ("LSTM", dict(activations=["HardSigmoid", "Tanh", "Softsign"], activation_alpha=[0.25],
                  activation_beta=[0.45])),
    ("LSTM", dict(activations=["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "Elu", "Relu"], activation_alpha=[0.3, 0.7],
                  activation_beta=[0.6], direction="bidirectional")),
    ("LSTM", dict(activations=["Sigmoid", "Sigmoid", "Tanh"], clip=0.5)),
])
def test_activations_and_parameters_match_onnxruntime(op, attrs):
    """alpha/beta are consumed in order by the functions that take them, as onnxruntime does."""
    directions = 2 if attrs.get("direction") == "bidirectional" else 1
    compare(op, make_inputs(op, directions=directions, initial=True, scale=0.4), **attrs)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def test_lstm_one_step_follows_the_onnx_equations():
    """Gate order i, o, f, c in W/R/B and i, o, f in P; the output gate peeks at the new cell state."""
    inputs = make_inputs("LSTM", steps=1, batch=2, initial=True, peepholes=True, seed=3)
    got = run_tractile(*single_node("LSTM", inputs, 3, opset=14, constants=CONSTANTS, hidden_size=6))
    x, w, r, b = inputs["X"][0], inputs["W"][0], inputs["R"][0], inputs["B"][0]
    h0, c0, (p_i, p_o, p_f) = inputs["initial_h"][0], inputs["initial_c"][0], inputs["P"][0].reshape(3, 6)
    z = x @ w.T + h0 @ r.T + b[:24] + b[24:]
    zi, zo, zf, zc = np.split(z, 4, axis=1)
    i, f = sigmoid(zi + p_i * c0), sigmoid(zf + p_f * c0)
    c = f * c0 + i * np.tanh(zc)
    h = sigmoid(zo + p_o * c) * np.tanh(c)
    np.testing.assert_allclose(got[0][0, 0], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1][0], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2][0], c, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru_two_steps_follow_the_onnx_equations(linear_before_reset):
    inputs = make_inputs("GRU", steps=2, batch=2, initial=True, seed=4)
    got = run_tractile(*single_node("GRU", inputs, 2, opset=14, constants=CONSTANTS, hidden_size=6,
                                    linear_before_reset=linear_before_reset))
    (wz, wr, wh), (rz, rr, rh) = np.split(inputs["W"][0], 3), np.split(inputs["R"][0], 3)
    wbz, wbr, wbh, rbz, rbr, rbh = np.split(inputs["B"][0], 6)
    h = inputs["initial_h"][0]
    for x in inputs["X"]:
        z = sigmoid(x @ wz.T + h @ rz.T + wbz + rbz)
        r = sigmoid(x @ wr.T + h @ rr.T + wbr + rbr)
        if linear_before_reset:
            candidate = np.tanh(x @ wh.T + r * (h @ rh.T + rbh) + wbh)
        else:
            candidate = np.tanh(x @ wh.T + (r * h) @ rh.T + rbh + wbh)
        h = (1 - z) * candidate + z * h
    np.testing.assert_allclose(got[1][0], h, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, formula", [
    ("Affine", lambda v: v),                                   # ONNX defaults alpha=1, beta=0
    ("ThresholdedRelu", lambda v: np.where(v > 1.0, v, 0.0)),  # alpha=1
    ("ScaledTanh", np.tanh),                                   # alpha=beta=1
])
def test_activation_defaults_follow_onnx(name, formula):
    """Where onnxruntime takes missing parameters as 0, tractile takes the ONNX operators' defaults."""
    inputs = make_inputs("RNN", steps=1, initial=True, seed=5, scale=1.5)
    got = run_tractile(*single_node("RNN", inputs, 2, opset=14, constants=CONSTANTS, hidden_size=6,
                                    activations=[name]))
    pre = (inputs["X"][0] @ inputs["W"][0].T + inputs["initial_h"][0] @ inputs["R"][0].T
           + inputs["B"][0].reshape(2, 6).sum(0))
    np.testing.assert_allclose(got[1][0], formula(pre), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("directions", [1, 2])
@pytest.mark.parametrize("cell_type", ["lstm", "gru", "rnn"])
def test_scan_carries_state_across_chunks(cell_type, directions):
    """What streaming relies on: two chunks with the state carried equal one whole run."""
    rng = np.random.default_rng(6)
    hidden, gates = 5, {"lstm": 4, "gru": 3, "rnn": 1}[cell_type]
    w = rng.standard_normal((directions, gates * hidden, 3)) * 0.5
    r = rng.standard_normal((directions, gates * hidden, hidden)) * 0.5
    bias = rng.standard_normal((directions, 2 * gates * hidden)) * 0.5
    if cell_type == "lstm":
        acts = tuple(RnnActivation.make(n) for n in ("Sigmoid", "Tanh", "Tanh"))
        cell = LstmCell(w, r, bias, acts, None, np.float32)
    elif cell_type == "gru":
        cell = GruCell(w, r, bias, (RnnActivation.make("Sigmoid"), RnnActivation.make("Tanh")), None, np.float32)
    else:
        cell = RnnCell(w, r, bias, (RnnActivation.make("Tanh"),), None, np.float32)
    x = rng.standard_normal((directions, 9, 2, 3)).astype(np.float32)
    initial = [rng.standard_normal((directions, 2, hidden)).astype(np.float32) for _ in cell.state_names]
    whole, final = scan(cell, x, initial)
    first, state = scan(cell, x[:, :4], initial)
    second, state = scan(cell, x[:, 4:], state)
    assert whole.shape == (9, directions, 2, hidden)
    np.testing.assert_allclose(np.concatenate([first, second]), whole, rtol=1e-6, atol=1e-6)
    for a, b in zip(state, final):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert len(final) == len(cell.state_names)
    if cell_type == "rnn":  # the first step by hand: tanh(x W^T + h R^T + Wb + Rb)
        pre = x[:, 0] @ w.transpose(0, 2, 1) + initial[0] @ r.transpose(0, 2, 1) + bias[:, None, :hidden] \
            + bias[:, None, hidden:]
        np.testing.assert_allclose(whole[0], np.tanh(pre), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype_name, atol", [("float16", 2e-3), ("bfloat16", 1e-2)])
def test_small_floats_run_in_float32_and_cast_back(dtype_name, atol):
    dtype = np.dtype(np.float16) if dtype_name == "float16" else np.dtype(pytest.importorskip("ml_dtypes").bfloat16)
    inputs = make_inputs("LSTM", initial=True, directions=2)
    narrow = {k: None if v is None else v.astype(dtype) for k, v in inputs.items()}
    got = run_tractile(*single_node("LSTM", narrow, 3, opset=22, constants=CONSTANTS, hidden_size=6,
                                    direction="bidirectional"))
    wide = {k: None if v is None else v.astype(np.float32) for k, v in narrow.items()}
    expected = run_onnxruntime(*single_node("LSTM", wide, 3, opset=14, constants=CONSTANTS, hidden_size=6,
                                            direction="bidirectional"))
    for g, e in zip(got, expected):
        assert g.dtype == dtype
        np.testing.assert_allclose(g.astype(np.float32), e, rtol=1e-2, atol=atol)


@pytest.mark.parametrize("op, attrs", [("LSTM", dict(direction="bidirectional")),
                                       ("GRU", dict(linear_before_reset=1)), ("RNN", {})])
def test_float64_stays_float64(op, attrs):
    """onnxruntime has no double recurrent kernels: its float32 results are the oracle."""
    directions = 2 if attrs.get("direction") == "bidirectional" else 1
    inputs = make_inputs(op, initial=True, lengths=[2, 5, 3], dtype=np.float64, directions=directions)
    got = run_tractile(*single_node(op, inputs, len(STATES[op]) + 1, opset=14, constants=CONSTANTS,
                                    hidden_size=6, **attrs))
    narrow = {k: None if v is None else v.astype(np.float32) if v.dtype == np.float64 else v
              for k, v in inputs.items()}
    expected = run_onnxruntime(*single_node(op, narrow, len(STATES[op]) + 1, opset=14, constants=CONSTANTS,
                                            hidden_size=6, **attrs))
    for g, e in zip(got, expected):
        assert g.dtype == np.float64
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def symbolic_lstm(direction="forward"):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    dirs = 2 if direction == "bidirectional" else 1
    weights = {"W": rng.standard_normal((dirs, 16, 3)), "R": rng.standard_normal((dirs, 16, 4))}
    inits = [numpy_helper.from_array(v.astype(np.float32) * 0.5, k) for k, v in weights.items()]
    node = helper.make_node("LSTM", ["X", "W", "R"], ["Y", "Y_h", "Y_c"], hidden_size=4, direction=direction)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["T", "N", 3])],
                              [helper.make_empty_tensor_value_info(n) for n in ("Y", "Y_h", "Y_c")], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=10)


def test_symbolic_time_and_batch():
    proto = symbolic_lstm("bidirectional")
    typed = tractile.load(proto)
    facts = [str(typed.outlet_fact(o)) for o in typed.outputs]
    assert facts == ["T,2,N,4,f32", "2,N,4,f32", "2,N,4,f32"]
    state = typed.plan().state(check_facts=True)
    for steps, batch in ((3, 1), (6, 2)):
        x = np.random.default_rng(steps).standard_normal((steps, batch, 3)).astype(np.float32)
        for g, e in zip(state.run([x]), run_onnxruntime(proto, [x])):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def test_prepared_weights_are_reused_across_runs():
    inputs = make_inputs("LSTM", initial=True)
    proto, feeds = single_node("LSTM", inputs, 3, opset=14, constants=CONSTANTS, hidden_size=6)
    typed = tractile.load(proto)
    state = typed.plan().state()
    first = state.run(feeds)
    op = next(n.op for n in typed.nodes if isinstance(n.op, LSTM))
    cells = op._prepared["cells"][1]
    second = state.run(feeds)
    assert op._prepared["cells"][1] is cells
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)


def test_blas_thread_count_is_restored():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = [lib["num_threads"] for lib in threadpoolctl.threadpool_info()]
    compare("LSTM", make_inputs("LSTM"))
    assert [lib["num_threads"] for lib in threadpoolctl.threadpool_info()] == before


# errors -----------------------------------------------------------------------------------------
def load_error(inputs: dict, op="LSTM", **attrs) -> str:
    proto, _ = single_node(op, inputs, len(STATES[op]) + 1, opset=14, constants=CONSTANTS, **attrs)
    with pytest.raises((AnalysisError, ModelFormatError)) as info:
        tractile.load(proto)
    return str(info.value)


def test_weights_with_the_wrong_gate_count_are_named():
    inputs = make_inputs("LSTM")
    inputs["W"] = inputs["W"][:, :18]
    message = load_error(inputs, hidden_size=6)
    assert "W has 18 gate rows where 4 gates of R's hidden size make 24" in message


def test_directions_must_match_the_weights():
    message = load_error(make_inputs("GRU"), op="GRU", hidden_size=6, direction="bidirectional")
    assert "W has 1 directions where direction=bidirectional needs 2" in message


def test_hidden_size_must_match_r():
    message = load_error(make_inputs("RNN"), op="RNN", hidden_size=7)
    assert "R has hidden size 6, the hidden_size attribute says 7" in message


def test_initial_state_shape_is_checked():
    inputs = make_inputs("LSTM", initial=True)
    inputs["initial_c"] = inputs["initial_c"][:, :2]
    assert "initial_c must have shape [1,3,6]" in load_error(inputs, hidden_size=6)


def test_peepholes_shape_is_checked():
    inputs = make_inputs("LSTM", peepholes=True)
    inputs["P"] = inputs["P"][:, :12]
    assert "P must have shape [1,18]" in load_error(inputs, hidden_size=6)


def test_float_sequence_lengths_are_rejected():
    inputs = make_inputs("LSTM", lengths=[1, 2, 3])
    inputs["sequence_lens"] = inputs["sequence_lens"].astype(np.float32)
    assert "sequence_lens must be integers" in load_error(inputs, hidden_size=6)


def test_unknown_activation_is_named():
    message = load_error(make_inputs("RNN"), op="RNN", hidden_size=6, activations=["Swish"])
    assert "Swish" in message and "LeakyRelu" in message


def test_activation_count_is_checked():
    message = load_error(make_inputs("GRU"), op="GRU", hidden_size=6, activations=["Sigmoid", "Tanh", "Tanh"])
    assert "needs 2 activations, got 3" in message


def test_unknown_direction_is_named():
    assert "sideways" in load_error(make_inputs("RNN"), op="RNN", hidden_size=6, direction="sideways")


def test_sequence_lengths_beyond_the_sequence_fail_at_run_time():
    inputs = make_inputs("LSTM", lengths=[1, 9, 3])
    proto, feeds = single_node("LSTM", inputs, 3, opset=14, constants=CONSTANTS, hidden_size=6)
    with pytest.raises(RunError, match=r"sequence_lens \[1, 9, 3\] must be within \[0, 5\]"):
        run_tractile(proto, feeds)
