"""ai.onnx.preview.training optimisers: Adagrad, Momentum, Adam (one step, several tensors).

onnxruntime's inference build has no training ops: the oracle is the update written out by hand,
element by element in Python floats.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper

import tractile
from tractile.errors import AnalysisError, ModelFormatError

DOMAIN = "ai.onnx.preview.training"
RNG = np.random.default_rng(8)


def optimizer_model(op_type: str, groups: list[str], shapes: list[tuple], dtype=TensorProto.FLOAT, **attrs):
    """R, T, then for each group (X, G, V...) one input per shape; outputs the new X then new states."""
    names = [f"{group}{i}" for group in groups for i in range(len(shapes))]
    inputs = [helper.make_tensor_value_info("R", TensorProto.FLOAT, []),
              helper.make_tensor_value_info("T", TensorProto.INT64, [])]
    inputs += [helper.make_tensor_value_info(n, dtype, list(shapes[i % len(shapes)])) for i, n in enumerate(names)]
    outputs = [f"{group}{i}_new" for group in ["X", *groups[2:]] for i in range(len(shapes))]
    node = helper.make_node(op_type, ["R", "T", *names], outputs, domain=DOMAIN, **attrs)
    graph = helper.make_graph([node], "train", inputs, [helper.make_empty_tensor_value_info(o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12), helper.make_opsetid(DOMAIN, 1)],
                             ir_version=10)


def run(proto, *feeds):
    return tractile.load(proto).plan().state(check_facts=True).run(list(feeds))


def f32(value: float) -> float:
    """An attribute as the model stores it (ONNX float attributes are f32)."""
    return float(np.float32(value))


def by_hand(update, *arrays):
    """Apply a scalar ``update`` element by element in Python floats; one array per result."""
    flat = [a.astype(np.float64).ravel().tolist() for a in arrays]
    results = list(zip(*[update(*items) for items in zip(*flat)]))
    return [np.asarray(r).reshape(arrays[0].shape) for r in results]


def test_adagrad_two_tensors():
    r, t, norm, decay, eps = 0.1, 3, 0.01, 0.2, 1e-6
    x = [RNG.standard_normal((2, 3)).astype(np.float32), RNG.standard_normal(4).astype(np.float32)]
    g = [RNG.standard_normal(a.shape).astype(np.float32) for a in x]
    h = [RNG.random(a.shape).astype(np.float32) for a in x]
    proto = optimizer_model("Adagrad", ["X", "G", "H"], [(2, 3), (4,)], norm_coefficient=norm, decay_factor=decay,
                            epsilon=eps)
    out = run(proto, np.float32(r), np.int64(t), *x, *g, *h)

    def update(x, g, h):
        rate = r / (1 + t * decay)
        g_reg = norm * x + g
        h_new = h + g_reg * g_reg
        return x - rate * g_reg / (math.sqrt(h_new) + eps), h_new

    for i in range(2):
        x_new, h_new = by_hand(update, x[i], g[i], h[i])
        np.testing.assert_allclose(out[i], x_new, rtol=1e-5)
        np.testing.assert_allclose(out[2 + i], h_new, rtol=1e-5)
        assert out[i].dtype == np.float32 and out[i].shape == x[i].shape


@pytest.mark.parametrize("mode", ["standard", "nesterov"])
@pytest.mark.parametrize("step", [0, 5])
def test_momentum(mode, step):
    r, alpha, beta, norm = f32(0.05), f32(0.9), f32(0.3), f32(0.001)
    x, g, v = (RNG.standard_normal((3, 2)) for _ in range(3))
    proto = optimizer_model("Momentum", ["X", "G", "V"], [(3, 2)], dtype=TensorProto.DOUBLE, alpha=alpha, beta=beta,
                            norm_coefficient=norm, mode=mode)
    x_out, v_out = run(proto, np.float32(r), np.int64(step), x, g, v)

    def update(x, g, v):
        g_reg = norm * x + g
        v_new = alpha * v + (beta if step > 0 else 1.0) * g_reg
        direction = g_reg + alpha * v_new if mode == "nesterov" else v_new
        return x - r * direction, v_new

    x_new, v_new = by_hand(update, x, g, v)
    assert x_out.dtype == np.float64
    np.testing.assert_allclose(x_out, x_new, rtol=1e-12)
    np.testing.assert_allclose(v_out, v_new, rtol=1e-12)


@pytest.mark.parametrize("step", [0, 1, 7])
def test_adam_with_post_regularisation(step):
    r, alpha, beta, eps, norm, post = (f32(v) for v in (0.01, 0.8, 0.95, 1e-7, 0.02, 0.1))
    x, g, v, h = (RNG.standard_normal((2, 2)) for _ in range(4))
    h = np.abs(h)
    proto = optimizer_model("Adam", ["X", "G", "V", "H"], [(2, 2)], dtype=TensorProto.DOUBLE, alpha=alpha, beta=beta,
                            epsilon=eps, norm_coefficient=norm, norm_coefficient_post=post)
    x_out, v_out, h_out = run(proto, np.float32(r), np.int64(step), x, g, v, h)

    def update(x, g, v, h):
        g_reg = norm * x + g
        v_new = alpha * v + (1 - alpha) * g_reg
        h_new = beta * h + (1 - beta) * g_reg * g_reg
        rate = r * (math.sqrt(1 - beta ** step) / (1 - alpha ** step) if step > 0 else 1.0)
        return (1 - post) * (x - rate * v_new / (math.sqrt(h_new) + eps)), v_new, h_new

    for got, expected in zip((x_out, v_out, h_out), by_hand(update, x, g, v, h)):
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_adam_defaults_and_symbolic_shapes():
    proto = optimizer_model("Adam", ["X", "G", "V", "H"], [("N", 3)])
    model = tractile.load(proto)
    assert [str(f) for f in model.output_facts] == ["N,3,f32"] * 3
    x = np.ones((2, 3), np.float32)
    zeros = np.zeros_like(x)
    x_new, v_new, h_new = model.run([np.float32(0.1), np.int64(1), x, x, zeros, zeros])
    # first step from zero averages, default alpha 0.9 and beta 0.999 (as f32): V = (1 - alpha) G,
    # H = (1 - beta) G^2, rate R sqrt(1 - beta) / (1 - alpha), so X = 1 - R sqrt(1 - beta) / (sqrt(1 - beta) + eps)
    alpha, beta = f32(0.9), f32(0.999)
    np.testing.assert_allclose(v_new, 1 - alpha, rtol=1e-6)
    np.testing.assert_allclose(h_new, 1 - beta, rtol=1e-6)
    root = math.sqrt(1 - beta)
    np.testing.assert_allclose(x_new, 1 - f32(0.1) * root / (root + f32(1e-6)), rtol=1e-6)


def test_uneven_inputs_are_a_format_error():
    proto = optimizer_model("Momentum", ["X", "G", "V"], [(2,)], alpha=0.9, beta=0.1, norm_coefficient=0.0,
                            mode="standard")
    del proto.graph.node[0].input[-1]
    with pytest.raises(ModelFormatError, match="Momentum.*3 groups of equal length"):
        tractile.load(proto)


def test_unknown_momentum_mode_is_a_format_error():
    proto = optimizer_model("Momentum", ["X", "G", "V"], [(2,)], alpha=0.9, beta=0.1, norm_coefficient=0.0,
                            mode="heavy")
    with pytest.raises(ModelFormatError, match="mode must be 'standard' or 'nesterov'"):
        tractile.load(proto)


def test_gradient_of_another_shape_is_an_analysis_error():
    proto = optimizer_model("Adagrad", ["X", "G", "H"], [(2, 3)])
    proto.graph.input[3].type.tensor_type.shape.dim[1].dim_value = 4
    with pytest.raises(AnalysisError, match=r"Adagrad G\[0\] should be like X\[0\]"):
        tractile.load(proto)
