"""Element-wise math: unary functions, broadcasting arithmetic, variadic ops, symbolic values."""
import math

import ml_dtypes
import numpy as np
import pytest

import tractile
from tractile import AnalysisError, DatumType, TypedFact, symbol
from tractile.ops.binary import Add, Div, Max, Min, Mod, Mul, Sub
from tractile.ops.unary import erf

from .onnx_builder import model, node, value
from .single_node import check_node, run_node

RNG = np.random.default_rng(11)
X = RNG.uniform(-3, 3, (3, 4)).astype(np.float32)
UNIT = RNG.uniform(-0.95, 0.95, (3, 4)).astype(np.float32)
POSITIVE = RNG.uniform(0.1, 4, (3, 4)).astype(np.float32)

UNARY_INPUTS = {
    "Abs": X, "Neg": X, "Exp": X, "Log": POSITIVE, "Sqrt": POSITIVE, "Reciprocal": POSITIVE, "Floor": X,
    "Ceil": X, "Round": X, "Sign": X, "Sin": X, "Cos": X, "Tan": UNIT, "Asin": UNIT, "Acos": UNIT, "Atan": X,
    "Sinh": X, "Cosh": X, "Asinh": X, "Acosh": POSITIVE + 1, "Atanh": UNIT, "Erf": X,
}


@pytest.mark.parametrize("op", sorted(UNARY_INPUTS))
def test_unary_functions_match_onnxruntime(op):
    check_node(op, {"x": UNARY_INPUTS[op]}, opset=13, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", ["Exp", "Sqrt", "Sin", "Erf", "Round"])
def test_half_floats_compute_in_f32_and_round_once(op):
    x = POSITIVE.astype(np.float16)
    got = run_node(op, {"x": x}, opset=13)[0]
    assert got.dtype == np.float16
    reference = {"Exp": np.exp, "Sqrt": np.sqrt, "Sin": np.sin, "Round": np.round,
                 "Erf": np.vectorize(math.erf)}[op]
    np.testing.assert_array_equal(got, reference(x.astype(np.float64)).astype(np.float16))


def test_bfloat16_unary_math():
    x = POSITIVE.astype(ml_dtypes.bfloat16)
    got = run_node("Log", {"x": x}, opset=13)[0]
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got, np.log(x.astype(np.float64)).astype(ml_dtypes.bfloat16))


def test_round_halves_to_even():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4, 2.6], np.float32)
    np.testing.assert_array_equal(run_node("Round", {"x": x}, opset=11)[0], [-2, -2, -0, 0, 2, 2, 2, 3])


def test_erf_is_accurate_in_f64_everywhere():
    x = np.concatenate([np.linspace(-7, 7, 20001), np.geomspace(1e-300, 1e-2, 50), [0.0, 0.49999, 0.5, 6.0]])
    expected = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(erf(x), expected, rtol=4e-15, atol=0)
    single = x.astype(np.float32)
    np.testing.assert_allclose(erf(single), [math.erf(v) for v in single.astype(np.float64)], rtol=1e-9, atol=0)
    special = erf(np.array([np.nan, np.inf, -np.inf, -0.0]))
    assert np.isnan(special[0]) and special[1] == 1 and special[2] == -1 and np.signbit(special[3])


def test_integer_unary_ops_keep_their_type():
    x = np.array([-7, 0, 5, -128], np.int8)
    check_node("Abs", {"x": x}, opset=13)
    check_node("Neg", {"x": x[:3]}, opset=13)
    check_node("Sign", {"x": x}, opset=13)


def test_unary_float_only_ops_reject_integers():
    with pytest.raises(AnalysisError, match="Exp needs a floating-point input, got i32"):
        run_node("Exp", {"x": np.array([1, 2], np.int32)}, opset=13)


ARITH_TYPES = [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
               np.uint64]


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("dtype", ARITH_TYPES)
def test_arithmetic_with_broadcasting_matches_onnxruntime(op, dtype):
    a = RNG.integers(1, 60, (2, 3, 4)).astype(dtype)
    b = RNG.integers(1, 9, (3, 1)).astype(dtype)
    if np.dtype(dtype).kind in "if":
        a[0] *= -1
    check_node(op, {"a": a, "b": b}, opset=14)


