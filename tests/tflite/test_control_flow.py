"""IF and WHILE on self-built multi-subgraph models, checked against the TFLite interpreter."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, check_model, q, random_values
from tractile.datum import DatumType
from tractile.errors import ModelFormatError
from tractile.fact import TypedFact
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.ops.control import WHILE_SUBGRAPHS, if_op, while_translation
from tractile.formats.tflite.writer import write_model
from tractile.graph import InletId, OutletId
from tractile.model import TypedModel
from tractile.ops.array import Concat
from tractile.ops.cast import Cast
from tractile.ops.control import Body
from tractile.ops.control_loop import Loop
from tractile.ops.reduce import Reduce
from tractile.runtime import plan as plans

RNG = np.random.default_rng(23)


def branch(name: str, kind: str, dtype="f32", shape=(2, 3), quant=None, out_q=None):
    g = GraphBuilder(name)
    a = g.input("a", dtype, shape, quant)
    b = g.input("b", dtype, shape, quant)
    return g.outputs(g.binary(kind, kind, [a, b], out_q))


def if_model(then_branch, else_branch, dtype="f32", shape=(2, 3), quant=None, outputs=1):
    g = GraphBuilder()
    cond = g.input("cond", "bool", (1,))
    x = g.input("x", dtype, shape, quant)
    y = g.input("y", dtype, shape, quant)
    result = g.op("if", if_op(then_branch, else_branch, 2), [cond, x, y], outputs=outputs)
    return g.outputs(*(result if outputs > 1 else [result]))


def test_if_float_takes_either_branch():
    model = if_model(branch("then", "add"), branch("else", "mul"))
    sets = [[np.array([flag]), *(RNG.standard_normal((2, 3)).astype(np.float32) for _ in range(2))]
            for flag in (True, False, False, True)]
    outputs = check_model(model, sets)
    np.testing.assert_allclose(outputs[0][0], sets[0][1] + sets[0][2])
    np.testing.assert_allclose(outputs[1][0], sets[1][1] * sets[1][2])


def test_if_int8_branches():
    quant, out_q = q(0.05, 3), q(0.1, -2)
    model = if_model(branch("then", "add", "i8", (16,), quant, out_q), branch("else", "sub", "i8", (16,), quant, out_q),
                     "i8", (16,), quant)
    sets = [[np.array([flag]), *(random_values(model.input_fact(1), RNG) for _ in range(2))]
            for flag in (True, False) * 3]
    check_model(model, sets)


def test_if_branches_with_different_output_shapes():
    then = GraphBuilder("then")
    a, b = then.input("a", "f32", (2, 3)), then.input("b", "f32", (2, 3))
    then = then.outputs(then.op("cat", Concat(0), [a, b]))
    other = GraphBuilder("else")
    a, b = other.input("a", "f32", (2, 3)), other.input("b", "f32", (2, 3))
    other = other.outputs(other.op("sum", Reduce("sum", (0,), keepdims=True, noop_with_empty_axes=True), [a]))
    model = if_model(then, other)
    assert str(model.output_fact(0).shape[0]).startswith("_u")
    sets = [[np.array([flag]), *(RNG.standard_normal((2, 3)).astype(np.float32) for _ in range(2))]
            for flag in (True, False)]
    outputs = check_model(model, sets)
    assert outputs[0][0].shape == (4, 3) and outputs[1][0].shape == (1, 3)


def counting_loop(growing: bool = False):
    """i, n, acc -> while i != n: i += 1; acc = acc * [2, 0.5] (or acc = concat(acc, acc))."""
    acc_shape = (1,) if growing else (2,)

    def loop_inputs(g):
        return g.input("i", "i32", (1,)), g.input("n", "i32", (1,)), g.input("acc", "f32", acc_shape)

    cond = GraphBuilder("cond")
    i, n, _ = loop_inputs(cond)
    left = cond.binary("left", "sub", [n, i])
    cond = cond.outputs(cond.op("go", Cast(DatumType.BOOL), [left]))
    body = GraphBuilder("body")
    i, n, acc = loop_inputs(body)
    step = body.binary("step", "add", [i, body.const("one", np.array([1], np.int32))])
    if growing:
        grown = body.op("grown", Concat(0), [acc, acc])
    else:
        grown = body.binary("grown", "mul", [acc, body.const("factor", np.array([2.0, 0.5], np.float32))])
    body = body.outputs(step, n, grown)
    g = GraphBuilder()
    outputs = g.translate("loop", while_translation, cond, body, list(loop_inputs(g)))
    return g.outputs(*outputs)


def test_while_with_static_shapes():
    model = counting_loop()
    assert [str(f) for f in model.output_facts] == ["1,i32", "1,i32", "2,f32"]
    sets = [[np.array([0], np.int32), np.array([count], np.int32), RNG.standard_normal(2).astype(np.float32)]
            for count in (0, 1, 7)]
    outputs = check_model(model, sets)
    np.testing.assert_allclose(outputs[2][2], sets[2][2] * np.array([2.0 ** 7, 0.5 ** 7]), rtol=1e-6)


def test_while_with_a_growing_loop_variable():
    model = counting_loop(growing=True)
    assert str(model.output_fact(2).shape[0]).startswith("_u")
    sets = [[np.array([0], np.int32), np.array([count], np.int32), RNG.standard_normal(1).astype(np.float32)]
            for count in (0, 1, 5)]
    outputs = check_model(model, sets)
    assert [o[2].shape for o in outputs] == [(1,), (2,), (32,)]


def test_while_plans_its_subgraphs_once_per_state(monkeypatch):
    model = counting_loop(growing=True).into_optimized()
    built = []
    original = plans.SimplePlan.__init__
    monkeypatch.setattr(plans.SimplePlan, "__init__", lambda self, *a, **k: built.append(1) or original(self, *a, **k))
    state = model.state()
    inputs = [np.array([0], np.int32), np.array([6], np.int32), np.ones(1, np.float32)]
    state.run(inputs)
    assert len(built) == 2  # the model's plan and the loop body's
    state.run(inputs)
    state.run([inputs[0], np.array([3], np.int32), np.ones(1, np.float32)])
    assert len(built) == 2


def test_while_inside_if():
    then = counting_loop()
    then.properties["tflite_subgraph"] = "then"
    other = GraphBuilder("else")
    i, n, acc = other.input("i", "i32", (1,)), other.input("n", "i32", (1,)), other.input("acc", "f32", (2,))
    other = other.outputs(i, n, other.binary("neg", "sub", [other.const("zero", np.zeros(2, np.float32)),
                                                                       acc]))
    g = GraphBuilder()
    cond = g.input("cond", "bool", (1,))
    i, n, acc = g.input("i", "i32", (1,)), g.input("n", "i32", (1,)), g.input("acc", "f32", (2,))
    outputs = g.op("if", if_op(then, other, 3), [cond, i, n, acc], outputs=3)
    model = g.outputs(*outputs)
    sets = [[np.array([flag]), np.array([0], np.int32), np.array([3], np.int32),
             RNG.standard_normal(2).astype(np.float32)] for flag in (True, False)]
    check_model(model, sets)


def _untyped_loop(model, body):
    """A model whose only node is a WHILE over ``body``, wired without typing it."""
    x = model.add_source("x", TypedFact(DatumType.F32, (2,)))
    held = TypedModel()
    held.properties[WHILE_SUBGRAPHS] = (body, body)
    loop = Loop(Body(held, "the WHILE body"), 1, has_trip_count=False, has_condition=True)
    node = model.add_node("loop", loop, [TypedFact(DatumType.F32, (2,))])
    model.add_edge(x, InletId(node, 0))
    model.add_edge(x, InletId(node, 1))
    model.outputs = [OutletId(node, 0)]
    return model


def test_recursive_subgraphs_are_rejected_at_load():
    body = TypedModel()
    _untyped_loop(body, body)
    data = write_model(_untyped_loop(TypedModel(), body))
    with pytest.raises(ModelFormatError, match="calls itself"):
        load_tflite(data)
