"""ONNX models quantized by onnxruntime's quantizer run as quantized core ops, as onnxruntime computes them."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.errors import TractileError
from tractile.ops.quant import DequantizeLinear, QuantizeLinear

from ..quantized_onnx import inputs, quantize

ort = pytest.importorskip("onnxruntime")

QUANTIZED_FAMILIES = ("Conv", "MatMul", "Add", "Mul", "AveragePool", "Concat", "Sigmoid", "LeakyRelu")


def onnxruntime_outputs(path, xs):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return [session.run(None, {"x": x})[0] for x in xs]


def check_fused(model) -> None:
    """Only the input's QuantizeLinear and the output's DequantizeLinear are left; every op that
    computes is a quantized core op in onnxruntime's flavour."""
    names = [type(n.op).__name__ for n in model.nodes]
    assert names.count("QuantizeLinear") == 1 and names.count("DequantizeLinear") == 1, names
    assert not any(name.startswith("QLinear") or name == "QGemm" for name in names), names
    computing = [n.op for n in model.nodes if type(n.op).__name__ in QUANTIZED_FAMILIES]
    assert {type(op).__name__ for op in computing} == set(QUANTIZED_FAMILIES)
    assert all(op.quant is not None and op.flavour == "onnxruntime" for op in computing)
    assert all(op.data_format == "NHWC" for op in computing if type(op).__name__ in ("Conv", "AveragePool"))


@pytest.mark.parametrize(("quant_format", "activations", "weights", "per_channel"), [
    ("QDQ", "QUInt8", "QInt8", False), ("QDQ", "QUInt8", "QInt8", True), ("QDQ", "QUInt8", "QUInt8", False),
    ("QOperator", "QUInt8", "QInt8", False), ("QOperator", "QInt8", "QInt8", True)])
def test_quantized_models_equal_onnxruntime_bit_for_bit(tmp_path, quant_format, activations, weights, per_channel):
    path = quantize(tmp_path, "q", quant_format, activations, weights, per_channel)
    model = tractile.load(path)
    check_fused(model)
    xs = inputs(12, seed=3)
    for x, expected in zip(xs, onnxruntime_outputs(path, xs)):
        np.testing.assert_array_equal(model.run([x])[0], expected)


def test_int8_activations_qdq_within_two_steps_of_onnxruntime(tmp_path):
    """Off ARM, onnxruntime leaves some int8-activation QDQ groups unfused (its QDQIsInt8Allowed)
    and computes them in float, which may round a step apart; tractile fuses every group, as
    onnxruntime does on ARM. The differences stay within two steps of the output's scale."""
    path = quantize(tmp_path, "q", "QDQ", "QInt8", "QInt8", per_channel=True)
    model = tractile.load(path)
    check_fused(model)
    scale = next(n.op for n in model.nodes if isinstance(n.op, DequantizeLinear))
    output_scale = float(model.outlet_fact(next(n for n in model.nodes if n.op is scale).inputs[1]).konst)
    xs = inputs(12, seed=3)
    steps = [np.rint(np.abs(model.run([x])[0] - y) / output_scale).max() for x, y in
             zip(xs, onnxruntime_outputs(path, xs))]
    assert max(steps) <= 2


def one_conv_qdq(signed: bool) -> tuple:
    """x -> Q -> DQ -> Conv(DQ(w) per channel, DQ(bias)) -> Q -> DQ, built by hand."""
    rng = np.random.default_rng(5)
    kind, zero = (TensorProto.INT8, -3) if signed else (TensorProto.UINT8, 121)
    w_scale = (rng.uniform(0.002, 0.004, 4)).astype(np.float32)
    x_scale, y_scale = np.float32(0.02), np.float32(0.05)
    inits = [numpy_helper.from_array(np.array(x_scale), "xs"), numpy_helper.from_array(np.array(y_scale), "ys"),
             helper.make_tensor("xz", kind, [], [zero]), helper.make_tensor("yz", kind, [], [zero + 5]),
             numpy_helper.from_array(rng.integers(-63, 64, (4, 3, 3, 3)).astype(np.int8), "wq"),
             numpy_helper.from_array(w_scale, "ws"), numpy_helper.from_array(np.zeros(4, np.int8), "wz"),
             numpy_helper.from_array(rng.integers(-900, 900, 4).astype(np.int32), "bq"),
             numpy_helper.from_array((x_scale * w_scale).astype(np.float32), "bs"),
             numpy_helper.from_array(np.zeros(4, np.int32), "bz")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0),
             helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["b"], axis=0),
             helper.make_node("Conv", ["xd", "w", "b"], ["c"], pads=[1, 0, 1, 0], strides=[1, 2]),
             helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("signed", [False, True])
def test_a_qdq_convolution_built_by_hand_fuses_and_equals_onnxruntime(tmp_path, signed):
    proto = one_conv_qdq(signed)
    path = tmp_path / "conv.onnx"
    path.write_bytes(proto.SerializeToString())
    model = tractile.load(path)
    conv = [n.op for n in model.nodes if type(n.op).__name__ == "Conv"]
    assert len(conv) == 1 and conv[0].quant is not None and conv[0].data_format == "NHWC"
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(2)
    for _ in range(4):
        x = (rng.standard_normal((1, 3, 6, 7)) * 2).astype(np.float32)
        np.testing.assert_array_equal(model.run([x])[0], session.run(None, {"x": x})[0])


def test_a_group_whose_wire_is_quantized_otherwise_stays_in_float(tmp_path):
    """A DequantizeLinear whose scale is not the one its input wire was quantized with is not fused:
    the float path keeps the model's meaning."""
    proto = one_conv_qdq(False)
    for init in proto.graph.initializer:
        if init.name == "xs":
            init.CopyFrom(numpy_helper.from_array(np.array(0.02, np.float32), "xs"))
    proto.graph.initializer.append(numpy_helper.from_array(np.array(0.03, np.float32), "xs2"))
    proto.graph.node[1].input[1] = "xs2"
    model = tractile.load(proto)
    assert any(type(n.op).__name__ == "Conv" and n.op.quant is None for n in model.nodes)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal((1, 3, 6, 7)).astype(np.float32)
    np.testing.assert_allclose(model.run([x])[0], session.run(None, {"x": x})[0], atol=0.051)


def test_quantize_linear_facts_carry_the_quantization():
    model = tractile.load(one_conv_qdq(True), optimize=False).into_typed()
    q = next(n for n in model.nodes if isinstance(n.op, QuantizeLinear))
    qparams = q.outputs[0].fact.qparams
    assert qparams is not None and qparams.zero_point == (-3,) and qparams.scale == (float(np.float32(0.02)),)


def test_a_qlinear_contrib_op_without_zero_points_is_refused_by_name():
    nodes = [helper.make_node("QLinearAdd", ["a", "s", "", "a", "s", "", "s", "z"], ["y"], domain="com.microsoft",
                              name="adder")]
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             helper.make_tensor("z", TensorProto.UINT8, [], [0])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [4])], inits)
    opsets = [helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)]
    proto = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    with pytest.raises(TractileError, match=r"adder.*scales and zero points"):
        tractile.load(proto)
