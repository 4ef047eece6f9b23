"""A small float CNN and its versions quantized by onnxruntime's quantizer (QDQ and QOperator),
for the tests of ONNX quantized models (interpreted, compiled)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

INPUT_SHAPE = (1, 3, 10, 10)


def float_cnn():
    """conv-relu-maxpool, conv + skip add, leaky relu, depthwise conv, mul, average pool, global
    average pools, concat, flatten, gemm, sigmoid: every op onnxruntime's quantizer turns into
    a quantized one."""
    rng = np.random.default_rng(7)

    def init(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [init("w1", (8, 3, 3, 3), 0.3), init("b1", (8,), 0.1), init("w2", (8, 8, 3, 3), 0.15),
             init("b2", (8,), 0.1), init("w3", (8, 1, 3, 3), 0.3), init("b3", (8,), 0.1),
             init("wg", (10, 16), 0.3), init("bg", (10,), 0.1)]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "p1"], ["a1"]),
        helper.make_node("LeakyRelu", ["a1"], ["l1"], alpha=0.1),
        helper.make_node("Conv", ["l1", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1], group=8),
        helper.make_node("Mul", ["c3", "l1"], ["m1"]),
        helper.make_node("AveragePool", ["m1"], ["ap"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["ap"], ["g1"]),
        helper.make_node("GlobalAveragePool", ["a1"], ["g2"]),
        helper.make_node("Concat", ["g1", "g2"], ["cc"], axis=1),
        helper.make_node("Flatten", ["cc"], ["f"]),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["y0"], transB=1),
        helper.make_node("Sigmoid", ["y0"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, INPUT_SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def inputs(count: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(INPUT_SHAPE).astype(np.float32) for _ in range(count)]


def quantize(folder: Path, name: str, quant_format: str = "QDQ", activations: str = "QUInt8",
             weights: str = "QInt8", per_channel: bool = False) -> Path:
    """``float_cnn`` quantized by ``quantize_static`` (three calibration inputs; weights in 7 bits,
    ``reduce_range``, which keeps onnxruntime's x86 u8 x s8 kernels from saturating)."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    source, target = folder / "cnn.onnx", folder / f"{name}.onnx"
    if not source.exists():
        source.write_bytes(float_cnn().SerializeToString())

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter({"x": x} for x in inputs(3, seed=1))

        def get_next(self):
            return next(self.feeds, None)

    quantization.quantize_static(
        str(source), str(target), Reader(), quant_format=getattr(quantization.QuantFormat, quant_format),
        activation_type=getattr(quantization.QuantType, activations),
        weight_type=getattr(quantization.QuantType, weights), per_channel=per_channel, reduce_range=True)
    return target
