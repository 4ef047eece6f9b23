"""CALL_ONCE and resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE) against TFLite."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, check_model
from tractile.errors import RunError
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.loader import program_model
from tractile.formats.tflite.ops.control import while_translation
from tractile.formats.tflite.writer import write_model
from tractile.ops.control import Body
from tractile.ops.resource import AssignVariable, CallOnce, ReadVariable, VarHandle


def accumulator(initial=(1.0, 2.0, 3.0)):
    """init: acc := initial; main: CALL_ONCE(init); y = acc + x; acc := y; output y."""
    init = GraphBuilder("init")
    handle = init.op("handle", VarHandle(shared_name="acc"), [])
    token = init.op("assign", AssignVariable(), [handle, init.const("initial", np.array(initial, np.float32))])
    init = init.outputs(token)
    init.properties["tflite_outputs"] = 0
    g = GraphBuilder()
    x = g.input("x", "f32", (3,))
    once = g.op("once", CallOnce(init=Body(init, "init")), [])
    handle = g.op("handle", VarHandle(shared_name="acc"), [])
    value = g.op("read", ReadVariable(shape=(3,), ordered=True), [handle, once])
    total = g.binary("total", "add", [value, x])
    stored = g.op("store", AssignVariable(ordered=True), [handle, total, value])
    main = g.outputs(total, stored)
    main.properties["tflite_outputs"] = 1
    return program_model(main)


def test_call_once_initialises_variables_once_and_they_persist_across_runs():
    model = accumulator()
    sets = [[np.array([k, 10 * k, 0.5], np.float32)] for k in range(5)]
    outputs = check_model(model, sets)
    np.testing.assert_allclose(outputs[-1][0], [1 + 10, 2 + 100, 3 + 2.5])


def test_each_state_has_its_own_variables_and_reset_forgets_them():
    model = load_tflite(write_model(accumulator())).into_optimized()
    first, second = model.state(), model.state()
    ones = np.ones(3, np.float32)
    first.run([ones])
    np.testing.assert_allclose(first.run([ones])[0], [3, 4, 5])
    np.testing.assert_allclose(second.run([ones])[0], [2, 3, 4])
    first.reset()
    np.testing.assert_allclose(first.run([ones])[0], [2, 3, 4])


def test_reading_a_variable_never_assigned_is_a_run_error():
    g = GraphBuilder()
    x = g.input("x", "f32", (3,))
    handle = g.op("handle", VarHandle(shared_name="nothing"), [])
    value = g.op("read", ReadVariable(shape=(3,)), [handle])
    model = program_model(g.outputs(g.binary("y", "add", [value, x])))
    with pytest.raises(RunError, match="before anything was assigned"):
        model.into_optimized().run([np.ones(3, np.float32)])


def loop_updating_a_variable():
    """CALL_ONCE sets a variable to zeros, a WHILE body adds [1, 0.5] to it n times, the main
    graph reads it after the loop."""
    from tractile.datum import DatumType
    from tractile.ops.cast import Cast

    init = GraphBuilder("init")
    handle = init.op("handle", VarHandle(shared_name="count"), [])
    init = init.outputs(init.op("assign", AssignVariable(), [handle, init.const("zero", np.zeros(2, np.float32))]))
    init.properties["tflite_outputs"] = 0
    cond = GraphBuilder("cond")
    i, n = cond.input("i", "i32", (1,)), cond.input("n", "i32", (1,))
    cond = cond.outputs(cond.op("go", Cast(DatumType.BOOL), [cond.binary("left", "sub", [n, i])]))
    body = GraphBuilder("body")
    i, n = body.input("i", "i32", (1,)), body.input("n", "i32", (1,))
    handle = body.op("handle", VarHandle(shared_name="count"), [])
    value = body.op("read", ReadVariable(shape=(2,)), [handle])
    step = body.binary("step", "add", [value, body.const("inc", np.array([1.0, 0.5], np.float32))])
    stored = body.op("store", AssignVariable(ordered=True), [handle, step, value])
    after = body.binary("next", "add", [i, body.const("one", np.array([1], np.int32))])
    body = body.outputs(after, n, stored)
    body.properties["tflite_outputs"] = 2
    g = GraphBuilder()
    i, n = g.input("i", "i32", (1,)), g.input("n", "i32", (1,))
    once = g.op("once", CallOnce(init=Body(init, "init")), [])
    loop = g.translate("loop", lambda node, *items: while_translation(node, cond, body, list(items), once), i, n)
    handle = g.op("handle", VarHandle(shared_name="count"), [])
    value = g.op("read", ReadVariable(shape=(2,), ordered=True), [handle, loop[-1]])
    main = g.outputs(value, loop[0], value)
    main.properties["tflite_outputs"] = 2
    return program_model(main)


def test_a_while_body_updates_a_variable():
    model = loop_updating_a_variable()
    sets = [[np.array([0], np.int32), np.array([count], np.int32)] for count in (3, 0, 2)]
    outputs = check_model(model, sets)
    assert [o[0].tolist() for o in outputs] == [[3.0, 1.5], [3.0, 1.5], [5.0, 2.5]]
