"""IF, WHILE (If, Loop), resource variables and CALL_ONCE compiled: the generated C against the
interpreter, bit for bit, over several calls of one state (the variables persist, reset forgets
them), both branches, zero and several iterations, the iteration cap, ONNX If and Loop, a model
TensorFlow's converter made from tf.Variable, tf.cond and tf.while_loop, and one Cortex-M4 run
in QEMU."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tractile
from tests.compile.harness import assert_builds_without_warnings, assert_same_outputs, compiled
from tests.tflite.builder import q, random_values
from tests.tflite.test_control_flow import branch, counting_loop, if_model
from tests.tflite.test_resource_variables import accumulator, loop_updating_a_variable
from tests.unit.onnx_builder import model as onnx_model
from tests.unit.onnx_builder import node, value
from tractile.compile import generate
from tractile.compile.segments import CompiledSegment, compile_segments
from tractile.errors import RunError, UnsupportedOpError
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.writer import write_model
from tractile.ops.base import Limits

RNG = np.random.default_rng(24)


def tflite(model):
    """The model as TFLite Micro would load it: written and read back, optimized."""
    return load_tflite(write_model(model)).into_optimized()


def same_runs(model, cm, runs, state=None, compiled_state=None):
    """Run each input list through one interpreter state and one compiled context; compare."""
    state = model.state() if state is None else state
    compiled_state = cm.state() if compiled_state is None else compiled_state
    outputs = []
    for index, values in enumerate(runs):
        expected = state.run(list(values))
        assert_same_outputs(expected, compiled_state.run(list(values)), rtol=0, atol=0, what=f"run {index}")
        outputs.append(expected)
    return outputs


def test_if_takes_either_branch_and_the_branches_share_arena_bytes(compile_cache, tmp_path):
    model = tflite(if_model(branch("then", "add"), branch("else", "mul")))
    cm = compiled(model, compile_cache, name="if_float")
    runs = [[np.array([flag]), *(RNG.standard_normal((2, 3)).astype(np.float32) for _ in range(2))]
            for flag in (True, False, False, True)]
    outputs = same_runs(model, cm, runs)
    np.testing.assert_array_equal(outputs[0][0], runs[0][1] + runs[0][2])
    np.testing.assert_array_equal(outputs[1][0], runs[1][1] * runs[1][2])
    assert "if (cond[0]) {" in cm.source.source and "} else {" in cm.source.source
    branch_bytes = 2 * 3 * 4
    assert cm.report["arena_bytes"] < 2 * branch_bytes, "the two branches' results share bytes"
    assert_builds_without_warnings(cm.source, tmp_path)


def test_int8_if_is_bit_exact(compile_cache):
    quant, out_q = q(0.05, 3), q(0.1, -2)
    model = tflite(if_model(branch("then", "add", "i8", (16,), quant, out_q),
                            branch("else", "sub", "i8", (16,), quant, out_q), "i8", (16,), quant))
    cm = compiled(model, compile_cache, name="if_int8")
    runs = [[np.array([flag]), *(random_values(model.input_fact(1), RNG) for _ in range(2))]
            for flag in (True, False) * 3]
    same_runs(model, cm, runs)


def test_while_runs_zero_one_and_several_iterations(compile_cache, tmp_path):
    model = tflite(counting_loop())
    cm = compiled(model, compile_cache, name="while_count")
    runs = [[np.array([0], np.int32), np.array([count], np.int32), RNG.standard_normal(2).astype(np.float32)]
            for count in (0, 1, 7, 3)]
    outputs = same_runs(model, cm, runs)
    assert [int(o[0][0]) for o in outputs] == [0, 1, 7, 3]
    np.testing.assert_array_equal(outputs[0][2], runs[0][2])
    assert_builds_without_warnings(cm.source, tmp_path)


def swapping_loop():
    """i, n, a, b -> while i != n: i += 1; a, b = b, a (the body gives each as the other)."""
    from tests.tflite.builder import GraphBuilder
    from tractile.datum import DatumType
    from tractile.formats.tflite.ops.control import while_translation
    from tractile.ops.cast import Cast

    def loop_inputs(g):
        return [g.input("i", "i32", (1,)), g.input("n", "i32", (1,)), g.input("a", "f32", (3,)),
                g.input("b", "f32", (3,))]

    cond = GraphBuilder("cond")
    i, n, _, _ = loop_inputs(cond)
    cond = cond.outputs(cond.op("go", Cast(DatumType.BOOL), [cond.binary("left", "sub", [n, i])]))
    body = GraphBuilder("body")
    i, n, a, b = loop_inputs(body)
    body = body.outputs(body.binary("next", "add", [i, body.const("one", np.array([1], np.int32))]), n, b, a)
    g = GraphBuilder()
    return g.outputs(*g.translate("loop", while_translation, cond, body, loop_inputs(g)))


def test_a_loop_body_swapping_its_loop_variables(compile_cache):
    model = tflite(swapping_loop())
    cm = compiled(model, compile_cache, name="while_swap")
    a, b = np.arange(3, dtype=np.float32), -np.arange(3, dtype=np.float32) - 1
    runs = [[np.array([0], np.int32), np.array([count], np.int32), a, b] for count in (0, 1, 2, 3)]
    outputs = same_runs(model, cm, runs)
    np.testing.assert_array_equal(outputs[3][2], b)
    np.testing.assert_array_equal(outputs[3][3], a)


def test_an_endless_loop_stops_at_the_iteration_cap_with_an_error(compile_cache):
    model = tflite(counting_loop())
    saved = Limits.max_loop_iterations
    tractile.set_limits(max_loop_iterations=5)
    try:
        cm = compiled(model, compile_cache, name="while_capped")
        runs = [np.array([0], np.int32), np.array([5], np.int32), np.ones(2, np.float32)]
        same_runs(model, cm, [runs])  # five iterations: at the cap, not past it
        endless = [np.array([0], np.int32), np.array([-1], np.int32), np.ones(2, np.float32)]
        with pytest.raises(RunError, match="did not stop after 5 iterations"):
            model.run(endless)
        with pytest.raises(RunError, match="the loop did not stop after 5 iterations"):
            cm.run(endless)
    finally:
        tractile.set_limits(max_loop_iterations=saved)
    assert "#define WHILE_CAPPED_MAX_LOOP_ITERATIONS 5" in cm.source.source


def test_variables_persist_across_calls_and_reset_forgets_them(compile_cache, tmp_path):
    model = tflite(accumulator())
    cm = compiled(model, compile_cache, name="accumulator")
    assert cm.report["state_bytes"] >= 3 * 4 + 2, "the variable and the flags are in the context"
    runs = [[np.array([k, 10 * k, 0.5], np.float32)] for k in range(4)]
    state, compiled_state = model.state(), cm.state()
    first = same_runs(model, cm, runs, state, compiled_state)
    np.testing.assert_array_equal(first[0][0], np.array([1, 2, 3.5], np.float32))
    other = cm.state()  # a second context has its own variables
    np.testing.assert_array_equal(other.run(runs[0])[0], first[0][0])
    state.reset()
    compiled_state.reset()
    again = same_runs(model, cm, runs, state, compiled_state)
    for before, after in zip(first, again):
        np.testing.assert_array_equal(before[0], after[0])
    assert_builds_without_warnings(cm.source, tmp_path)


def test_reading_a_variable_never_assigned_is_a_run_error(compile_cache):
    from tests.tflite.builder import GraphBuilder
    from tractile.formats.tflite.loader import program_model
    from tractile.ops.resource import ReadVariable, VarHandle

    g = GraphBuilder()
    x = g.input("x", "f32", (3,))
    handle = g.op("handle", VarHandle(shared_name="nothing"), [])
    read = g.op("read", ReadVariable(shape=(3,)), [handle])
    model = program_model(g.outputs(g.binary("y", "add", [read, x]))).into_optimized()
    cm = compiled(model, compile_cache, name="unassigned")
    with pytest.raises(RunError, match="read before anything was assigned"):
        cm.run([np.ones(3, np.float32)])


def test_a_while_body_updates_a_variable_set_once(compile_cache):
    model = tflite(loop_updating_a_variable())
    cm = compiled(model, compile_cache, name="while_variable")
    runs = [[np.array([0], np.int32), np.array([count], np.int32)] for count in (3, 0, 2, 1)]
    outputs = same_runs(model, cm, runs)
    assert [o[0].tolist() for o in outputs] == [[3.0, 1.5], [3.0, 1.5], [5.0, 2.5], [6.0, 3.0]]


def nested_onnx_loop():
    """An ONNX Loop whose body holds an If, both reading values from scopes above."""
    from onnx import TensorProto, helper

    inner_then = helper.make_graph([node("Add", ["acc_in", "w"], ["t"])], "then", [], [value("t", "f32", [2])])
    inner_else = helper.make_graph([node("Sub", ["acc_in", "w"], ["e"])], "else", [], [value("e", "f32", [2])])
    body = helper.make_graph([node("Cast", ["i"], ["i32"], to=TensorProto.INT32),
                              node("Mod", ["i32", "two"], ["parity"]),
                              node("Equal", ["parity", "zero"], ["even"]),
                              node("If", ["even"], ["acc_out"], then_branch=inner_then, else_branch=inner_else),
                              node("Identity", ["c"], ["c_out"])], "body",
                             [value("i", "i64", []), value("c", "bool", []), value("acc_in", "f32", [2])],
                             [value("c_out", "bool", []), value("acc_out", "f32", [2])])
    return onnx_model([node("Mul", ["x", "x"], ["w"]), node("Loop", ["trip", "", "x"], ["y"], body=body)],
                      [value("trip", "i64", []), value("x", "f32", [2])], [value("y", "f32")],
                      {"two": np.array(2, np.int32), "zero": np.array(0, np.int32)})


def test_onnx_loop_around_an_if_matches_the_interpreter_and_onnxruntime(compile_cache):
    from tests.conftest import run_onnxruntime

    proto = nested_onnx_loop()
    model = tractile.load(proto)
    cm = compiled(model, compile_cache, name="onnx_nested")
    x = np.array([1.5, -2], np.float32)
    runs = [[np.array(trip), x] for trip in (0, 1, 5, 2)]
    for values, outputs in zip(runs, same_runs(model, cm, runs)):
        np.testing.assert_allclose(outputs[0], run_onnxruntime(proto, values)[0], rtol=1e-6)


def test_onnx_loop_with_a_constant_trip_count_fills_its_scan_outputs(compile_cache):
    from onnx import TensorProto, helper

    from tests.conftest import run_onnxruntime

    body = helper.make_graph([node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT), node("Add", ["y_in", "fi"], ["y_out"]),
                              node("Identity", ["cond_in"], ["cond_out"]), node("Mul", ["y_out", "y_out"], ["scan"]),
                              node("Identity", ["y_in"], ["before"])],
                             "body", [value("i", "i64", []), value("cond_in", "bool", []), value("y_in", "f32", [2])],
                             [value("cond_out", "bool", []), value("y_out", "f32", [2]), value("scan", "f32", [2]),
                              value("before", "f32", [2])])
    proto = onnx_model([node("Loop", ["trip", "", "y0"], ["y", "ys", "befores"], body=body)],
                       [value("y0", "f32", [2])], [value("y", "f32"), value("ys", "f32"), value("befores", "f32")],
                       {"trip": np.array(4, np.int64)})
    model = tractile.load(proto)
    cm = compiled(model, compile_cache, name="onnx_scan")
    runs = [[RNG.standard_normal(2).astype(np.float32)] for _ in range(2)]
    for values, outputs in zip(runs, same_runs(model, cm, runs)):
        assert outputs[1].shape == outputs[2].shape == (4, 2)
        np.testing.assert_array_equal(outputs[2][0], values[0])  # the carried value before each iteration
        for ours, theirs in zip(outputs, run_onnxruntime(proto, values)):
            np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_branches_of_different_shapes_are_refused_naming_the_node():
    from onnx import helper

    then = helper.make_graph([node("Concat", ["x", "x"], ["t"], axis=0)], "then", [], [value("t", "f32", [None])])
    other = helper.make_graph([node("Identity", ["x"], ["e"])], "else", [], [value("e", "f32", [None])])
    proto = onnx_model([node("If", ["cond"], ["y"], then_branch=then, else_branch=other)],
                       [value("cond", "bool", []), value("x", "f32", [3])], [value("y", "f32")])
    with pytest.raises(UnsupportedOpError, match=r'node #\d+ "\S*" \(If\) gives .* depend on the data'):
        generate(tractile.load(proto))


def test_a_loop_variable_that_grows_is_refused_naming_the_node():
    with pytest.raises(UnsupportedOpError, match=r'node #\d+ "loop:0" \(Loop\) gives .*_u.* depend on the data'):
        generate(tflite(counting_loop(growing=True)))


def test_compile_auto_keeps_a_model_with_control_flow_and_variables_in_one_segment(compile_cache):
    for model in (tflite(loop_updating_a_variable()), tflite(if_model(branch("then", "add"), branch("else", "mul")))):
        auto = compile_segments(model, by="all", cache_dir=compile_cache)
        segments = [n for n in auto.nodes if isinstance(n.op, CompiledSegment)]
        assert len(segments) == 1 and len([n for n in auto.nodes if n.inputs]) == 1


def test_variables_and_a_loop_verify_on_the_cortex_m4(tmp_path):
    from tests.compile.test_targets import needs_board
    from tractile.compile.targets.verify import verify

    needs_board("cortex-m4")
    model = tflite(loop_updating_a_variable())
    runs = [[np.array([0], np.int32), np.array([count], np.int32)] for count in (3, 0, 2, 4)]
    report = verify(model, "cortex-m4", runs=0, inputs=runs, folder=tmp_path)
    assert report["verified"], report["first_difference"]
    assert report["inputs_checked"] == len(runs)
    assert report["ram_bytes"]["state"] >= 2 * 4 + 2


@pytest.fixture(scope="module")
def counter_tflite(tmp_path_factory) -> bytes:
    pytest.importorskip("tensorflow")
    root = Path(__file__).resolve().parents[2]
    folder = tmp_path_factory.mktemp("control_converter")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join([str(root), str(root / "src"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "tests.tflite.control_converter", str(folder)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the converter failed ({done.returncode}):\n{done.stderr[-3000:]}"
    return (folder / "counter.tflite").read_bytes()


def test_a_tensorflow_module_with_a_variable_cond_and_while_loop(counter_tflite, compile_cache):
    from tests.tflite.oracle import reference_interpreter, run_reference

    model = load_tflite(counter_tflite).into_optimized()
    assert {"If", "Loop", "VarHandle", "ReadVariable", "AssignVariable", "CallOnce"} <= _op_names(model)
    cm = compiled(model, compile_cache, name="counter")
    rng = np.random.default_rng(7)
    runs = [[rng.standard_normal(4).astype(np.float32), np.array(count, np.int32)] for count in (0, 3, 1, 5)]
    litert = reference_interpreter(counter_tflite, builtin=True)
    outputs = same_runs(model, cm, runs)
    for values, expected in zip(runs, outputs):  # the interpreter itself against LiteRT, state carried
        np.testing.assert_allclose(expected[0], run_reference(litert, values)[0], rtol=1e-6)
    state = cm.state()
    state.run(runs[1])
    state.reset()
    np.testing.assert_array_equal(state.run(runs[0])[0], outputs[0][0])


def _op_names(model) -> set[str]:
    """The op names of a model and of every body it holds."""
    names = set()
    for each in model.nodes:
        names.add(each.op.name)
        for body in each.op.subgraphs().values():
            names |= _op_names(body)
    return names
