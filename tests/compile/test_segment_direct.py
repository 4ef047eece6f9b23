"""A model that is one compiled segment runs it straight from ``run``, without the plan's machinery."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.compile.host import CompiledState
from tractile.compile.segments import compile_segments
from tractile.errors import RunError
from tractile.runtime.state import SimpleState

from .harness import compiled, needs_cc
from .test_array import onnx_model, vi
from .test_framework import mlp_proto


def two_output_proto(repeat: bool = False, passthrough: bool = False):
    """MatMul then Relu, both outputs of the model (``repeat``: the Relu twice; ``passthrough``:
    the input as an output too)."""
    weights = numpy_helper.from_array(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["a"], name="dense"),
             helper.make_node("Relu", ["a"], ["b"], name="relu")]
    outputs = ["b", "a"] + (["b"] if repeat else []) + (["x"] if passthrough else [])
    if repeat:
        nodes.append(helper.make_node("Identity", ["b"], ["b2"], name="again"))
        outputs[2] = "b2"
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in outputs],
                              [weights])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def whole(proto, compile_cache):
    reference = tractile.load(proto)
    return reference, compile_segments(reference, cache_dir=compile_cache)


@pytest.fixture
def plan_runs(monkeypatch) -> list:
    """Counts the runs that went through the plan's machinery."""
    runs: list = []
    execute = SimpleState._execute

    def counted(self, ordered):
        runs.append(self)
        return execute(self, ordered)

    monkeypatch.setattr(SimpleState, "_execute", counted)
    return runs


def test_a_whole_model_segment_skips_the_plan(compile_cache, monkeypatch):
    needs_cc()
    reference, auto = whole(mlp_proto(1), compile_cache)
    state = auto.state()
    x = np.random.default_rng(1).standard_normal((1, 1)).astype(np.float32)
    expected = reference.run([x])[0]

    def no_plan(*args, **kwargs):
        raise AssertionError("the plan ran")

    monkeypatch.setattr(SimpleState, "_execute", no_plan)
    np.testing.assert_allclose(state.run([x])[0], expected, rtol=1e-6, atol=1e-6)
    by_name = state.run({"x": x})
    assert list(by_name) == ["y"]
    np.testing.assert_allclose(by_name["y"], expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(state.run(None, {"x": x})[0], expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(AssertionError, match="the plan ran"):  # checking facts takes the plan
        auto.plan().state(check_facts=True).run([x])


def test_outputs_are_the_callers_and_inputs_untouched(compile_cache, plan_runs):
    needs_cc()
    reference, auto = whole(two_output_proto(), compile_cache)
    state = auto.state()
    rng = np.random.default_rng(2)
    x1, x2 = (rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2))
    kept = x1.copy()
    first = state.run([x1])
    snapshot = [o.copy() for o in first]
    second = state.run([x2])
    np.testing.assert_array_equal(x1, kept)
    for got, want in zip(first, snapshot):
        np.testing.assert_array_equal(got, want)
        assert got.flags.writeable
    assert all(a is not b for a in first for b in second)
    assert not plan_runs
    for got, want in zip(second, reference.run([x2])):  # the outputs in the model's order
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_strided_and_converted_inputs(compile_cache):
    needs_cc()
    reference, auto = whole(two_output_proto(), compile_cache)
    wide = np.random.default_rng(3).standard_normal((2, 6)).astype(np.float32)
    strided = wide[:, ::2]
    for got, want in zip(auto.run([strided]), reference.run([strided.copy()])):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    listed = strided.tolist()
    for got, want in zip(auto.run([listed]), reference.run([strided.copy()])):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("bad, message", [(np.zeros((2, 3), np.float64), "datum type float64"),
                                          (np.zeros((3, 3), np.float32), "axis 0 should be 2"),
                                          (None, "is None")])
def test_bad_inputs_are_named(compile_cache, bad, message):
    needs_cc()
    _, auto = whole(two_output_proto(), compile_cache)
    with pytest.raises(RunError, match=message):
        auto.run([bad])


@pytest.mark.parametrize("repeat, passthrough", [(True, False), (False, True)])
def test_plans_that_are_not_the_segment_alone_still_run(compile_cache, plan_runs, repeat, passthrough):
    needs_cc()
    reference, auto = whole(two_output_proto(repeat, passthrough), compile_cache)
    x = np.random.default_rng(4).standard_normal((2, 3)).astype(np.float32)
    got = auto.run([x])
    assert len(plan_runs) == 1
    want = reference.run([x])
    assert len(got) == len(want) == 2 + repeat + passthrough
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    if passthrough:
        assert got[-1] is not x


def test_exact_inputs_take_the_quick_call(compile_cache, monkeypatch):
    """Arrays of the inputs' datum types and shapes go straight to the library (``fast_run``), in
    a whole-model segment and in ``compile_model``'s model alike; other inputs take the general
    checks (``call_checked``); every call gives a new array."""
    needs_cc()
    reference, auto = whole(mlp_proto(1), compile_cache)
    checked: list = []
    general = CompiledState.call_checked
    monkeypatch.setattr(CompiledState, "call_checked",
                        lambda self, arrays: checked.append(self) or general(self, arrays))
    x = np.random.default_rng(5).standard_normal((1, 1)).astype(np.float32)
    expected = reference.run([x])[0]
    for runner in (auto.state(), compiled(reference, compile_cache, name="quick_mlp")):
        first = runner.run([x])[0]
        first += 100
        second = runner.run([x])[0]
        assert not checked
        np.testing.assert_allclose(second, expected, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(runner.run([x.tolist()])[0], expected, rtol=1e-6, atol=1e-6)
        assert len(checked) == 1
        checked.clear()


def test_a_failing_call_names_the_node(compile_cache):
    needs_cc()
    proto = onnx_model([helper.make_node("Gather", ["x", "i"], ["y"], axis=1, name="lookup")],
                       [vi("x", TensorProto.FLOAT, [2, 6, 3]), vi("i", TensorProto.INT64, [4])],
                       [vi("y", TensorProto.FLOAT, None)])
    _, auto = whole(proto, compile_cache)
    x = np.zeros((2, 6, 3), np.float32)
    assert auto.run([x, np.array([0, 5, 1, 2])])[0].shape == (2, 4, 3)
    with pytest.raises(RunError, match=r'"lookup" \(Gather\): an index is out of range'):
        auto.run([x, np.array([0, 6, 0, 0])])
