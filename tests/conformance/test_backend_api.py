"""tractile.backend through onnx's own BackendTest runner, and the Backend API directly."""
from __future__ import annotations

import unittest
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
backend_test = pytest.importorskip("onnx.backend.test")

from onnx import TensorProto, helper  # noqa: E402

import tractile.backend  # noqa: E402
from tractile import UnsupportedOpError  # noqa: E402

#: node tests run by onnx's runner: plain ops, control flow, sequences, optionals, strings
INCLUDED = ["test_relu", "test_add_bcast", "test_if", "test_loop11", "test_scan9_sum", "test_sequence_insert_at_back",
            "test_identity_opt", "test_string_concat_broadcasting", "test_split_to_sequence_1"]


def _node_tests() -> type[unittest.TestCase]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runner = backend_test.BackendTest(tractile.backend, __name__)
    for name in INCLUDED:
        runner.include(f"^{name}_cpu$")
    generated = runner.test_cases["OnnxBackendNodeModelTest"]
    selected = {name: getattr(generated, name) for name in dir(generated)
                if name.startswith("test_") and not getattr(getattr(generated, name), "__unittest_skip__", False)}
    return type("TestOnnxBackendNodes", (unittest.TestCase,), selected)


TestOnnxBackendNodes = _node_tests()


def test_the_runner_selected_every_included_case():
    assert sorted(n for n in dir(TestOnnxBackendNodes) if n.startswith("test_")) == \
        sorted(f"{name}_cpu" for name in INCLUDED)


def test_prepare_then_run_gives_named_outputs():
    graph = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["square"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
                              [helper.make_tensor_value_info("square", TensorProto.FLOAT, ["N"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rep = tractile.backend.prepare(model, "CPU")
    x = np.array([1, -2, 3], np.float32)
    outputs = rep.run([x])
    assert outputs.square.tolist() == [1, 4, 9] and outputs[0].tolist() == [1, 4, 9]
    assert rep.run({"x": x[:2]})[0].tolist() == [1, 4]
    assert tractile.backend.run_model(model, [x])[0].tolist() == [1, 4, 9]


def test_open_inputs_are_typed_from_the_values():
    graph = helper.make_graph([helper.make_node("Neg", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.UNDEFINED, None)],
                              [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rep = tractile.backend.prepare(model)
    assert rep.run([np.ones((2, 2), np.float32)])[0].tolist() == [[-1, -1], [-1, -1]]
    assert rep.run([np.arange(3, dtype=np.int64)])[0].tolist() == [0, -1, -2]


def test_run_node_and_devices():
    node = helper.make_node("Sub", ["a", "b"], ["c"])
    (c,) = tractile.backend.run_node(node, [np.array([5, 6], np.int32), np.array([1, 1], np.int32)])
    assert c.dtype == np.int32 and c.tolist() == [4, 5]
    assert tractile.backend.supports_device("CPU") and not tractile.backend.supports_device("CUDA")


def test_prepare_reports_unsupported_ops():
    graph = helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedOpError, match="NoSuchOp"):
        tractile.backend.prepare(model)
