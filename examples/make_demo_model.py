"""Build tractile's bundled demo model: a small image classifier, written with onnx.helper.

    python examples/make_demo_model.py build/demo.onnx

Input ``image`` is N,1,28,28 f32 (N symbolic); output ``probs`` is N,10. The weights
are random but fixed (seed 0), with a BatchNormalization and a Dropout that
tractile's declutter pass folds away, and a Shape->Gather->Concat->Reshape chain
that the analyser resolves symbolically, as exported PyTorch models have.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def weight(name, *shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    initializers = [
        weight("conv1.w", 8, 1, 3, 3), weight("conv1.b", 8),
        weight("bn.scale", 8, scale=0.1), weight("bn.bias", 8), weight("bn.mean", 8),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "bn.var"),
        weight("conv2.w", 16, 8, 3, 3, scale=0.1),
        weight("fc.w", 10, 16 * 7 * 7, scale=0.05), weight("fc.b", 10),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "zero"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "minus_one"),
    ]
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w", "conv1.b"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c1", "bn.scale", "bn.bias", "bn.mean", "bn.var"], ["b1"],
                         name="bn1"),
        helper.make_node("Relu", ["b1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        helper.make_node("Conv", ["p1", "conv2.w"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2], name="pool2"),
        helper.make_node("Shape", ["p2"], ["p2_shape"], name="shape"),
        helper.make_node("Gather", ["p2_shape", "zero"], ["batch"], axis=0, name="batch"),
        helper.make_node("Concat", ["batch", "minus_one"], ["flat_shape"], axis=0, name="flat_shape"),
        helper.make_node("Reshape", ["p2", "flat_shape"], ["flat"], name="flatten"),
        helper.make_node("Dropout", ["flat"], ["dropped"], name="dropout"),
        helper.make_node("Gemm", ["dropped", "fc.w", "fc.b"], ["logits"], transB=1, name="fc"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1, name="softmax"),
    ]
    graph = helper.make_graph(
        nodes, "tractile-demo",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 1, 28, 28])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tractile-demo",
                              ir_version=8)
    onnx.checker.check_model(model)
    return model


def main() -> int:
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "build/demo.onnx")
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(build(), target)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
