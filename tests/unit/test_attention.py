"""Attention (masks, causal, GQA, KV cache, softcap, windows), RotaryEmbedding, LinearAttention,
CausalConvWithState and SwiGLU, against independent NumPy formulas and onnxruntime."""
import numpy as np
import pytest

import tractile
from tractile.errors import AnalysisError

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value

RNG = np.random.default_rng(29)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def naive_attention(q, k, v, bias=None, scale=None, softcap=0.0):
    """Per (batch, query head) loop: softmax(q k^T * scale [+softcap] + bias) v, GQA by head // group."""
    batch, q_heads, q_len, size = q.shape
    group = q_heads // k.shape[1]
    scale = 1 / np.sqrt(size) if scale is None else scale
    out = np.zeros((batch, q_heads, q_len, v.shape[3]))
    for b in range(batch):
        for h in range(q_heads):
            scores = q[b, h].astype(np.float64) @ k[b, h // group].T * scale
            if softcap:
                scores = softcap * np.tanh(scores / softcap)
            if bias is not None:
                scores = scores + np.broadcast_to(bias, (batch, q_heads) + scores.shape)[b, h]
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            out[b, h] = (weights / weights.sum(axis=1, keepdims=True)) @ v[b, h // group]
    return out


def attention_model(shapes, attrs, inputs=("Q", "K", "V"), outputs=("Y",), opset=23, dtypes=None):
    dtypes = dtypes or {}
    infos = [value(name, dtypes.get(name, "f32"), list(shapes[name])) for name in inputs if name]
    return model([node("Attention", list(inputs), list(outputs), **attrs)], infos,
                 [value(name, "f32") for name in outputs if name], opset=opset)


def test_gqa_with_float_mask_and_scale():
    q, k, v, mask = rand(2, 6, 3, 4), rand(2, 2, 5, 4), rand(2, 2, 5, 3), rand(3, 5)
    proto = attention_model({"Q": q.shape, "K": k.shape, "V": v.shape, "M": mask.shape}, {"scale": 0.3},
                            inputs=("Q", "K", "V", "M"))
    (y,) = tractile.load(proto).run([q, k, v, mask])
    np.testing.assert_allclose(y, naive_attention(q, k, v, mask, scale=0.3), rtol=1e-5, atol=1e-6)


def test_causal_with_past_and_present():
    q, k, v = rand(1, 2, 3, 4), rand(1, 2, 3, 4), rand(1, 2, 3, 4)
    past_k, past_v = rand(1, 2, 2, 4), rand(1, 2, 2, 4)
    proto = attention_model({"Q": q.shape, "K": k.shape, "V": v.shape, "PK": past_k.shape, "PV": past_v.shape},
                            {"is_causal": 1}, inputs=("Q", "K", "V", "", "PK", "PV"),
                            outputs=("Y", "present_k", "present_v"))
    y, present_k, present_v = tractile.load(proto).run([q, k, v, past_k, past_v])
    full_k, full_v = np.concatenate([past_k, k], axis=2), np.concatenate([past_v, v], axis=2)
    np.testing.assert_array_equal(present_k, full_k)
    np.testing.assert_array_equal(present_v, full_v)
    rows, cols = np.arange(3)[:, None], np.arange(5)[None]
    bias = np.where(cols <= rows + 2, 0.0, -np.inf)
    np.testing.assert_allclose(y, naive_attention(q, full_k, full_v, bias), rtol=1e-5, atol=1e-6)


def test_packed_3d_inputs_with_bool_mask_and_softcap_match_onnxruntime():
    q, k, v = rand(2, 4, 12), rand(2, 5, 6), rand(2, 5, 6)
    mask = RNG.random((4, 5)) > 0.3
    mask[:, 0] = True
    proto = attention_model({"Q": q.shape, "K": k.shape, "V": v.shape, "M": mask.shape},
                            {"q_num_heads": 4, "kv_num_heads": 2, "softcap": 1.5}, inputs=("Q", "K", "V", "M"),
                            dtypes={"M": "bool"})
    (y,) = tractile.load(proto).run([q, k, v, mask])
    q4, k4, v4 = (t.reshape(2, t.shape[1], -1, 3).transpose(0, 2, 1, 3) for t in (q, k, v))
    expected = naive_attention(q4, k4, v4, np.where(mask, 0.0, -np.inf), softcap=1.5)
    np.testing.assert_allclose(y, expected.transpose(0, 2, 1, 3).reshape(2, 4, 12), rtol=1e-5, atol=1e-6)
    try:
        (theirs,) = run_onnxruntime(proto, [q, k, v, mask])
    except Exception as error:
        pytest.skip(f"onnxruntime cannot run Attention-23: {error}")
    np.testing.assert_allclose(y, theirs, rtol=1e-5, atol=1e-6)


def test_fully_masked_row_gives_zeros_and_probability_output():
    q, k, v = rand(1, 1, 2, 4), rand(1, 1, 3, 4), rand(1, 1, 3, 4)
    mask = np.array([[False, False, False], [True, False, True]])
    proto = attention_model({"Q": q.shape, "K": k.shape, "V": v.shape, "M": mask.shape},
                            {"qk_matmul_output_mode": 3}, inputs=("Q", "K", "V", "M"), outputs=("Y", "", "", "P"),
                            dtypes={"M": "bool"})
    y, probs = tractile.load(proto).run([q, k, v, mask])
    np.testing.assert_array_equal(y[0, 0, 0], 0)
    np.testing.assert_array_equal(probs[0, 0, 0], 0)
    assert probs[0, 0, 1, 1] == 0 and probs[0, 0, 1].sum() == pytest.approx(1)
    np.testing.assert_allclose(y[0, 0, 1], probs[0, 0, 1] @ v[0, 0], rtol=1e-6)


def test_sliding_window_and_key_padding():
    q, k, v = rand(2, 1, 4, 2), rand(2, 1, 6, 2), rand(2, 1, 6, 2)
    lengths = np.array([6, 4], np.int64)
    proto = attention_model({"Q": q.shape, "K": k.shape, "V": v.shape, "L": (2,)},
                            {"is_causal": 1, "left_window_size": 1}, inputs=("Q", "K", "V", "", "", "", "L"),
                            opset=25, dtypes={"L": "i64"})
    (y,) = tractile.load(proto).run([q, k, v, lengths])
    for b in range(2):
        position = np.arange(4)[:, None] + lengths[b] - 4
        cols = np.arange(6)[None]
        allowed = (cols <= position) & (position - cols <= 1) & (cols < lengths[b])
        expected = naive_attention(q[b:b + 1], k[b:b + 1], v[b:b + 1], np.where(allowed, 0.0, -np.inf))
        np.testing.assert_allclose(y[b:b + 1], expected, rtol=1e-5, atol=1e-6)


def test_attention_head_mismatch_is_an_analysis_error():
    proto = attention_model({"Q": (1, 3, 2, 4), "K": (1, 2, 2, 4), "V": (1, 2, 2, 4)}, {})
    with pytest.raises(AnalysisError, match="3 query heads cannot share 2 key/value heads"):
        tractile.load(proto)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_partial_with_positions(interleaved):
    x = rand(1, 2, 3, 6)
    angles = RNG.random((10, 2)).astype(np.float32)
    cos, sin = np.cos(angles), np.sin(angles)
    positions = np.array([[4, 0, 9]], np.int64)
    proto = model([node("RotaryEmbedding", ["x", "c", "s", "p"], ["y"], interleaved=interleaved,
                        rotary_embedding_dim=4)],
                  [value("x", "f32", [1, 2, 3, 6]), value("c", "f32", [10, 2]), value("s", "f32", [10, 2]),
                   value("p", "i64", [1, 3])], [value("y")], opset=23)
    (y,) = tractile.load(proto).run([x, cos, sin, positions])
    expected = x.copy()
    for h in range(2):
        for t, position in enumerate(positions[0]):
            for i in range(2):
                a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + 2)
                c, s = cos[position, i], sin[position, i]
                expected[0, h, t, a] = c * x[0, h, t, a] - s * x[0, h, t, b]
                expected[0, h, t, b] = s * x[0, h, t, a] + c * x[0, h, t, b]
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


def naive_linear_attention(q, k, v, decay, beta, rule, q_heads, kv_heads):
    batch, steps, _ = q.shape
    dk, dv = q.shape[2] // q_heads, v.shape[2] // kv_heads
    state = np.zeros((batch, kv_heads, dk, dv))
    out = np.zeros((batch, steps, q_heads, dv))
    for b in range(batch):
        for t in range(steps):
            for h in range(kv_heads):
                key, val = k[b, t, h * dk:(h + 1) * dk], v[b, t, h * dv:(h + 1) * dv]
                if "gated" in rule:
                    state[b, h] *= np.exp(decay[b, t, h])
                if "delta" in rule:
                    val = beta[b, t, h] * (val - state[b, h].T @ key)
                state[b, h] += np.outer(key, val)
            for h in range(q_heads):
                out[b, t, h] = q[b, t, h * dk:(h + 1) * dk] @ state[b, h // (q_heads // kv_heads)] / np.sqrt(dk)
    return out.reshape(batch, steps, -1), state


@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
def test_linear_attention_rules(rule):
    q, k, v = rand(2, 3, 8), rand(2, 3, 4), rand(2, 3, 6)
    decay, beta = -np.abs(rand(2, 3, 2)), RNG.random((2, 3, 2)).astype(np.float32)
    names = ["q", "k", "v", "", "d" if "gated" in rule else "", "b" if "delta" in rule else ""]
    infos = [value("q", "f32", [2, 3, 8]), value("k", "f32", [2, 3, 4]), value("v", "f32", [2, 3, 6])]
    feeds = [q, k, v]
    if "gated" in rule:
        infos.append(value("d", "f32", [2, 3, 2]))
        feeds.append(decay)
    if "delta" in rule:
        infos.append(value("b", "f32", [2, 3, 2]))
        feeds.append(beta)
    proto = model([node("LinearAttention", names, ["y", "state"], q_num_heads=4, kv_num_heads=2, update_rule=rule)],
                  infos, [value("y"), value("state")], opset=27)
    y, state = tractile.load(proto).run(feeds)
    expected_y, expected_state = naive_linear_attention(q, k, v, decay, beta, rule, 4, 2)
    np.testing.assert_allclose(y, expected_y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(state, expected_state, rtol=1e-5, atol=1e-5)


def test_causal_conv_with_state_continues_a_stream():
    x, w, bias = rand(1, 3, 7), rand(3, 1, 3), rand(3)
    proto = model([node("CausalConvWithState", ["x", "w", "b", "p"], ["y", "s"], activation="silu")],
                  [value("x", "f32", [1, 3, "T"]), value("w", "f32", [3, 1, 3]), value("b", "f32", [3]),
                   value("p", "f32", [1, 3, 2])], [value("y"), value("s")], opset=27)
    state = np.zeros((1, 3, 2), np.float32)
    runnable = tractile.load(proto)
    first, state = runnable.run([x[:, :, :4], w, bias, state])
    second, state = runnable.run([x[:, :, 4:], w, bias, state])
    streamed = np.concatenate([first, second], axis=2)
    for c in range(3):
        linear = np.convolve(x[0, c].astype(np.float64), w[c, 0, ::-1])[:7] + bias[c]
        np.testing.assert_allclose(streamed[0, c], linear / (1 + np.exp(-linear)), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(state, x[:, :, -2:])


def test_swiglu():
    a, b = rand(3, 4), rand(3, 4)
    proto = model([node("SwiGLU", ["a", "b"], ["y"], alpha=0.7)], [value("a", "f32", [3, 4]),
                                                                   value("b", "f32", [3, 4])], [value("y")], opset=28)
    (y,) = tractile.load(proto).run([a, b])
    np.testing.assert_allclose(y, a / (1 + np.exp(-0.7 * a)) * b, rtol=1e-5, atol=1e-6)


def test_attention_cost_and_unused_present_outputs():
    shapes = {"Q": (1, 2, 3, 4), "K": (1, 2, 5, 4), "V": (1, 2, 5, 6)}
    proto = attention_model(shapes, {}, outputs=("Y", "present_k"))
    proto.graph.output.pop()
    typed = tractile.load(proto)
    (attention,) = [n for n in typed.nodes if n.op.name == "Attention"]
    assert attention.op.outputs == 1
    facts = [typed.outlet_fact(o) for o in attention.inputs]
    assert attention.op.cost(facts)["flops"] == 2 * 2 * 3 * 5 * (4 + 6)
