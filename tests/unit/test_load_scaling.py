"""Loading scales with the graph: a long chain of Mul/Add by constants folds in one rewrite
(not one round of passes per link), the pass driver checks only what a rewrite touched, and
analysis infers each node of a chain once (same-shape and broadcast constants alike)."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import tractile
from tractile.passes import DECLUTTER_PASSES, run_passes


def add_mul_chain(length: int, factor: float = 1.01, input_shape=("N", 4), constant_shape=(1,)):
    nodes, inits, prev = [], [], "x"
    for i in range(length):
        inits.append(numpy_helper.from_array(np.full(constant_shape, factor if i % 2 == 0 else 0.5, np.float32),
                                             f"c{i}"))
        nodes.append(helper.make_node("Mul" if i % 2 == 0 else "Add", [prev, f"c{i}"], [f"t{i}"]))
        prev = f"t{i}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                             list(input_shape))],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def broadcast_chain(length: int):
    """The chain on a [2,4] input by [4] constants, varied per link (broadcast along axis 0)."""
    model = add_mul_chain(length, input_shape=(2, 4), constant_shape=(4,))
    for i, tensor in enumerate(model.graph.initializer):
        value = np.full(4, 1.01, np.float32) if i % 2 == 0 else np.linspace(0.1, 0.4, 4, dtype=np.float32)
        tensor.CopyFrom(numpy_helper.from_array(value * (1 + (i % 3) / 100), tensor.name))
    return model


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


def test_a_chain_by_broadcast_constants_folds_into_one_mul_and_one_add():
    proto = broadcast_chain(300)
    model = tractile.load(proto)
    assert [n.op.name for n in model.nodes if n.op.name != "Const"] == ["Source", "Mul", "Add"]
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    expected = x.astype(np.float64)
    for i, tensor in enumerate(proto.graph.initializer):
        constant = numpy_helper.to_array(tensor).astype(np.float64)
        expected = expected * constant if i % 2 == 0 else expected + constant
    np.testing.assert_allclose(model.run([x])[0], expected, rtol=1e-4)


def count_calls(monkeypatch, owner, name: str) -> list:
    calls: list = []
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_analysis_infers_each_node_of_a_chain_once(monkeypatch):
    """Facts settle in one forward sweep: a later sweep only revisits nodes next to a changed
    fact, and constants take their value's fact without the rules solver."""
    from tractile.infer import analyse
    from tractile.infer.rules import Solver

    for make in (add_mul_chain, broadcast_chain):
        model = tractile.load(make(1000), optimize=False)
        inferred = count_calls(monkeypatch, analyse, "infer_node")
        solved = count_calls(monkeypatch, Solver, "solve")
        model.analyse()
        assert len(inferred) == 1000, make.__name__
        if make is broadcast_chain:  # complete input facts: element-wise ops need no solver
            assert not solved
        monkeypatch.undo()


def test_passes_order_the_graph_a_fixed_number_of_times(monkeypatch):
    """The pass driver orders the graph again only after a patch applied, so a long chain costs
    no more orderings than a short one."""
    from tractile.graph import Graph

    counts = []
    for length in (200, 2000):
        typed = tractile.load(broadcast_chain(length), optimize=False).into_typed()
        orderings = count_calls(monkeypatch, Graph, "eval_order")
        run_passes(typed, DECLUTTER_PASSES)
        counts.append(len(orderings))
        monkeypatch.undo()
    assert counts[1] <= counts[0] + 2 and counts[1] <= 16, counts
