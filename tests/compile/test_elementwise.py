"""Element-wise ops compiled: float unary and binary ops with broadcasting (ONNX and TFLite),
TFLite's quantized ADD/SUB/MUL and 8-bit activations bit for bit, in place where possible."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tests.tflite.builder import ACTIVATION_KINDS, GraphBuilder
from tractile.compile import generate
from tractile.datum import DatumType
from tractile.fact import TypedFact

from .harness import assert_builds_without_warnings, check_against_interpreter, q, single_op_model

OPSET = [helper.make_opsetid("", 17)]


def onnx_model(nodes, inputs: dict[str, list]):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                            for n, s in inputs.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return tractile.load(helper.make_model(graph, opset_imports=OPSET))


@pytest.mark.parametrize("op,attrs", [("Sigmoid", {}), ("Tanh", {}), ("Exp", {}), ("Abs", {}), ("Neg", {}),
                                      ("LeakyRelu", {"alpha": 0.2}), ("HardSigmoid", {}), ("HardSwish", {}),
                                      ("Erf", {}), ("Floor", {}), ("ThresholdedRelu", {"alpha": 0.5}), ("Softsign", {}),
                                      ("Softplus", {})])
def test_onnx_unary(op, attrs, compile_cache, tmp_path):
    model = onnx_model([helper.make_node(op, ["x"], ["y"], **attrs)], {"x": [2, 3, 5]})
    check_against_interpreter(model, compile_cache, runs=3, name="unary")
    assert_builds_without_warnings(generate(model, name="unary"), tmp_path)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
@pytest.mark.parametrize("a,b", [([2, 3, 4], [2, 3, 4]), ([2, 3, 4], [4]), ([2, 1, 4], [3, 1]), ([1], [2, 5]),
                                 ([3, 1, 5, 1], [1, 4, 1, 2])])
def test_onnx_binary_broadcasting(op, a, b, compile_cache):
    model = onnx_model([helper.make_node(op, ["a", "b"], ["y"])], {"a": a, "b": b})
    check_against_interpreter(model, compile_cache, runs=2, name="binary")


def test_in_place_chain_of_element_wise_ops(compile_cache):
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["s", "x"], ["m"]),
             helper.make_node("Add", ["m", "x"], ["a"]), helper.make_node("Tanh", ["a"], ["y"])]
    model = onnx_model(nodes, {"x": [64]})
    cm = check_against_interpreter(model, compile_cache, runs=3, name="chain")
    assert cm.report["arena_bytes"] < cm.report["no_reuse_bytes"]


@pytest.mark.parametrize("kind", ["logistic", "tanh", "hard_swish", "relu", "relu6", "leaky_relu"])
@pytest.mark.parametrize("dtype", ["i8", "u8", "f32"])
def test_tflite_activations(kind, dtype, compile_cache):
    datum = DatumType(dtype)
    if datum == DatumType.F32:
        in_q = out_q = None
    else:
        zero = -10 if datum == DatumType.I8 else 120
        in_q = q(0.05, zero)
        out_q = q(1 / 256, -128 if datum == DatumType.I8 else 0) if kind == "logistic" else \
            (q(1 / 128, 0 if datum == DatumType.I8 else 128) if kind == "tanh" else q(0.04, zero // 2))
    op = ACTIVATION_KINDS[kind](0.1, out_q)
    model = single_op_model(op, [TypedFact(datum, (3, 37), None, in_q)])
    rng = np.random.default_rng(0)
    if datum == DatumType.F32:
        inputs = [[rng.standard_normal((3, 37)).astype(np.float32) * 4]]
    else:
        every = np.arange(np.iinfo(datum.np).min, np.iinfo(datum.np).max + 1).astype(datum.np)
        inputs = [[np.resize(every, (3, 37))], [np.resize(every[111:], (3, 37))]]
    check_against_interpreter(model, compile_cache, inputs=inputs, name="tfl_act")


def tflite_binary(kind: str, dtype: str, shapes, quant=(None, None, None), activation="NONE"):
    """A TFLite binary op as the loader translates it: the core op, then its fused activation
    (which the optimizer fuses back before lowering)."""
    g = GraphBuilder()
    a, b = g.input("a", dtype, shapes[0], quant[0]), g.input("b", dtype, shapes[1], quant[1])
    return g.outputs(g.binary("y", kind, [a, b], quant[2], activation))


@pytest.mark.parametrize("kind", ["add", "sub", "mul", "maximum"])
@pytest.mark.parametrize("shapes", [((2, 5, 3), (2, 5, 3)), ((2, 5, 3), (3,)), ((1, 5, 1), (2, 1, 4))])
def test_quantized_int8_binary_is_bit_exact(kind, shapes, compile_cache):
    qa, qb, qo = q(0.031, -7), q(0.012, 3), q(0.05 if kind != "mul" else 0.002, 11)
    if kind == "maximum":
        qa = qb = qo
    model = tflite_binary(kind, "i8", shapes, (qa, qb, qo), "RELU6" if kind == "add" else "NONE")
    cm = check_against_interpreter(model, compile_cache, runs=6, name="tfl_bin")
    assert len(cm.source.program.nodes) == 1  # the activation fused into the op's clamp


@pytest.mark.parametrize("kind", ["add", "mul", "squared_difference", "minimum"])
def test_float_binary_with_fused_activation(kind, compile_cache):
    model = tflite_binary(kind, "f32", [(4, 6), (6,)], activation="RELU" if kind == "add" else "NONE")
    check_against_interpreter(model, compile_cache, runs=3, name="tfl_fbin")


@pytest.mark.parametrize("kind", ["add", "sub", "mul"])
@pytest.mark.parametrize("scales", [(0.001, 0.0005, 0.002), (2 ** -10, 2 ** -12, 2 ** -10)])
def test_quantized_int16_binary_is_bit_exact(kind, scales, compile_cache):
    quant = tuple(q(s, 0) for s in scales)
    check_against_interpreter(tflite_binary(kind, "i16", [(3, 8), (8,)], quant), compile_cache, runs=6,
                              name="tfl_bin16")


@pytest.mark.parametrize("dtype", [TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.INT32])
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Max", "Min"])
def test_onnx_integer_binary_wraps_as_numpy(op, dtype, compile_cache):
    graph = helper.make_graph([helper.make_node(op, ["a", "b"], ["y"])], "g",
                              [helper.make_tensor_value_info("a", dtype, [3, 4]),
                               helper.make_tensor_value_info("b", dtype, [4])],
                              [helper.make_tensor_value_info("y", dtype, None)])
    model = tractile.load(helper.make_model(graph, opset_imports=OPSET))
    check_against_interpreter(model, compile_cache, runs=4, name="int_binary")



@pytest.mark.parametrize("dtype", [TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.INT32])
def test_integer_division_truncates_as_the_interpreter(dtype, compile_cache):
    """Toward zero, with the interpreter's results for a zero divisor and for INT_MIN / -1."""
    graph = helper.make_graph([helper.make_node("Div", ["a", "b"], ["y"])], "g",
                              [helper.make_tensor_value_info("a", dtype, [5, 1]),
                               helper.make_tensor_value_info("b", dtype, [1, 6])],
                              [helper.make_tensor_value_info("y", dtype, None)])
    model = tractile.load(helper.make_model(graph, opset_imports=OPSET))
    np_type = helper.tensor_dtype_to_np_dtype(dtype)
    info = np.iinfo(np_type)
    a = np.array([[info.min], [info.max], [7], [0], [info.min + 1]]).astype(np_type)
    b = np.array([[0, 1, 3, 2, info.max, -1 if info.min else 5]]).astype(np_type)
    check_against_interpreter(model, compile_cache, inputs=[[a, b]], name="int_div")

