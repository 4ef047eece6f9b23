"""Comparisons, logical and bitwise ops, Where, IsNaN/IsInf, and symbolic shape logic."""
import ml_dtypes
import numpy as np
import pytest

import tractile
from tractile import AnalysisError, DatumType, TypedFact, symbol
from tractile.ops.logic import Equal, Greater, Less, LessOrEqual, Where

from .onnx_builder import model, node, value
from .single_node import check_node, run_node

RNG = np.random.default_rng(5)
COMPARISONS = ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8, np.uint64])
def test_comparisons_broadcast_and_match_onnxruntime(op, dtype):
    a = RNG.integers(0, 4, (2, 3, 4)).astype(dtype)
    b = RNG.integers(0, 4, (3, 1)).astype(dtype)
    got = check_node(op, {"a": a, "b": b}, opset=16)[0]
    assert got.dtype == np.bool_ and got.shape == (2, 3, 4)


def test_comparisons_of_half_floats_and_nan():
    a = np.array([1.0, np.nan, 2.0, -0.0], np.float16)
    b = np.array([1.0, np.nan, 3.0, 0.0], np.float16)
    np.testing.assert_array_equal(run_node("Equal", {"a": a, "b": b}, opset=19)[0], [True, False, False, True])
    bf = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(run_node("Less", {"a": bf[0], "b": bf[1]}, opset=13)[0],
                                  [False, False, True, False])


def test_string_equality():
    a = np.array([["cat", "dog"], ["", "émoji🙂"]], dtype=object)
    b = np.array(["cat", "émoji🙂"], dtype=object)
    got = check_node("Equal", {"a": a, "b": b}, opset=19)[0]
    np.testing.assert_array_equal(got, [[True, False], [False, True]])


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logical_ops_match_onnxruntime(op):
    a = RNG.random((3, 4)) > 0.5
    b = RNG.random((4,)) > 0.5
    check_node(op, {"a": a, "b": b}, opset=7)


def test_not():
    x = np.array([[True, False], [False, False]])
    np.testing.assert_array_equal(check_node("Not", {"x": x}, opset=1)[0], ~x)


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.uint64])
def test_bitwise_ops_match_onnxruntime(op, dtype):
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, (2, 3), dtype=dtype, endpoint=True)
    b = RNG.integers(info.min, info.max, (3,), dtype=dtype, endpoint=True)
    check_node(op, {"a": a, "b": b}, opset=18)


def test_bitwise_not():
    np.testing.assert_array_equal(run_node("BitwiseNot", {"x": np.array([0, 5, -1, 127], np.int8)})[0],
                                  [-1, -6, 0, -128])
    np.testing.assert_array_equal(check_node("BitwiseNot", {"x": np.array([0, 5, 255], np.uint8)})[0],
                                  [255, 250, 0])


