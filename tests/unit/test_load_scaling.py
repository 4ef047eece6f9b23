"""Loading scales with the graph: a long chain of Mul/Add by constants folds in one rewrite
(not one round of passes per link), and the pass driver checks only what a rewrite touched."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.passes import DECLUTTER_PASSES, run_passes


def add_mul_chain(length: int, factor: float = 1.01):
    nodes, inits, prev = [], [], "x"
    for i in range(length):
        inits.append(numpy_helper.from_array(np.array([factor if i % 2 == 0 else 0.5], np.float32), f"c{i}"))
        nodes.append(helper.make_node("Mul" if i % 2 == 0 else "Add", [prev, f"c{i}"], [f"t{i}"]))
        prev = f"t{i}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def rewrites_to_declutter(length: int) -> int:
    trace: list = []
    typed = tractile.load(add_mul_chain(length), optimize=False).into_typed()
    run_passes(typed, DECLUTTER_PASSES, trace=trace)
    return len(trace)


def test_a_chain_of_affine_ops_folds_into_one_mul_and_one_add():
    model = tractile.load(add_mul_chain(200))
    assert [n.op.name for n in model.nodes if n.op.name != "Const"] == ["Source", "Mul", "Add"]
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    expected = x.astype(np.float64)
    for i in range(200):
        expected = expected * 1.01 if i % 2 == 0 else expected + 0.5
    np.testing.assert_allclose(model.run([x])[0], expected, rtol=1e-4)


def test_the_number_of_rewrites_grows_far_slower_than_the_chain():
    """One rewrite per 64 links at most (the chain folds in stretches), where a rewrite per
    link per round of passes made loading quadratic."""
    short, long = rewrites_to_declutter(200), rewrites_to_declutter(2000)
    assert short <= 8 and long <= 2000 // 32


def test_a_chain_that_overflows_is_left_alone():
    model = tractile.load(add_mul_chain(600, factor=10.0))
    y = model.run([np.zeros((1, 4), np.float32)])[0]
    assert not np.isnan(y).any(), "0 * inf must not appear where the chain had finite steps"