@pytest.mark.parametrize("op,axes,keepdims", [("ReduceMean", [1], 1), ("ReduceSum", [0, 2], 0),
                                              ("ReduceMax", [2], 1), ("ReduceMin", None, 0), ("ReduceL2", [1, 2], 1),
                                              ("ReduceSumSquare", [0], 0), ("ReduceProd", [2], 0),
                                              ("ReduceL1", [1], 1)])
def test_reductions(op, axes, keepdims, compile_cache):
    inputs = ["x"] + (["axes"] if axes is not None else [])
    initializers = [numpy_helper.from_array(np.array(axes, np.int64), "axes")] if axes is not None else []
    graph = helper.make_graph([helper.make_node(op, inputs, ["y"], keepdims=keepdims)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    model = tractile.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    check_against_interpreter(model, compile_cache, runs=3, name="reduce")


@pytest.mark.parametrize("source,target", [(TensorProto.FLOAT, TensorProto.INT32),
                                           (TensorProto.INT64, TensorProto.FLOAT),
                                           (TensorProto.FLOAT, TensorProto.BOOL), (TensorProto.INT8, TensorProto.INT64),
                                           (TensorProto.INT32, TensorProto.INT8)])
def test_casts(source, target, compile_cache):
    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=target)], "g",
                              [helper.make_tensor_value_info("x", source, [4, 6])],
                              [helper.make_tensor_value_info("y", target, None)])
    model = tractile.load(helper.make_model(graph, opset_imports=OPSET))
    check_against_interpreter(model, compile_cache, runs=3, name="cast")


def test_pow(compile_cache):
    graph = helper.make_graph([helper.make_node("Pow", ["a", "b"], ["y"])], "g",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3, 4]),
                               helper.make_tensor_value_info("b", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = tractile.load(helper.make_model(graph, opset_imports=OPSET))
    rng = np.random.default_rng(0)
    inputs = [[np.abs(rng.standard_normal((3, 4))).astype(np.float32) + 0.1, rng.standard_normal(4).astype(np.float32)]]
    check_against_interpreter(model, compile_cache, inputs=inputs, name="pow")
