"""Runs of element-wise steps executed as one program entry (runtime/fused.py), against onnxruntime."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import tractile
from tractile import RunError
from tractile.runtime.fused import fused_runs, slot_dtypes

from .onnx_builder import model, node, value


def _onnxruntime(proto, feeds):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _groups(typed):
    plan = typed.plan()
    return [[plan.steps[i].node.name for i in group] for group in fused_runs(plan, slot_dtypes(plan))]


@pytest.mark.parametrize("dtype, onnx_type", [(np.float32, "f32"), (np.float64, "f64")])
def test_a_run_of_unary_ops_is_one_entry_with_the_same_values(dtype, onnx_type):
    ops = ["Abs", "Neg", "Tanh", "Exp", "Relu", "Sigmoid", "Sqrt", "Neg", "LeakyRelu", "Sin", "Clip"]
    nodes = [node(op, [f"t{i}"] + (["low", "high"] if op == "Clip" else []), [f"t{i + 1}"],
                  **({"alpha": 0.1} if op == "LeakyRelu" else {}))
             for i, op in enumerate(ops)]
    elem = TensorProto.FLOAT if onnx_type == "f32" else TensorProto.DOUBLE
    inputs = [helper.make_tensor_value_info("t0", elem, [3, 5])]
    bounds = {"low": np.array(-0.5, dtype), "high": np.array(0.75, dtype)}
    proto = model(nodes, inputs, [helper.make_tensor_value_info(f"t{len(ops)}", elem, None)], bounds)
    typed = tractile.load(proto)
    assert _groups(typed) == [[f"t{i + 1}" for i in range(len(ops))]]
    x = np.random.default_rng(0).standard_normal((3, 5)).astype(dtype)
    x[0, 0] = np.nan
    kept = x.copy()
    ours = typed.state().run([x])[0]
    np.testing.assert_array_equal(x, kept)  # the input is never written
    # step by step through the unfused program gives the same bits
    state = typed.state()
    value_ = x
    for evaluate, *_ in state._program:
        value_ = evaluate([value_])[0]
    np.testing.assert_array_equal(ours, value_)
    theirs = _onnxruntime(proto, {"t0": x})[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_a_value_read_twice_or_an_output_ends_a_run():
    proto = model([node("Relu", ["x"], ["a"]), node("Neg", ["a"], ["b"]), node("Tanh", ["b"], ["c"]),
                   node("Add", ["a", "c"], ["d"]), node("Exp", ["d"], ["e"]), node("Abs", ["e"], ["y"])],
                  [value("x", "f32", [4])], [value("y"), value("e")])
    typed = tractile.load(proto)
    groups = _groups(typed)
    assert ["b", "c"] in groups  # a is read by b and d: not fused into; e is an output: y apart
    assert ["a"] in groups and ["e"] in groups and ["y"] in groups
    x = np.linspace(-2, 2, 4).astype(np.float32)
    for ours, theirs in zip(typed.state().run([x]), _onnxruntime(proto, {"x": x})):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_other_types_and_non_elementwise_heads_are_not_fused():
    proto = model([node("Abs", ["x"], ["a"]), node("Neg", ["a"], ["y"])], [value("x", "i32", [3])],
                  [value("y", None)])
    assert _groups(tractile.load(proto)) == [["a"], ["y"]]
    proto = model([node("Reshape", ["x", "shape"], ["a"]), node("Neg", ["a"], ["y"])], [value("x", "f32", [2, 3])],
                  [value("y", None)], {"shape": np.array([6], np.int64)})
    typed = tractile.load(proto)
    assert all(len(group) == 1 for group in _groups(typed))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(typed.state().run([x])[0], -x.reshape(6))


def test_an_error_inside_a_run_names_the_failing_node(monkeypatch):
    proto = model([node("Abs", ["x"], ["a"]), node("Neg", ["a"], ["b"]), node("Exp", ["b"], ["y"])],
                  [value("x", "f32", [3])], [value("y", None)])
    typed = tractile.load(proto)
    assert _groups(typed) == [["a", "b", "y"]]
    failing = typed.plan().steps[1].op  # patched before the first state: kernels are chosen once per plan

    def broken(y, out):
        raise ValueError("boom")

    monkeypatch.setattr(type(failing), "ufunc", broken)
    monkeypatch.setattr(type(failing), "compute", lambda self, x: broken(x, x))
    state = typed.state()
    with pytest.raises(RunError, match='"b"'):
        state.run([np.ones(3, np.float32)])
