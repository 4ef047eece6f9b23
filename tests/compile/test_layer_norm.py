"""ONNX LayerNormalization compiled (float32), against the interpreter and onnxruntime."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.errors import UnsupportedOpError

from .harness import assert_builds_without_warnings, check_against_interpreter, compiled


def layer_norm_proto(shape, axis: int, bias: bool = True, outputs: int = 1, epsilon: float = 1e-5):
    rng = np.random.default_rng(len(shape) + axis)
    inner = shape[axis:]
    inits = [numpy_helper.from_array(rng.standard_normal(inner).astype(np.float32), "scale")]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(inner).astype(np.float32), "bias"))
    names = ["y", "mean", "inv_std"][:outputs]
    node = helper.make_node("LayerNormalization", ["x", "scale"] + (["bias"] if bias else []), names, axis=axis,
                            epsilon=epsilon, name="norm")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("shape, axis, bias", [((2, 5, 37), -1, True), ((3, 4, 6), 1, False), ((1, 64, 128), 2, True)])
def test_layer_norm(shape, axis, bias, compile_cache, tmp_path):
    proto = layer_norm_proto(shape, axis, bias)
    model = tractile.load(proto)
    cm = check_against_interpreter(model, compile_cache, runs=3, name="layer_norm")
    assert "tl_layer_norm_f32" in cm.source.files["layer_norm.c"]
    assert_builds_without_warnings(cm.source, tmp_path)
    x = (np.random.default_rng(7).standard_normal(shape) * 3 + 1).astype(np.float32)
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(cm.run([x])[0], session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)


def test_the_statistics_outputs_stay_interpreted(compile_cache):
    model = tractile.load(layer_norm_proto((2, 8), -1, outputs=3))
    with pytest.raises(UnsupportedOpError, match="InvStdDev"):
        compiled(model, compile_cache, name="stats")
