"""Binary ops and activations on self-built models, checked against the TFLite interpreter.

Every int8 test feeds every input value (every pair for binary ops), with power-of-two
scale ratios chosen so that ideal results fall on rounding ties, and checks the output
reaches its clamp bounds; TFLite's reference kernels must agree bit for bit.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import (
    GraphBuilder,
    all_pairs,
    assert_saturates,
    assert_ties,
    check_model,
    every_value,
    q,
    random_values,
)
from tractile.ops.activations import PRelu
from tractile.ops.nn import Softmax

RNG = np.random.default_rng(20)


def binary_model(kind: str, dtype: str, shapes, quant=(None, None, None), activation="NONE", pot=True):
    g = GraphBuilder()
    a = g.input("a", dtype, shapes[0], quant[0])
    b = g.input("b", dtype, shapes[1], quant[1])
    return g.outputs(g.binary("y", kind, [a, b], quant[2], activation, pot))


def real(values, quant) -> np.ndarray:
    return (values.astype(np.float64) - quant.zero_point[0]) * quant.scale[0]


# (quantization of a, b, output) with power-of-two ratios, and the ideal result in output units
INT8_CASES = {
    "add": ((q(2 ** -4, 3), q(2 ** -5, -7), q(2 ** -4, 2)), lambda a, b: a + b),
    "sub": ((q(2 ** -4, -3), q(2 ** -5, 9), q(2 ** -4, -2)), lambda a, b: a - b),
    "mul": ((q(2 ** -3, 1), q(2 ** -4, -1), q(2 ** -6, 4)), lambda a, b: a * b),
    "div": ((q(2 ** -2, 0), q(2 ** -3, 3), q(2 ** -4, -5)), lambda a, b: a / b),
    "squared_difference": ((q(2 ** -3, 2), q(2 ** -3, -2), q(2 ** -5, -128)), lambda a, b: (a - b) ** 2),
}


@pytest.mark.parametrize("kind", sorted(INT8_CASES))
def test_int8_binary_every_pair(kind):
    quant, ideal = INT8_CASES[kind]
    a, b = all_pairs("i8")
    if kind == "div":
        keep = b != quant[1].zero_point[0]
        a, b = a[keep], b[keep]
    model = binary_model(kind, "i8", [a.shape, b.shape], quant)
    out = check_model(model, [[a, b]])[0][0]
    expected = ideal(real(a, quant[0]), real(b, quant[1])) / quant[2].scale[0] + quant[2].zero_point[0]
    assert_ties(expected)
    assert_saturates(out, -128, 127)


@pytest.mark.parametrize("kind", ["maximum", "minimum"])
def test_int8_maximum_minimum_every_pair(kind):
    a, b = all_pairs("i8")
    quant = (q(0.1, 2), q(0.1, 2), q(0.1, 2))
    out = check_model(binary_model(kind, "i8", [a.shape, b.shape], quant), [[a, b]])[0][0]
    np.testing.assert_array_equal(out, np.maximum(a, b) if kind == "maximum" else np.minimum(a, b))


@pytest.mark.parametrize("kind, activation", [
    *((kind, activation) for kind in ("add", "sub", "mul", "div") for activation in ("NONE", "RELU6")),
    ("squared_difference", "NONE"), ("maximum", "NONE"), ("minimum", "NONE"),  # no fused activation on these
])
def test_float_binary_broadcast(kind, activation):
    model = binary_model(kind, "f32", [(2, 3, 4), (3, 1)], activation=activation)
    check_model(model, [[random_values(f, RNG) for f in model.input_facts] for _ in range(5)])


@pytest.mark.parametrize("kind,activation", [("add", "RELU"), ("sub", "RELU6"), ("mul", "RELU_N1_TO_1"),
                                             ("div", "RELU")])
def test_int8_broadcast_with_fused_activation(kind, activation):
    quant = (q(0.05, 3), q(0.07, -10), q(0.02, 5))
    model = binary_model(kind, "i8", [(2, 3, 4), (4,)], quant, activation)
    sets = []
    for _ in range(10):
        a, b = (random_values(f, RNG) for f in model.input_facts)
        b[b == -10] = -9
        sets.append([a, b])
    check_model(model, sets)


@pytest.mark.parametrize("kind,dtype,pot", [("add", "i16", False), ("sub", "i16", False), ("mul", "i16", True),
                                            ("add", "u8", True), ("mul", "u8", True), ("div", "u8", True)])
def test_int16_and_uint8_binary(kind, dtype, pot):
    zero = 128 if dtype == "u8" else 0
    quant = (q(0.05, zero), q(0.07, zero - 3 if dtype == "u8" else 0), q(0.1, zero))
    model = binary_model(kind, dtype, [(4, 64), (4, 64)], quant, pot=pot)
    sets = []
    for _ in range(5):
        a, b = (random_values(f, RNG) for f in model.input_facts)
        if kind == "div":
            b[b == quant[1].zero_point[0]] += 1
        sets.append([a, b])
    check_model(model, sets)


@pytest.mark.parametrize("quant", [(q(0.001), q(0.0015), q(0.15)), (q(2 ** -10), q(2 ** -10), q(2 ** -4))])
def test_int16_squared_difference_matches_tflite_micro(quant, compile_cache):
    """TFLite Micro's int16 SQUARED_DIFFERENCE (no left shift; LiteRT has none), compiled bit for bit."""
    from tests.compile.harness import check_against_interpreter

    model = binary_model("squared_difference", "i16", [(3, 40), (40,)], quant, pot=False)
    sets = [[random_values(f, RNG) for f in model.input_facts] for _ in range(3)]
    out = check_model(model, sets, oracle="micro")
    assert 0 < np.count_nonzero(out[0][0] < 32767) < out[0][0].size  # some saturate, most do not
    check_against_interpreter(model.into_optimized(), compile_cache, inputs=sets, name="squared_difference16")


