"""LSTM and GRU gates computed as ``1 / (1 + exp(-x))`` (default activations): saturated gates,
where ``exp`` overflows, give onnxruntime's values, without warnings."""
import warnings

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile


def _model(op: str, hidden: int, inputs: int, directions: int, **attrs):
    rng = np.random.default_rng(7)
    gates = 4 if op == "LSTM" else 3
    weights = {"w": rng.standard_normal((directions, gates * hidden, inputs)),
               "r": rng.standard_normal((directions, gates * hidden, hidden)),
               "b": rng.standard_normal((directions, 2 * gates * hidden))}
    direction = "bidirectional" if directions == 2 else "forward"
    node = helper.make_node(op, ["x", "w", "r", "b"], ["y", "y_h"], hidden_size=hidden, direction=direction, **attrs)
    graph = helper.make_graph(
        [node], "saturation", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, None, inputs])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("y_h", TensorProto.FLOAT, None)],
        [numpy_helper.from_array((v * 4).astype(np.float32), k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("op, attrs", [("LSTM", {}), ("GRU", {}), ("GRU", {"linear_before_reset": 1})])
@pytest.mark.parametrize("directions, batch", [(1, 1), (2, 3)])
def test_saturated_gates_match_onnxruntime(op, attrs, directions, batch):
    proto = _model(op, hidden=8, inputs=5, directions=directions, **attrs)
    x = (np.random.default_rng(1).standard_normal((12, batch, 5)) * 40).astype(np.float32)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    theirs = session.run(None, {"x": x})
    model = tractile.load(proto, inputs=[(x.shape, x.dtype)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow warning would be an error here
        ours = model.state().run([x])
        recurrent = next(node for node in model.nodes if node.op.name == op)
        direct = recurrent.op.eval([x] + [model.nodes[o.node].op.value for o in recurrent.inputs[1:]])
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(direct[0], theirs[0], rtol=1e-5, atol=1e-5)
    assert np.abs(theirs[0]).max() > 0.99  # saturated: some outputs reach +-1
