"""Compiled segments inside the interpreter (tractile.load(..., compile="auto"))."""
from __future__ import annotations

import threading

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.compile.segments import CompiledSegment, compile_segments

from ..conftest import shared_model
from .harness import assert_same_outputs, needs_cc
from .test_framework import mlp_proto


def mixed_proto():
    """MatMul -> Asinh (not compiled) -> MatMul, and a Concat reading both sides of the Asinh."""
    weights = numpy_helper.from_array(np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["a"], name="first"),
             helper.make_node("Asinh", ["a"], ["b"], name="arc"),
             helper.make_node("MatMul", ["b", "w"], ["c"], name="second"),
             helper.make_node("Concat", ["c", "a"], ["y"], axis=1, name="joined")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [weights])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def segments_of(model):
    return [n for n in model.nodes if isinstance(n.op, CompiledSegment)]


def test_a_fully_supported_model_becomes_one_segment():
    needs_cc()
    reference = tractile.load(mlp_proto(1))
    auto = tractile.load(mlp_proto(1), compile="all")
    assert len(segments_of(auto)) == 1 and len([n for n in auto.nodes if n.inputs]) == 1
    x = np.random.default_rng(1).standard_normal((1, 1)).astype(np.float32)
    assert_same_outputs(reference.run([x]), auto.run([x]))


def test_unsupported_nodes_split_the_model_into_segments(compile_cache):
    needs_cc()
    reference = tractile.load(mixed_proto())
    auto = compile_segments(reference, cache_dir=compile_cache)
    segments = segments_of(auto)
    assert len(segments) == 2 and any(n.op.name == "Asinh" for n in auto.nodes)
    assert sorted(s.op.ops for s in segments) == [("MatMul",), ("MatMul", "Concat")]
    rng = np.random.default_rng(2)
    for _ in range(5):
        x = rng.standard_normal((2, 3)).astype(np.float32)
        assert_same_outputs(reference.run([x]), auto.run([x]))


def test_integer_models_stay_bit_exact(compile_cache):
    needs_cc()
    reference = tractile.load(shared_model("tflite/hello_world_int8.tflite"))
    auto = compile_segments(reference, cache_dir=compile_cache)
    assert len(segments_of(auto)) == 1
    for value in range(-128, 128, 5):
        x = np.array([[value]], np.int8)
        np.testing.assert_array_equal(reference.run([x])[0], auto.run([x])[0])


def test_each_state_has_its_own_compiled_context(compile_cache):
    needs_cc()
    auto = compile_segments(tractile.load(mixed_proto()), cache_dir=compile_cache)
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]
    expected = [auto.run([x])[0] for x in xs]
    failures = []

    def work(index: int) -> None:
        state = auto.state()
        for _ in range(300):
            if not np.array_equal(state.run([xs[index]])[0], expected[index]):
                failures.append(index)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


def conv1d_proto():
    """A dilated NCW Conv (as a TCN has) and a residual Add."""
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 4, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], dilations=[2], pads=[4, 0], name="causal"),
             helper.make_node("Add", ["c", "x"], ["y"], name="residual")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_onnx_channels_first_convolutions_join_segments(compile_cache):
    needs_cc()
    reference = tractile.load(conv1d_proto())
    auto = compile_segments(reference, cache_dir=compile_cache)
    assert [n.op.name for n in auto.nodes if n.op.name not in ("Source", "Const")] == ["Compiled"]
    x = np.random.default_rng(6).standard_normal((1, 4, 16)).astype(np.float32)
    np.testing.assert_allclose(auto.run([x])[0], reference.run([x])[0], rtol=1e-5, atol=1e-5)