def test_int16_add_and_sub_with_power_of_two_scales():
    cases = (("add", (q(2 ** -10), q(2 ** -12), q(2 ** -10))), ("sub", (q(2 ** -13), q(2 ** -11), q(2 ** -11))))
    for kind, quant in cases:
        model = binary_model(kind, "i16", [(512,), (512,)], quant)
        out = check_model(model, [[random_values(f, RNG) for f in model.input_facts] for _ in range(3)])
        assert out[0][0].dtype == np.int16


def test_int32_arithmetic():
    for kind in ("add", "sub", "mul", "div", "maximum"):
        model = binary_model(kind, "i32", [(3, 5), (5,)])
        sets = [[RNG.integers(-1000, 1000, (3, 5)).astype(np.int32), RNG.integers(1, 50, (5,)).astype(np.int32)
                 * RNG.choice([-1, 1], 5).astype(np.int32)]]
        check_model(model, sets)


def activation_model(kind: str, dtype: str, shape, in_q=None, out_q=None, alpha=0.0):
    g = GraphBuilder()
    x = g.input("x", dtype, shape, in_q)
    return g.outputs(g.activation("y", kind, x, out_q, alpha))


# (input, output quantization), the ideal output in output units (None: a table lookup), the output's
# expected (min, max): scale ratios of 5/2 make odd inputs fall on ties
ACTIVATIONS = {
    "relu": ((q(5 * 2 ** -5, -40), q(2 ** -4, -128)), lambda x: np.maximum(x, 0), (-128, 127)),
    "relu6": ((q(5 * 2 ** -5, -40), q(2 ** -4, -128)), lambda x: np.clip(x, 0, 6), (-128, -32)),
    "relu_n1_to_1": ((q(5 * 2 ** -9, 10), q(2 ** -8, 0)), lambda x: np.clip(x, -1, 1), (-128, 127)),
    "relu_0_to_1": ((q(5 * 2 ** -9, 10), q(2 ** -8, -128)), lambda x: np.clip(x, 0, 1), (-128, 127)),
    "leaky_relu": ((q(5 * 2 ** -5, 0), q(2 ** -4, -60)), lambda x: np.where(x >= 0, x, 0.25 * x), (-128, 127)),
    "logistic": ((q(0.06, -3), q(1 / 256, -128)), None, (-128, 127)),
    "tanh": ((q(0.03, 5), q(1 / 128, 0)), None, (-128, 127)),
    "hard_swish": ((q(0.04, -20), q(0.02, -110)), None, (-128, 127)),
}


@pytest.mark.parametrize("kind", sorted(ACTIVATIONS))
def test_int8_activation_every_value(kind):
    (in_q, out_q), ideal, bounds = ACTIVATIONS[kind]
    x = every_value("i8")
    out = check_model(activation_model(kind, "i8", x.shape, in_q, out_q, alpha=0.25), [[x]])[0][0]
    if ideal is not None:
        assert_ties(ideal(real(x, in_q)) / out_q.scale[0] + out_q.zero_point[0])
    assert_saturates(out, *bounds)


