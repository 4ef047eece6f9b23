"""Convolutions and pooling compiled: TFLite CONV_2D / DEPTHWISE_CONV_2D / pools (float and
int8, bit for bit) and ONNX Conv (float) against the interpreter; person_detect's layers
with their outputs overlapping dying inputs."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.compile import generate
from tractile.datum import DatumType
from tractile.fact import TypedFact
from tractile.graph import OutletId

from ..conftest import shared_model
from ..tflite.builder import GraphBuilder, Window2D
from ..tflite.test_ops_spatial import WINDOWS, conv_model, transpose_conv_model
from .harness import assert_builds_without_warnings, check_against_interpreter, q, single_op_model


@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("depthwise,bias,activation,multiplier", [
    (False, "i32", "RELU6", 1), (False, None, "NONE", 1), (True, "i32", "RELU", 1), (True, None, "NONE", 2)])
def test_int8_convolutions_are_bit_exact(window, depthwise, bias, activation, multiplier, compile_cache):
    model = conv_model("i8", depthwise, window, bias, activation, multiplier)
    check_against_interpreter(model, compile_cache, runs=4, name="conv_s8")


def float_conv_model(depthwise: bool, window: Window2D, multiplier: int):
    rng = np.random.default_rng(int(depthwise) * 10 + multiplier)
    g = GraphBuilder()
    x = g.input("x", "f32", (1, 7, 8, 4))
    filters = 4 * multiplier if depthwise else 6
    w = g.const("w", rng.standard_normal((1, 3, 3, filters) if depthwise else (filters, 3, 3, 4)), "f32")
    b = g.const("b", rng.standard_normal(filters), "f32")
    build = g.depthwise if depthwise else g.conv
    return g.outputs(build("y", [x, w, b], window, activation="RELU6"))


@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("depthwise,bias,multiplier", [(False, "i64", 1), (False, None, 1), (True, "i64", 2),
                                                       (True, None, 1)])
def test_int16x8_convolutions_are_bit_exact(window, depthwise, bias, multiplier, compile_cache):
    model = conv_model("i16", depthwise, window, bias, "NONE", multiplier)
    check_against_interpreter(model, compile_cache, runs=4, name="conv_s16")


@pytest.mark.parametrize("window", WINDOWS, ids=str)
@pytest.mark.parametrize("depthwise", [False, True])
def test_float_convolutions_match(window, depthwise, compile_cache):
    model = float_conv_model(depthwise, window, 2 if depthwise else 1)
    check_against_interpreter(model, compile_cache, runs=3, rtol=1e-5, atol=1e-5, name="conv_f32")


@pytest.mark.parametrize("kind,dtype", [("average", "i8"), ("average", "i16"), ("average", "f32"), ("max", "i8"),
                                        ("max", "i16"), ("max", "f32"), ("l2", "f32")])
@pytest.mark.parametrize("window", [Window2D("SAME", 2, 2), Window2D("VALID", 1, 2)], ids=str)
def test_pooling(kind, dtype, window, compile_cache):
    quant = q(0.1, -3) if dtype == "i8" else (q(0.001, 0) if dtype == "i16" else None)
    g = GraphBuilder()
    x = g.input("x", dtype, (1, 7, 9, 5), quant)
    model = g.outputs(g.pool("y", kind, x, window, 3, 2, quant, "RELU"))
    check_against_interpreter(model, compile_cache, runs=4, name="pool")


@pytest.mark.parametrize("padding,stride,out_shape", [("SAME", 2, (1, 8, 10, 4)), ("VALID", 3, (1, 12, 17, 4))])
@pytest.mark.parametrize("dtype,bias", [("f32", True), ("i8", True), ("i8", False), ("i16", True)])
def test_transpose_convolutions(dtype, bias, padding, stride, out_shape, compile_cache, tmp_path):
    """TRANSPOSE_CONV: outputs past the full result (VALID, stride 3) get the bias only."""
    model = transpose_conv_model(dtype, padding, stride, out_shape, bias)
    tolerances = {"rtol": 1e-5, "atol": 1e-5} if dtype == "f32" else {}
    check_against_interpreter(model, compile_cache, runs=3, name=f"tconv_{dtype}", **tolerances)
    if padding == "SAME" and bias:
        assert_builds_without_warnings(generate(model.into_optimized(), name="tconv"), tmp_path)


def onnx_conv(rank: int, group: int, dilation: int, stride: int, pads: list[int]):
    rng = np.random.default_rng(rank * 100 + group * 10 + dilation)
    spatial = [9] * rank
    w = rng.standard_normal((6, 4 // group, *([3] * rank))).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w", "b"], ["c"], group=group, dilations=[dilation] * rank,
                            strides=[stride] * rank, pads=pads)
    graph = helper.make_graph([node, helper.make_node("Relu", ["c"], ["y"])], "conv",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, *spatial])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return tractile.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))


@pytest.mark.parametrize("rank,group,dilation,stride,pads", [
    (1, 1, 1, 1, [2, 0]), (1, 2, 4, 1, [8, 0]), (1, 1, 2, 2, [1, 1]), (2, 1, 1, 1, [1, 1, 1, 1]),
    (2, 2, 1, 2, [0, 1, 1, 0]), (2, 2, 2, 1, [2, 2, 2, 2])])
def test_onnx_float_conv(rank, group, dilation, stride, pads, compile_cache, tmp_path):
    model = onnx_conv(rank, group, dilation, stride, pads)
    check_against_interpreter(model, compile_cache, runs=3, rtol=1e-5, atol=1e-5, name="onnx_conv")
    assert_builds_without_warnings(generate(model, name="onnx_conv"), tmp_path)


def person_detect_until(kind: str, index: int):
    """The model up to its ``index``-th op of ``kind``: "Conv2D" (an OHWI Conv), "DepthwiseConv2D"
    (an HWIO one) or another op class name."""
    model = tractile.load(shared_model("tflite/person_detect.tflite"))
    formats = {"Conv2D": "OHWI", "DepthwiseConv2D": "HWIO"}
    node = [n for n in model.nodes if type(n.op).__name__ == kind or type(n.op).__name__ == "Conv"
            and n.op.kernel_format == formats.get(kind)][index]
    model.outputs = [OutletId(node.id, 0)]
    return model


def test_person_detect_layers_bit_exact_with_overlapping_buffers(compile_cache):
    model = person_detect_until("Conv2D", -1)
    rng = np.random.default_rng(7)
    inputs = [[np.load(shared_model(f"tflite/testdata/{case}.npy")).astype(np.int8).reshape(1, 96, 96, 1)]
              for case in ("person_detect_person", "person_detect_no_person")]
    inputs += [[rng.integers(-128, 128, (1, 96, 96, 1)).astype(np.int8)] for _ in range(20)]
    cm = check_against_interpreter(model, compile_cache, inputs=inputs, name="person_layers")
    report = cm.report
    assert report["arena_bytes"] < min(report["lower_bound_bytes"], 55_296), "outputs overlap their dying inputs"
    in_place = [node for node in report["nodes"] if node.get("in_place")]
    assert len(in_place) >= 10


@pytest.mark.parametrize("dtypes", [("i8", "i8"), ("i8", "i16"), ("u8", "u8")])
@pytest.mark.parametrize("depth", [1, 2, 10, 300])
def test_quantized_softmax_is_bit_exact(dtypes, depth, compile_cache):
    from tractile.ops.nn import Softmax

    source, target = DatumType(dtypes[0]), DatumType(dtypes[1])
    in_q = q(0.11 if depth < 300 else 0.02, -5 if source == DatumType.I8 else 120)
    out_q = q(1 / 256, -128) if target == DatumType.I8 else (q(1 / 65536, -32768) if target == DatumType.I16 else
                                                              q(1 / 256, 0))
    op = Softmax(beta=1.0, to=target, quant=out_q)
    model = single_op_model(op, [TypedFact(source, (3, depth), None, in_q)])
    check_against_interpreter(model, compile_cache, runs=6, name="softmax_q")


@pytest.mark.parametrize("axis,legacy,log", [(-1, False, False), (1, False, False), (1, True, False),
                                             (-1, False, True)])
def test_onnx_softmax(axis, legacy, log, compile_cache):
    from tractile.ops.nn import Softmax

    model = single_op_model(Softmax(axis=axis, legacy=legacy, log=log), [TypedFact(DatumType.F32, (2, 3, 5))])
    check_against_interpreter(model, compile_cache, runs=3, name="softmax_f")


@pytest.mark.parametrize("log", [False, True])
def test_float_softmax_rows(log, compile_cache):
    """Rows longer than the kernel's lanes, with a tail, a -inf score and differences from 0 to
    -600 (exps that underflow): the vectorised exp against the interpreter's."""
    from tractile.ops.nn import Softmax

    model = single_op_model(Softmax(axis=-1, beta=0.7, log=log), [TypedFact(DatumType.F32, (3, 67))])
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 67)) * np.array([[1.0], [30.0], [300.0]])).astype(np.float32)
    x[0, 5] = -np.inf
    check_against_interpreter(model, compile_cache, inputs=[[x]], name="softmax_rows")


@pytest.mark.parametrize("op,attrs,rank", [
    ("MaxPool", {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}, 2),
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "dilations": [1, 2]}, 2),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 2),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1, "ceil_mode": 1,
                     "strides": [2, 2]}, 2),
    ("AveragePool", {"kernel_shape": [4], "strides": [2], "auto_pad": "SAME_UPPER"}, 1),
    ("MaxPool", {"kernel_shape": [2], "strides": [2]}, 1),
    ("GlobalAveragePool", {}, 2), ("GlobalMaxPool", {}, 1)])
def test_onnx_pooling(op, attrs, rank, compile_cache):
    spatial = [9, 8][:rank] if rank == 2 else [11]
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attrs)], "pool",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, *spatial])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = tractile.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    check_against_interpreter(model, compile_cache, runs=3, name="onnx_pool")