def test_integer_division_truncates_toward_zero():
    a = np.array([7, -7, 7, -7, 6, -1], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5], np.int32)
    np.testing.assert_array_equal(run_node("Div", {"a": a, "b": b})[0], [3, -3, -3, 3, 2, 0])


def test_half_and_bfloat16_arithmetic():
    a, b = X.astype(np.float16), POSITIVE.astype(np.float16)
    check_node("Div", {"a": a, "b": b}, opset=14, rtol=1e-3)
    a16, b16 = X.astype(ml_dtypes.bfloat16), POSITIVE.astype(ml_dtypes.bfloat16)
    got = run_node("Mul", {"a": a16, "b": b16}, opset=14)[0]
    assert got.dtype == ml_dtypes.bfloat16
    expected = (a16.astype(np.float64) * b16.astype(np.float64)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("base, exponent", [
    (np.float32, np.float32), (np.float32, np.int32), (np.float32, np.int64), (np.int32, np.float32),
    (np.int64, np.int64), (np.int32, np.int32), (np.float64, np.float64)])
def test_pow_with_mixed_types_matches_onnxruntime(base, exponent):
    a = np.array([[1, 2, 3], [4, 5, 2]], base)
    b = np.array([2, 3, 1], exponent)
    check_node("Pow", {"a": a, "b": b}, opset=15)


def test_pow_of_negative_floats_and_fractional_exponents():
    got = run_node("Pow", {"a": np.array([-2.0, 4.0, 9.0], np.float32), "b": np.array([3.0, 0.5, -0.5], np.float32)},
                   opset=15)[0]
    np.testing.assert_allclose(got, [-8.0, 2.0, 1 / 3], rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32])
@pytest.mark.parametrize("fmod", [0, 1])
def test_integer_mod_matches_onnxruntime(dtype, fmod):
    a = np.array([-4, 7, 5, 4, -7, 8], dtype) if np.dtype(dtype).kind == "i" else np.array([4, 7, 5, 4, 7, 8], dtype)
    b = np.array([2, -3, 8, -2, 3, 5], dtype) if np.dtype(dtype).kind == "i" else np.array([2, 3, 8, 2, 3, 5], dtype)
    check_node("Mod", {"a": a, "b": b}, opset=13, fmod=fmod)


def test_mod_signs_follow_divisor_or_dividend():
    a = np.array([-4.5, 7.0, 5.0, -7.0], np.float32)
    b = np.array([2.0, -3.0, 8.0, 3.0], np.float32)
    np.testing.assert_allclose(run_node("Mod", {"a": a, "b": b}, fmod=1)[0], np.fmod(a, b))
    floor_mod = a - np.floor(a / b) * b
    np.testing.assert_allclose(run_node("Mod", {"a": a, "b": b}, fmod=0)[0], floor_mod)
    ints = run_node("Mod", {"a": np.array([-7, 7], np.int32), "b": np.array([3, -3], np.int32)})[0]
    np.testing.assert_array_equal(ints, [2, -2])


def test_bitshift_unsigned_matches_onnxruntime():
    a = np.array([16, 4, 1, 255], np.uint8)
    b = np.array([1, 2, 3, 4], np.uint8)
    check_node("BitShift", {"a": a, "b": b}, opset=11, direction="LEFT")
    check_node("BitShift", {"a": a, "b": b}, opset=11, direction="RIGHT")


def test_bitshift_signed_and_out_of_range_amounts():
    a = np.array([-16, -16, 5, 5, -1, 64], np.int8)
    b = np.array([2, 9, -1, 8, 7, 1], np.int8)
    right = run_node("BitShift", {"a": a, "b": b}, opset=11, direction="RIGHT")[0]
    np.testing.assert_array_equal(right, [-4, -1, 0, 0, -1, 32])
    left = run_node("BitShift", {"a": a, "b": b}, opset=11, direction="LEFT")[0]
    np.testing.assert_array_equal(left, [-64, 0, 0, 0, -128, -128])


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
def test_variadic_ops_broadcast_across_all_inputs(op):
    inputs = {"a": RNG.standard_normal((2, 1, 4)).astype(np.float32),
              "b": RNG.standard_normal((3, 1)).astype(np.float32),
              "c": RNG.standard_normal((4,)).astype(np.float32)}
    got = check_node(op, inputs, opset=13)[0]
    assert got.shape == (2, 3, 4)
    one = check_node(op, {"a": inputs["a"]}, opset=13)[0]
    np.testing.assert_array_equal(one, inputs["a"])


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int64, np.float16, np.float64])
def test_max_min_on_every_numeric_type(dtype):
    a = np.array([1, 5, 3, 0], dtype)
    b = np.array([4, 2, 3, 9], dtype)
    np.testing.assert_array_equal(run_node("Max", {"a": a, "b": b}, opset=13)[0], [4, 5, 3, 9])
    np.testing.assert_array_equal(run_node("Min", {"a": a, "b": b}, opset=13)[0], [1, 2, 3, 0])


