"""A random-weight CNN covering every convolution path, checked against onnxruntime."""
import numpy as np
import pytest

import tractile

from ..conftest import run_onnxruntime
from ..unit.onnx_builder import model, node, value


def cnn():
    rng = np.random.default_rng(3)

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)

    inits = {
        "stem.w": w(16, 3, 7, 7), "stem.b": w(16),
        "bn.s": rng.uniform(0.5, 1.5, 16).astype(np.float32), "bn.b": w(16), "bn.m": w(16),
        "bn.v": rng.uniform(0.5, 1.5, 16).astype(np.float32),
        "dw.w": w(16, 1, 3, 3), "pw.w": w(32, 16, 1, 1), "grp.w": w(32, 8, 3, 3),
        "dil.w": w(32, 32, 3, 3), "skip.w": w(32, 16, 1, 1), "fc.w": w(10, 32), "fc.b": w(10),
    }
    nodes = [
        node("Conv", ["x", "stem.w", "stem.b"], ["stem"], strides=[2, 2], pads=[3, 3, 3, 3]),
        node("BatchNormalization", ["stem", "bn.s", "bn.b", "bn.m", "bn.v"], ["bn"]),
        node("Relu", ["bn"], ["r0"]),
        node("MaxPool", ["r0"], ["p0"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        node("Conv", ["p0", "dw.w"], ["dw"], group=16, pads=[1, 1, 1, 1]),
        node("Clip", ["dw", "lo", "hi"], ["dw6"]),
        node("Conv", ["dw6", "pw.w"], ["pw"]),
        node("Conv", ["pw", "grp.w"], ["grp"], group=4, auto_pad="SAME_UPPER"),
        node("LeakyRelu", ["grp"], ["lr"], alpha=0.1),
        node("Conv", ["lr", "dil.w"], ["dil"], dilations=[2, 2], pads=[2, 2, 2, 2]),
        node("Conv", ["p0", "skip.w"], ["skip"]),
        node("Add", ["dil", "skip"], ["res"]),
        node("Relu", ["res"], ["r1"]),
        node("AveragePool", ["r1"], ["ap"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
             count_include_pad=0),
        node("GlobalAveragePool", ["ap"], ["gap"]),
        node("Flatten", ["gap"], ["flat"]),
        node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], transB=1),
        node("Softmax", ["logits"], ["y"], axis=-1),
    ]
    inits["lo"], inits["hi"] = np.float32(0), np.float32(6)
    return model(nodes, [value("x", "f32", ["N", 3, 64, 64])], [value("y", "f32")], inits, opset=13)


@pytest.mark.parametrize("batch", [1, 3])
def test_generated_cnn_matches_onnxruntime(batch):
    proto = cnn()
    x = np.random.default_rng(batch).standard_normal((batch, 3, 64, 64)).astype(np.float32)
    typed = tractile.load(proto)
    got = typed.run([x])[0]
    np.testing.assert_allclose(got, run_onnxruntime(proto, [x])[0], rtol=1e-4, atol=1e-6)
    ops = [n.op.name for n in typed.nodes]
    assert "BatchNorm" not in ops and "Relu" not in ops[:5]


def test_generated_cnn_intermediate_facts_are_symbolic():
    typed = tractile.load(cnn())
    assert str(typed.output_fact(0)) == "N,10,f32"
    assert str(typed.node_by_name("p0").outputs[0].fact) == "N,16,16,16,f32"
