"""Activations: values against onnxruntime and formulas, f16/bf16, Clip bounds, PRelu, fusion."""
import math

import ml_dtypes
import numpy as np
import pytest

import tractile
from tractile import AnalysisError
from tractile.errors import ModelFormatError
from tractile.ops.activations import FUSABLE, Clip, HardSigmoid, LeakyRelu, Relu, Sigmoid, Tanh, fusable

from .onnx_builder import model, node, value
from .single_node import check_node, run_node

RNG = np.random.default_rng(9)
X = np.concatenate([RNG.uniform(-6, 6, 40), [0.0, -0.0, 1.0, -1.0, 30.0, -30.0]]).astype(np.float32).reshape(2, 23)

ACTIVATIONS = [
    ("Relu", {}, 14), ("Sigmoid", {}, 13), ("Tanh", {}, 13), ("LeakyRelu", {"alpha": 0.1}, 16),
    ("Elu", {"alpha": 2.0}, 6), ("Celu", {"alpha": 2.0}, 12), ("Selu", {}, 6),
    ("Selu", {"alpha": 2.0, "gamma": 3.0}, 6), ("HardSigmoid", {"alpha": 0.5, "beta": 0.6}, 6),
    ("HardSwish", {}, 14), ("Mish", {}, 18), ("Softplus", {}, 1), ("Softsign", {}, 1),
    ("ThresholdedRelu", {"alpha": 2.0}, 10), ("Shrink", {"lambd": 1.5, "bias": 1.5}, 9), ("Shrink", {}, 9),
    ("Gelu", {}, 20), ("Gelu", {"approximate": "tanh"}, 20),
]


@pytest.mark.parametrize("op, attrs, opset", ACTIVATIONS, ids=lambda v: str(v))
def test_activations_match_onnxruntime(op, attrs, opset):
    check_node(op, {"x": X}, opset=opset, rtol=1e-5, atol=1e-6, **attrs)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


FORMULAS = {
    "Swish": lambda x: x * _sigmoid(0.5 * x),
    "Elu": lambda x: np.where(x >= 0, x, np.exp(x) - 1),
    "Gelu": lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
    "Mish": lambda x: x * np.tanh(np.log1p(np.exp(x))),
    "Celu": lambda x: np.maximum(x, 0) + np.minimum(0, np.exp(x) - 1),
}


def test_swish_follows_its_formula():
    got = run_node("Swish", {"x": X}, opset=24, alpha=0.5)[0]
    np.testing.assert_allclose(got, FORMULAS["Swish"](X.astype(np.float64)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("op", sorted(FORMULAS.keys() - {"Swish"}))
@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_float_activations_run_in_f32_and_round_once(op, dtype):
    opset = {"Gelu": 20, "Mish": 18, "Celu": 12}.get(op, 6)
    x = X.astype(dtype)
    got = run_node(op, {"x": x}, opset=opset)[0]
    assert got.dtype == dtype
    expected = FORMULAS[op](x.astype(np.float64)).astype(dtype).astype(np.float64)
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=2 ** -8 if dtype == np.float16 else 2 ** -7)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.float16, np.float64])
def test_relu_on_signed_types(dtype):
    x = np.array([-3, 0, 5, -128 if dtype == np.int8 else -7], dtype)
    np.testing.assert_array_equal(run_node("Relu", {"x": x}, opset=14)[0], np.array([0, 0, 5, 0], dtype))


def test_leaky_relu_on_half_floats():
    x = np.array([-2.0, 0.0, 3.0], ml_dtypes.bfloat16)
    got = run_node("LeakyRelu", {"x": x}, opset=16, alpha=0.5)[0]
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), [-1.0, 0.0, 3.0])


def test_shrink_on_integers():
    x = np.array([-5, -1, 0, 1, 5], np.int32)
    got = check_node("Shrink", {"x": x}, opset=9, lambd=1.5, bias=1.0)[0]
    np.testing.assert_array_equal(got, [-4, 0, 0, 0, 4])


def test_prelu_broadcasts_the_slope():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    check_node("PRelu", {"x": x, "slope": np.array([0.1, 0.2, 0.3], np.float32).reshape(3, 1)}, opset=16)
    check_node("PRelu", {"x": x, "slope": np.array([0.5], np.float32)}, opset=16)
    got = run_node("PRelu", {"x": np.array([-2, 3], np.int32), "slope": np.array([3], np.int32)}, opset=16)[0]
    np.testing.assert_array_equal(got, [-6, 3])


