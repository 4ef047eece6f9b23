"""Hostile models end in a TractileError within a second or two: deep or exploding symbolic
dims, sparse initializers outside their dims, endless loops (iteration limit and deadline)."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.dim import DimensionTooComplex
from tractile.errors import ModelFormatError, RunError
from tractile.ops.base import Limits

OPSET = [helper.make_opsetid("", 17)]


def relu_model(dim_param: str):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [dim_param])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=OPSET)


@pytest.mark.parametrize("dim_param,says", [
    ("(" * 5000 + "a" + ")" * 5000, "characters"),
    ("(" * 100 + "a" + ")" * 100, "deeper than"),
    ("-" * 200 + "a", "deeper than"),
    ("*".join(f"(a{i}+b{i})" for i in range(24)), "terms"),
])
def test_hostile_dim_params_are_refused_naming_the_input(dim_param, says):
    start = time.monotonic()
    with pytest.raises(DimensionTooComplex, match=says) as raised:
        tractile.load(relu_model(dim_param))
    assert "input 'x', axis 0" in str(raised.value)
    assert time.monotonic() - start < 2


def test_reasonable_dim_expressions_still_parse():
    t = tractile.symbol("T")
    assert tractile.parse_dim("((2*T+1))//2") == (2 * t + 1) // 2
    assert tractile.parse_dim("-(-(T))") == t
    assert tractile.parse_dim("*".join(f"(a{i}+b{i})" for i in range(10))) is not None  # 1,024 terms: fine


@pytest.mark.parametrize("indices,dims,says", [
    (np.array([99], np.int64), [4], r"index \[99\] is outside dims \[4\]"),
    (np.array([[0, 5]], np.int64), [2, 2], r"index \[0, 5\] is outside"),
    (np.array([0, 1], np.int64), [4], "2 indices for 1 values"),
])
def test_sparse_initializers_are_checked_against_their_dims(indices, dims, says):
    values = numpy_helper.from_array(np.ones(1, np.float32), "w")
    sparse = helper.make_sparse_tensor(values, numpy_helper.from_array(indices, "i"), dims)
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              sparse_initializer=[sparse])
    with pytest.raises(ModelFormatError, match=says):
        tractile.load(helper.make_model(graph, opset_imports=OPSET))


def test_a_valid_sparse_initializer_is_dense_in_place():
    values = numpy_helper.from_array(np.array([5, 7], np.float32), "w")
    sparse = helper.make_sparse_tensor(values, numpy_helper.from_array(np.array([1, 3], np.int64), "i"), [2, 2])
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              sparse_initializer=[sparse])
    y, = tractile.load(helper.make_model(graph, opset_imports=OPSET)).run([])
    np.testing.assert_array_equal(y, [[0, 5], [0, 7]])


def endless_loop_model():
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Identity", ["v_in"], ["v_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1])])
    graph = helper.make_graph([helper.make_node("Loop", ["", "c", "x"], ["y"], body=body)], "g",
                              [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                               helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    return tractile.load(helper.make_model(graph, opset_imports=OPSET))


def test_an_endless_loop_meets_the_run_deadline():
    model = endless_loop_model()
    tractile.set_limits(max_run_seconds=0.3)
    try:
        start = time.monotonic()
        with pytest.raises(RunError, match="deadline"):
            model.run([np.array(True), np.zeros(1, np.float32)])
        assert time.monotonic() - start < 2
        y, = model.run([np.array(False), np.ones(1, np.float32)])  # a loop that ends is untouched
        np.testing.assert_array_equal(y, [1])
    finally:
        tractile.set_limits(max_run_seconds=math.inf)
    assert Limits.max_run_seconds is None


def test_an_endless_loop_meets_the_iteration_limit():
    assert Limits.max_loop_iterations == 1 << 18, "the default ends a trivial endless loop in about a second"
    model = endless_loop_model()
    saved = Limits.max_loop_iterations
    tractile.set_limits(max_loop_iterations=2000)
    try:
        with pytest.raises(RunError, match="did not stop after 2000 iterations"):
            model.run([np.array(True), np.zeros(1, np.float32)])
    finally:
        Limits.max_loop_iterations = saved


def local_function(name: str, calls: str):
    return helper.make_function("local", name, ["a"], ["b"], [helper.make_node(calls, ["a"], ["b"], domain="local")],
                                [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])


@pytest.mark.parametrize("functions,cycle", [([("F", "F")], "local.F -> local.F"),
                                             ([("F", "G"), ("G", "F")], "local.F -> local.G -> local.F")])
def test_recursive_local_functions_are_refused_at_load(functions, cycle):
    graph = helper.make_graph([helper.make_node("F", ["x"], ["y"], domain="local")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    proto = helper.make_model(graph, opset_imports=OPSET + [helper.make_opsetid("local", 1)],
                              functions=[local_function(*pair) for pair in functions])
    with pytest.raises(ModelFormatError, match=cycle):
        tractile.load(proto)


@pytest.mark.parametrize("inputs,says", [(None, "got None"), (b"...", "got bytes"), ("x", "got str"),
                                         (object(), "got object"), ([None], 'input "x" is None'),
                                         ({"x": None}, 'input "x" is None'),
                                         ([[1.0, "a", 3.0, 4.0]], 'input "x": list cannot become')])
def test_inputs_that_are_not_arrays_are_refused_naming_the_input(inputs, says):
    model = tractile.load(relu_model("4"))
    with pytest.raises(RunError, match=says):
        model.run(inputs)
    assert model.run(np.ones(4, np.float32))[0].shape == (4,)


def test_an_endless_trivial_loop_ends_within_seconds_by_default():
    model = endless_loop_model()
    start = time.monotonic()
    with pytest.raises(RunError, match=f"did not stop after {1 << 18} iterations"):
        model.run([np.array(True), np.zeros(1, np.float32)])
    assert time.monotonic() - start < 30  # about 1 s alone; a loaded 2-core machine took 12 s