def test_logic_type_errors_name_the_op():
    with pytest.raises(AnalysisError, match="And needs a bool first operand, got f32"):
        run_node("And", {"a": np.zeros(2, np.float32), "b": np.zeros(2, np.float32)}, opset=7)
    with pytest.raises(AnalysisError, match="BitwiseAnd needs an integer first operand, got f32"):
        run_node("BitwiseAnd", {"a": np.zeros(2, np.float32), "b": np.zeros(2, np.float32)})
    with pytest.raises(AnalysisError, match="Not needs a bool input, got i32"):
        run_node("Not", {"x": np.zeros(2, np.int32)}, opset=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_isnan_and_isinf(dtype):
    x = np.array([1.0, np.nan, np.inf, -np.inf, 0.0, -3.0], dtype)
    check_node("IsNaN", {"x": x}, opset=13)
    np.testing.assert_array_equal(run_node("IsInf", {"x": x}, opset=10)[0], [0, 0, 1, 1, 0, 0])
    np.testing.assert_array_equal(run_node("IsInf", {"x": x}, opset=10, detect_negative=0)[0], [0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(run_node("IsInf", {"x": x}, opset=10, detect_positive=0)[0], [0, 0, 0, 1, 0, 0])
    if dtype != np.float16:
        check_node("IsInf", {"x": x}, opset=10, detect_positive=0)


def test_isnan_on_bfloat16():
    x = np.array([1.0, np.nan, np.inf], ml_dtypes.bfloat16)
    np.testing.assert_array_equal(run_node("IsNaN", {"x": x}, opset=20)[0], [False, True, False])


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8])
def test_where_broadcasts_its_three_inputs(dtype):
    condition = RNG.random((3, 1)) > 0.5
    x = RNG.integers(0, 2, (1, 4)).astype(dtype)
    y = RNG.integers(0, 2, (2, 1, 1)).astype(dtype)
    got = check_node("Where", {"c": condition, "x": x, "y": y}, opset=16)[0]
    assert got.shape == (2, 3, 4)


def test_where_on_bools():
    condition = np.array([[True], [False]])
    x = np.array([True, False, True])
    y = np.array([[False], [True]])
    got = run_node("Where", {"c": condition, "x": x, "y": y}, opset=16)[0]
    np.testing.assert_array_equal(got, [[True, False, True], [True, True, True]])


def test_where_on_strings():
    condition = np.array([True, False])
    got = run_node("Where", {"c": condition, "x": np.array(["a", "b"], object), "y": np.array(["c", "d"], object)},
                   opset=16)[0]
    assert got.tolist() == ["a", "d"]


def test_where_errors():
    with pytest.raises(AnalysisError, match="datum type"):
        run_node("Where", {"c": np.array([True]), "x": np.zeros(1, np.float32), "y": np.zeros(1, np.int64)})
    with pytest.raises(AnalysisError, match=r"cannot broadcast shapes \(2\) and \(3\) and \(1\)"):
        run_node("Where", {"c": np.array([True, False]), "x": np.zeros(3, np.float32), "y": np.zeros(1, np.float32)})


def test_where_with_a_constant_condition_is_removed():
    proto = model([node("Where", ["c", "x", "y"], ["z"])],
                  [value("x", "f32", [2, 3]), value("y", "f32", [2, 3])], [value("z", "f32")],
                  {"c": np.array([True, True, True])})
    typed = tractile.load(proto)
    assert [n.op.name for n in typed.nodes] == ["Source", "Source"]
    x, y = np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)
    np.testing.assert_array_equal(typed.run([x, y])[0], x)


def test_comparisons_decide_on_symbols_when_the_sign_is_known():
    n = symbol("N")
    typed = tractile.TypedModel()
    shape = typed.add_source("s", TypedFact(DatumType.I64, (3,), sym_value=np.array([n, n + 2, 3], object)))
    minus_one = typed.add_const("m", np.array(-1, np.int64))
    three = typed.add_const("t", np.array([3, 3, 3], np.int64))
    (equal,) = typed.wire_node("eq", Equal(), [shape, minus_one])
    assert typed.outlet_fact(equal).konst.tolist() == [False, False, False]
    (less,) = typed.wire_node("lt", Less(), [minus_one, shape])
    assert typed.outlet_fact(less).konst.tolist() == [True, True, True]
    (greater,) = typed.wire_node("gt", Greater(), [shape, three])
    assert typed.outlet_fact(greater).known_value() is None  # N > 3 depends on N
    (at_most,) = typed.wire_node("le", LessOrEqual(), [three, shape])
    assert typed.outlet_fact(at_most).known_value() is None
    (chosen,) = typed.wire_node("where", Where(), [equal, three, shape])
    assert list(typed.outlet_fact(chosen).sym_value) == [n, n + 2, 3]


def test_pytorch_style_shape_program_resolves_symbolically():
    """``Where(Equal(target, -1), Shape(x), target)`` as exported for view/expand."""
    proto = model([node("Shape", ["x"], ["s"]),
                   node("Equal", ["target", "minus_one"], ["is_free"]),
                   node("Where", ["is_free", "s", "target"], ["resolved"]),
                   node("Expand", ["bias", "resolved"], ["y"])],
                  [value("x", "f32", ["N", 4])], [value("y", None)],
                  {"target": np.array([-1, 4], np.int64), "minus_one": np.array(-1, np.int64),
                   "bias": np.arange(4, dtype=np.float32)})
    typed = tractile.load(proto)
    assert typed.output_fact(0).shape == (symbol("N"), 4)
    got = typed.run([np.zeros((3, 4), np.float32)])[0]
    np.testing.assert_array_equal(got, np.broadcast_to(np.arange(4, dtype=np.float32), (3, 4)))
