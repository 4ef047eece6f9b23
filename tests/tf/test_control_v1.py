"""v1 control flow raised to While/If: TensorFlow runs the raised GraphDef and must give what it gives
on the original graph (control flow v1: Enter/Exit/Merge/Switch/NextIteration/LoopCond, TensorArrays)."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np
import pytest

from tractile.errors import UnsupportedOpError
from tractile.formats.tf.control_v1 import V1_OPS, raise_control_flow_v1
from tractile.formats.tf.control_v1_opdefs import OUTPUT_ARGS

tf = pytest.importorskip("tensorflow")
RNG = np.random.default_rng(14)


@dataclass
class Case:
    """A frozen TF1 graph, the inputs to feed (name -> random input maker), the outputs to fetch and
    the v1 control ops the graph must contain for the test to mean anything."""

    graph_def: object
    inputs: dict[str, object]
    outputs: list[str]
    expects: set[str] = field(default_factory=lambda: {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond"})


@contextlib.contextmanager
def control_flow_v1():
    from tensorflow.python.ops import control_flow_util

    was = control_flow_util.ENABLE_CONTROL_FLOW_V2
    control_flow_util.ENABLE_CONTROL_FLOW_V2 = False
    try:
        yield
    finally:
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = was


def floats(*shape):
    return lambda: RNG.standard_normal(shape).astype(np.float32)


def build(body, inputs: dict[str, object], outputs: list[str], freeze=False, **kwargs) -> Case:
    """Run ``body()`` in a fresh TF1 graph with control flow v1; freeze its variables if asked."""
    with control_flow_v1(), tf.Graph().as_default() as graph:
        body()
        graph_def = graph.as_graph_def()
        if freeze:
            with tf.compat.v1.Session(graph=graph) as session:
                session.run(tf.compat.v1.global_variables_initializer())
                graph_def = tf.compat.v1.graph_util.convert_variables_to_constants(
                    session, graph_def, [o.split(":")[0] for o in outputs])
    return Case(graph_def, inputs, outputs, **kwargs)


def counter():
    n = tf.compat.v1.placeholder(tf.int32, [], name="n")
    x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
    _, y = tf.compat.v1.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 1.5 + 1.0), [tf.constant(0), x])
    tf.identity(y, name="y")


def several_vars():
    x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
    w = tf.constant(RNG.standard_normal((3, 3)).astype(np.float32))

    def body(i, a, b, s):
        a2 = tf.tanh(tf.matmul(a, w) + b)
        return i + 1, a2, b * 0.5, s + tf.reduce_sum(a2)
    out = tf.compat.v1.while_loop(lambda i, a, b, s: i < 4, body, [tf.constant(0), x, x * 2.0, tf.constant(0.0)])
    tf.identity(out[1], name="a")
    tf.identity(out[3], name="s")
    tf.identity(out[0], name="i")


def invariants():
    x = tf.compat.v1.placeholder(tf.float32, [4], name="x")
    w = tf.compat.v1.placeholder(tf.float32, [4], name="w")
    scale = tf.reduce_max(tf.abs(w)) + 1.0

    def body(i, a):
        return i + 1, a * w / scale + tf.cast(i, tf.float32)
    tf.identity(tf.compat.v1.while_loop(lambda i, a: i < 5, body, [tf.constant(0), x])[1], name="y")


def nested():
    x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
    k = tf.compat.v1.placeholder(tf.float32, [3], name="k")

    def outer(i, a):
        def inner(j, b):
            return j + 1, b * 0.9 + k * tf.cast(i, tf.float32)
        _, b = tf.compat.v1.while_loop(lambda j, b: j < i + 1, inner, [tf.constant(0), a], name="inner")
        return i + 1, b + 1.0
    tf.identity(tf.compat.v1.while_loop(lambda i, a: i < 3, outer, [tf.constant(0), x], name="outer")[1], name="y")


def while_in_cond():
    x = tf.compat.v1.placeholder(tf.float32, [3], name="x")

    def looped():
        return tf.compat.v1.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2.0 - 1.0), [tf.constant(0), x])[1]
    tf.identity(tf.compat.v1.cond(tf.reduce_sum(x) > 0.0, looped, lambda: x * -3.0), name="y")


def cond_in_while():
    x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
    w = tf.constant([1.0, -2.0, 0.5])

    def body(i, a):
        return i + 1, tf.compat.v1.cond(tf.reduce_sum(a) > 0.5, lambda: a * w - 0.25, lambda: a + 1.0)
    tf.identity(tf.compat.v1.while_loop(lambda i, a: i < 6, body, [tf.constant(0), x])[1], name="y")


def conds():
    x = tf.compat.v1.placeholder(tf.float32, [2, 2], name="x")
    p = tf.compat.v1.placeholder(tf.bool, [], name="p")
    total = tf.reduce_sum(x)
    inner = lambda: tf.compat.v1.cond(p, lambda: x * 2.0, lambda: tf.constant([[1.0, 2.0], [3.0, 4.0]]))  # noqa: E731
    a = tf.compat.v1.cond(total > 0.0, inner, lambda: tf.exp(x))
    b, c = tf.compat.v1.cond(p, lambda: (tf.constant(1.0), x - 1.0), lambda: (total, x + 1.0))
    tf.identity(a, name="a")
    tf.identity(b * c, name="bc")


def tensor_array():
    x = tf.compat.v1.placeholder(tf.float32, [5, 2], name="x")
    source = tf.TensorArray(tf.float32, size=5).unstack(x)
    squares = tf.TensorArray(tf.float32, size=5)

    def body(i, out):
        v = source.read(i)
        return i + 1, out.write(i, v * v + tf.cast(i, tf.float32))
    _, out = tf.compat.v1.while_loop(lambda i, out: i < 5, body, [tf.constant(0), squares])
    tf.identity(out.stack(), name="y")
    tf.identity(out.size(), name="size")


def rnn(cell_kind: str, with_lengths: bool):
    def body():
        from tensorflow.python.ops import rnn_cell_impl

        x = tf.compat.v1.placeholder(tf.float32, [2, 6, 3], name="x")
        cell = rnn_cell_impl.LSTMCell(5) if cell_kind == "lstm" else rnn_cell_impl.GRUCell(5)
        lengths = tf.compat.v1.placeholder(tf.int32, [2], name="lengths") if with_lengths else None
        outputs, state = tf.compat.v1.nn.dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float32)
        tf.identity(outputs, name="y")
        tf.identity(state.h if cell_kind == "lstm" else state, name="h")
    return body


CASES = {
    "counter": lambda: build(counter, {"n": lambda: np.int32(RNG.integers(0, 6)), "x": floats(3)}, ["y"]),
    "several_vars": lambda: build(several_vars, {"x": floats(2, 3)}, ["a", "s", "i"]),
    "invariants": lambda: build(invariants, {"x": floats(4), "w": floats(4)}, ["y"]),
    "nested": lambda: build(nested, {"x": floats(3), "k": floats(3)}, ["y"]),
    "while_in_cond": lambda: build(while_in_cond, {"x": floats(3)}, ["y"]),
    "cond_in_while": lambda: build(cond_in_while, {"x": floats(3)}, ["y"]),
    "conds": lambda: build(conds, {"x": floats(2, 2), "p": lambda: np.bool_(RNG.integers(0, 2))}, ["a", "bc"],
                           expects={"Switch", "Merge"}),
    "tensor_array": lambda: build(tensor_array, {"x": floats(5, 2)}, ["y", "size"],
                                  expects={"Enter", "Merge", "TensorArrayV3", "TensorArrayWriteV3"}),
    "lstm": lambda: build(rnn("lstm", False), {"x": floats(2, 6, 3)}, ["y", "h"], freeze=True),
    "gru": lambda: build(rnn("gru", True), {"x": floats(2, 6, 3), "lengths": lambda: np.array([6, 3], np.int32)},
                         ["y", "h"], freeze=True),
}


@pytest.fixture(scope="module")
def cases() -> dict[str, Case]:
    """Every case built once per module, raised once."""
    return {name: make() for name, make in CASES.items()}


def run_graph(graph_def, feeds: dict[str, np.ndarray], outputs: list[str]) -> list[np.ndarray]:
    with tf.Graph().as_default() as graph:
        tf.compat.v1.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=graph) as session:
            return session.run([f"{o}:0" for o in outputs], {f"{k}:0": v for k, v in feeds.items()})


def all_ops(graph_def) -> set[str]:
    ops = {n.op for n in graph_def.node}
    for function in graph_def.library.function:
        ops |= {n.op for n in function.node_def}
    return ops


@pytest.mark.parametrize("name", list(CASES))
def test_raised_graph_runs_as_the_original(cases, name):
    case = cases[name]
    before = all_ops(case.graph_def)
    assert case.expects <= before, f"TensorFlow did not build v1 control flow: {sorted(case.expects - before)} missing"
    raised = raise_control_flow_v1(case.graph_def)
    after = all_ops(raised)
    assert not after & V1_OPS, sorted(after & V1_OPS)
    assert not {op for op in after if op.startswith("TensorArray")}
    assert ("While" in after) == ("LoopCond" in before)
    assert ("If" in after) == _has_cond(case.graph_def)
    for _ in range(3):
        feeds = {k: make() for k, make in case.inputs.items()}
        expected = run_graph(case.graph_def, feeds, case.outputs)
        got = run_graph(raised, feeds, case.outputs)
        for out, e, g in zip(case.outputs, expected, got):
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6, err_msg=f"{name}: output {out}")


def _has_cond(graph_def) -> bool:
    loop_conds = {n.name for n in graph_def.node if n.op == "LoopCond"}
    return any(n.op == "Switch" and n.input[1].split(":")[0] not in loop_conds for n in graph_def.node)


def test_dynamic_rnn_becomes_tensor_lists_in_one_while(cases):
    raised = raise_control_flow_v1(cases["lstm"].graph_def)
    ops = [n.op for n in raised.node]
    assert ops.count("While") == 1
    assert {"TensorListFromTensor", "TensorListStack"} <= set(ops)
    (body,) = [f for f in raised.library.function if f.signature.name.endswith("_body")]
    body_ops = {n.op for n in body.node_def}
    assert {"TensorListGetItem", "TensorListSetItem"} <= body_ops
    variant = 21
    assert variant in [a.type for a in body.signature.input_arg]


def test_nested_frames_become_a_while_inside_the_body(cases):
    raised = raise_control_flow_v1(cases["nested"].graph_def)
    assert [n.op for n in raised.node].count("While") == 1
    bodies = {f.signature.name: f for f in raised.library.function}
    assert "outer_inner_body" in bodies
    outer = bodies["outer_body"]
    assert "While" in {n.op for n in outer.node_def}


def test_graph_without_control_flow_comes_back_unchanged():
    with tf.Graph().as_default() as graph:
        x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
        tf.identity(x * 2.0, name="y")
    graph_def = graph.as_graph_def()
    assert raise_control_flow_v1(graph_def) == graph_def


def test_the_input_graph_is_not_modified(cases):
    graph_def = cases["cond_in_while"].graph_def
    copy = type(graph_def)()
    copy.CopyFrom(graph_def)
    raise_control_flow_v1(graph_def)
    assert graph_def == copy


def test_frame_without_loop_cond_is_named_in_the_error(cases):
    graph_def = type(cases["counter"].graph_def)()
    graph_def.CopyFrom(cases["counter"].graph_def)
    (loop_cond,) = [n for n in graph_def.node if n.op == "LoopCond"]
    loop_cond.op = "Identity"
    with pytest.raises(UnsupportedOpError, match=r"while frame 'while/while_context'.*LoopCond"):
        raise_control_flow_v1(graph_def)


def test_op_without_known_output_names_in_a_body_is_named(cases):
    graph_def = type(cases["invariants"].graph_def)()
    graph_def.CopyFrom(cases["invariants"].graph_def)
    (node,) = [n for n in graph_def.node if n.op == "RealDiv" and n.name.startswith("while/")]
    node.op = "MyCustomDiv"
    with pytest.raises(UnsupportedOpError, match="MyCustomDiv") as error:
        raise_control_flow_v1(graph_def)
    assert error.value.ops[0][1] == "MyCustomDiv"


def test_tensorboard_protos_work_the_same(cases):
    graph_pb2 = pytest.importorskip("tensorboard.compat.proto.graph_pb2",
                                    reason="tensorboard (the protobuf definitions the TF front end reads) "
                                           "is not installed")
    case = cases["cond_in_while"]
    board = graph_pb2.GraphDef.FromString(case.graph_def.SerializeToString())
    raised = raise_control_flow_v1(board)
    assert isinstance(raised, graph_pb2.GraphDef)
    back = type(case.graph_def).FromString(raised.SerializeToString())
    feeds = {k: make() for k, make in case.inputs.items()}
    np.testing.assert_allclose(run_graph(back, feeds, case.outputs)[0], run_graph(case.graph_def, feeds,
                                                                                  case.outputs)[0], rtol=1e-6)


def test_output_argument_table_matches_tensorflow_registry():
    from tensorflow.python.framework import op_def_registry

    for op, specs in OUTPUT_ARGS.items():
        op_def = op_def_registry.get(op)
        assert op_def is not None, op
        expected = tuple(a.name + (f"*{a.number_attr}" if a.number_attr else "")
                         + (f"@{a.type_list_attr}" if a.type_list_attr else "") for a in op_def.output_arg)
        assert specs == expected, op