def test_bad_broadcast_names_the_shapes():
    with pytest.raises(AnalysisError, match=r"cannot broadcast shapes \(2,3\) and \(4\)"):
        run_node("Add", {"a": np.zeros((2, 3), np.float32), "b": np.zeros(4, np.float32)})


def test_mismatched_operand_types_are_reported():
    with pytest.raises(AnalysisError, match=r"\(Add\): Add operands have different datum types: f32 and i64"):
        run_node("Add", {"a": np.zeros(3, np.float32), "b": np.zeros(3, np.int64)})


def test_bitshift_rejects_floats():
    with pytest.raises(AnalysisError, match="BitShift needs an integer first operand"):
        run_node("BitShift", {"a": np.zeros(3, np.float32), "b": np.zeros(3, np.float32)}, direction="LEFT")


def test_typed_facts_of_symbolic_shape_arithmetic():
    n = symbol("N")
    typed = tractile.TypedModel()
    shape = np.array([n, 3], dtype=object)
    source = typed.add_source("s", TypedFact(DatumType.I64, (2,), sym_value=shape))
    two = typed.add_const("two", np.array([2, 1], np.int64))
    (doubled,) = typed.wire_node("mul", Mul(), [source, two])
    assert list(typed.outlet_fact(doubled).sym_value) == [2 * n, 3]
    (total,) = typed.wire_node("add", Add(), [doubled, two])
    assert list(typed.outlet_fact(total).sym_value) == [2 * n + 2, 4]
    (half,) = typed.wire_node("div", Div(), [doubled, two])
    assert list(typed.outlet_fact(half).sym_value) == [n, 3]
    (largest,) = typed.wire_node("max", Max(), [total, two])
    assert list(typed.outlet_fact(largest).sym_value) == [2 * n + 2, 4]
    (smallest,) = typed.wire_node("min", Min(), [source, two])
    assert typed.outlet_fact(smallest).sym_value is None  # min(N, 2) depends on N
    (rest,) = typed.wire_node("mod", Mod(), [doubled, two])
    assert list(typed.outlet_fact(rest).konst) == [0, 0]
    (gone,) = typed.wire_node("sub", Sub(), [doubled, doubled])
    fact = typed.outlet_fact(gone)
    assert fact.sym_value is None and list(fact.konst) == [0, 0] and fact.konst.dtype == np.int64
    typed.outputs = [gone]
    assert [node.op.name for node in typed.declutter().nodes] == ["Source", "Const"]


def test_symbolic_shape_arithmetic_in_a_loaded_model():
    proto = model([node("Shape", ["x"], ["s"]), node("Mul", ["s", "k"], ["m"]), node("Reshape", ["x2", "m"], ["y"])],
                  [value("x", "f32", ["N", 4]), value("x2", "f32", ["N", 8])], [value("y", None)],
                  {"k": np.array([2, 1], np.int64)})
    loaded = tractile.load(proto, optimize=False).into_typed()
    assert loaded.output_fact(0).shape == (2 * symbol("N"), 4)


def test_variadic_op_without_inputs_is_a_format_error():
    from onnx import helper

    from tractile.errors import ModelFormatError

    graph = helper.make_graph([helper.make_node("Sum", [], ["y"])], "empty", [],
                              [helper.make_tensor_value_info("y", 1, None)])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=10)
    with pytest.raises(ModelFormatError, match=r'Sum node "y" \(opset 13\): needs at least one input'):
        tractile.load(proto)