def test_prelu_slope_must_broadcast_to_the_input():
    with pytest.raises(AnalysisError, match="PRelu's slope 2,3,f32 does not broadcast to the input 3,f32"):
        run_node("PRelu", {"x": np.zeros(3, np.float32), "slope": np.ones((2, 3), np.float32)}, opset=16)


def test_clip_with_run_time_bounds_and_missing_min():
    x = RNG.uniform(-5, 5, (3, 4)).astype(np.float32)
    check_node("Clip", {"x": x, "lo": np.array(-1.0, np.float32), "hi": np.array(2.0, np.float32)}, opset=13)
    check_node("Clip", {"x": x, "lo": None, "hi": np.array(0.5, np.float32)}, opset=13)
    got = check_node("Clip", {"x": x, "lo": np.array(3.0, np.float32), "hi": np.array(1.0, np.float32)}, opset=13)[0]
    np.testing.assert_array_equal(got, np.full_like(x, 1.0))  # min > max gives max everywhere


def test_clip_on_integers_and_scalars():
    x = np.array([-128, -5, 0, 7, 127], np.int8)
    check_node("Clip", {"x": x, "lo": np.array(-6, np.int8)}, opset=13)
    got = run_node("Clip", {"x": np.array(9.0, np.float32), "lo": np.array(0, np.float32),
                            "hi": np.array(6, np.float32)}, opset=13)[0]
    assert isinstance(got, np.ndarray) and got.shape == () and got == 6


def test_clip_with_constant_bounds_becomes_attributes():
    proto = model([node("Clip", ["x", "lo", "hi"], ["y"])], [value("x", "f32", [4])], [value("y", "f32")],
                  {"lo": np.array(0.0, np.float32), "hi": np.array(6.0, np.float32)}, opset=13)
    typed = tractile.load(proto)
    clip = [n.op for n in typed.nodes if isinstance(n.op, Clip)]
    assert clip == [Clip(0.0, 6.0)] and fusable(clip[0])
    np.testing.assert_array_equal(typed.run([np.array([-1, 2, 7, 6], np.float32)])[0], [0, 2, 6, 6])


def test_clip_bounds_must_be_scalars_of_the_input_type():
    with pytest.raises(AnalysisError, match="Clip bounds must be scalars"):
        run_node("Clip", {"x": np.zeros(3, np.float32), "lo": np.zeros(2, np.float32)}, opset=13)


def test_activation_fused_into_matmul_matches_the_node():
    for activation in (Relu(), Sigmoid(), Tanh(), LeakyRelu(0.2), Clip(-0.5, 0.5)):
        assert fusable(activation) and isinstance(activation, FUSABLE)
        y = RNG.standard_normal((4, 5)).astype(np.float32)
        unfused = activation.eval([y])[0]
        np.testing.assert_allclose(activation.apply_inplace(y.copy()), unfused, rtol=1e-6, atol=1e-7)
    assert not fusable(Clip(dynamic_low=True)) and not fusable(HardSigmoid())
    proto = model([node("MatMul", ["x", "w"], ["m"]), node("Sigmoid", ["m"], ["y"])],
                  [value("x", "f32", [3, 4])], [value("y", "f32")],
                  {"w": RNG.standard_normal((4, 2)).astype(np.float32)})
    typed = tractile.load(proto)
    assert [n.op.name for n in typed.nodes if n.op.name != "Const"] == ["Source", "MatMul"]
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    from ..conftest import run_onnxruntime

    np.testing.assert_allclose(typed.run([x])[0], run_onnxruntime(proto, [x])[0], rtol=1e-5, atol=1e-6)


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(ModelFormatError, match="approximate must be 'none' or 'tanh', got 'fast'"):
        run_node("Gelu", {"x": X}, opset=20, approximate="fast")


def test_float_activations_reject_integers():
    with pytest.raises(AnalysisError, match="Sigmoid needs a floating-point input, got i32"):
        run_node("Sigmoid", {"x": np.zeros(2, np.int32)}, opset=13)