@pytest.mark.parametrize("kind", sorted(ACTIVATIONS))
def test_float_activation(kind):
    model = activation_model(kind, "f32", (4, 50), alpha=0.3)
    check_model(model, [[random_values(model.input_fact(0), RNG)] for _ in range(3)])


@pytest.mark.parametrize("kind,in_q,out_q", [
    ("logistic", q(0.1, 120), q(1 / 256, 0)), ("tanh", q(0.05, 100), q(1 / 128, 128)),
    ("relu6", q(0.05, 100), q(0.03, 20)), ("hard_swish", q(0.05, 130), q(0.04, 10))])
def test_uint8_activation_every_value(kind, in_q, out_q):
    x = every_value("u8")
    check_model(activation_model(kind, "u8", x.shape, in_q, out_q), [[x]])


@pytest.mark.parametrize("kind", ["relu", "relu6", "leaky_relu"])
def test_int16_activation(kind):
    model = activation_model(kind, "i16", (1000,), q(0.001), q(0.0015), alpha=0.3)
    check_model(model, [[random_values(model.input_fact(0), RNG)] for _ in range(3)])


@pytest.mark.parametrize("alpha", [-0.5, 1.7])
def test_leaky_relu_negative_and_large_alpha(alpha):
    x = every_value("i8")
    check_model(activation_model("leaky_relu", "i8", x.shape, q(0.05, 3), q(0.04, -5), alpha), [[x]])


def test_logistic_int8_needs_the_tflite_output_scale():
    from tractile.errors import AnalysisError

    with pytest.raises(AnalysisError, match="1/256"):
        activation_model("logistic", "i8", (4,), q(0.05), q(0.04))


def prelu_model(dtype, alpha_dtype, in_q=None, alpha_q=None, out_q=None):
    g = GraphBuilder()
    x = g.input("x", dtype, (2, 128, 3), in_q)
    alpha_values = RNG.standard_normal(3).astype(np.float32) if dtype == "f32" else \
        np.array([-100, 5, 120]) + (128 if alpha_dtype == "u8" else 0)
    alpha = g.const("alpha", alpha_values, alpha_dtype, alpha_q)
    return g.outputs(g.op("y", PRelu(quant=out_q), [x, alpha]))


@pytest.mark.parametrize("dtype,alpha_dtype,quant", [
    ("i8", "i8", (q(2 ** -4, 3), q(2 ** -6, -2), q(2 ** -5, -5))),
    ("u8", "u8", (q(0.05, 130), q(0.01, 120), q(0.04, 128))),
    ("i16", "i8", (q(0.01), q(0.02, 1), q(0.015))),
    ("f32", "f32", (None, None, None)),
])
def test_prelu(dtype, alpha_dtype, quant):
    model = prelu_model(dtype, alpha_dtype, *quant)
    if dtype == "i8":
        x = every_value("i8")
        sets = [[np.stack([np.stack([x[:128], x[128:], x[::2]], -1)] * 2)]]
    else:
        sets = [[random_values(model.input_fact(0), RNG)] for _ in range(3)]
    out = check_model(model, sets)[0][0]
    if dtype == "i8":
        assert_saturates(out, -128, 127)
        x = sets[0][0].astype(np.float64) - 3
        alpha = (np.array([-100, 5, 120]) + 2) * 2 ** -6
        assert_ties(np.where(x >= 0, x * 2 ** -4, x * 2 ** -4 * alpha) / 2 ** -5 - 5)


@pytest.mark.parametrize("scale", [0.05, 0.5, 0.002])
def test_int8_log_softmax(scale):
    g = GraphBuilder()
    x = g.input("x", "i8", (64, 10), q(scale, 3))
    model = g.outputs(g.op("y", Softmax(log=True, quant=q(16 / 256, 127)), [x]))
    sets = [[random_values(model.input_fact(0), RNG)] for _ in range(4)]
    sets.append([random_values(model.input_fact(0), RNG, -3, 3)])
    out = np.concatenate([o[0] for o in check_model(model, sets)])
    if scale >= 0.5:
        assert out.min() == -128 and out.max() == 127


def test_float_log_softmax():
    g = GraphBuilder()
    x = g.input("x", "f32", (8, 10))
    model = g.outputs(g.op("y", Softmax(log=True), [x]))
    check_model(model, [[random_values(model.input_fact(0), RNG)] for _ in range(3)])
