"""Control flow: If, Loop, Scan (bodies with outer-scope values, facts, limits, nesting)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import tractile
from tractile import AnalysisError, RunError, TDim
from tractile.runtime.plan import SimplePlan

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value


def graph(nodes, inputs, outputs, name="body"):
    return helper.make_graph(nodes, name, inputs, outputs)


def if_model(then_nodes, then_out, else_nodes, else_out, inputs, opset=17):
    then_branch = graph(then_nodes, [], [then_out], "then")
    else_branch = graph(else_nodes, [], [else_out], "else")
    branch = node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch)
    return model([branch], [value("cond", "bool", []), *inputs], [value("y", "f32")], opset=opset)


def test_if_branches_read_outer_values():
    proto = if_model([node("Add", ["x", "z"], ["t"])], value("t", "f32", [3]),
                     [node("Sub", ["x", "z"], ["e"])], value("e", "f32", [3]),
                     [value("x", "f32", [3]), value("z", "f32", [3])])
    typed = tractile.load(proto)
    x, z = np.array([1, 2, 3], np.float32), np.array([10, 20, 30], np.float32)
    for flag in (True, False):
        got = typed.run([np.array(flag), x, z])[0]
        np.testing.assert_array_equal(got, run_onnxruntime(proto, [np.array(flag), x, z])[0])
    np.testing.assert_array_equal(typed.run([np.array(True), x, z])[0], [11, 22, 33])


def test_if_branches_of_different_shapes_give_a_symbolic_dim():
    proto = if_model([node("Concat", ["x", "x"], ["t"], axis=0)], value("t", "f32", [None]),
                     [node("Identity", ["x"], ["e"])], value("e", "f32", [None]),
                     [value("x", "f32", [3])])
    typed = tractile.load(proto)
    (dim,) = typed.output_fact(0).shape
    assert isinstance(dim, TDim)
    x = np.arange(3, dtype=np.float32)
    assert typed.run([np.array(True), x])[0].tolist() == [0, 1, 2, 0, 1, 2]
    state = typed.plan().state(check_facts=True)
    assert state.run([np.array(False), x])[0].tolist() == [0, 1, 2]


def test_if_with_a_constant_condition_is_inlined():
    proto = if_model([node("Neg", ["x"], ["t"])], value("t", "f32", [2]),
                     [node("Abs", ["x"], ["e"])], value("e", "f32", [2]),
                     [value("x", "f32", [2])])
    loaded = tractile.load(proto, optimize=False)
    loaded.set_input_fact("cond", tractile.InferenceFact(tractile.DatumType.BOOL, [], np.array(False)))
    typed = loaded.into_optimized()
    assert [n.op.name for n in typed.nodes if n.op.name not in ("Source", "Const")] == ["Abs"]


def test_if_condition_must_be_bool():
    proto = if_model([node("Neg", ["x"], ["t"])], value("t", "f32", [2]),
                     [node("Abs", ["x"], ["e"])], value("e", "f32", [2]), [value("x", "f32", [2])])
    proto.graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT
    with pytest.raises(AnalysisError, match="If condition must be a bool tensor"):
        tractile.load(proto)


def counting_loop(opset=17):
    """y_out = y_in + i; stop once y_out > limit; scan output: y_out each iteration."""
    body = graph([node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
                  node("Add", ["y_in", "fi"], ["y_out"]),
                  node("ReduceSum", ["y_out"], ["total"], keepdims=0),
                  node("LessOrEqual", ["total", "limit"], ["cond_out"]),
                  node("Identity", ["y_out"], ["scan"])],
                 [value("i", "i64", []), value("cond_in", "bool", []), value("y_in", "f32", [2])],
                 [value("cond_out", "bool", []), value("y_out", "f32", [2]), value("scan", "f32", [2])])
    loop = node("Loop", ["trip", "cond", "y0"], ["y", "ys"], body=body)
    return model([loop], [value("trip", "i64", []), value("cond", "bool", []), value("y0", "f32", [2]),
                          value("limit", "f32", [])], [value("y", "f32"), value("ys", "f32")], opset=opset)


def test_loop_with_dynamic_trip_count_condition_and_scan_outputs():
    proto = counting_loop()
    typed = tractile.load(proto)
    y0 = np.array([1, 2], np.float32)
    for trip, limit in ((10, 40.0), (3, 1000.0), (0, 5.0), (10, -1.0)):
        inputs = [np.array(trip), np.array(True), y0, np.array(limit, np.float32)]
        got = typed.plan().state(check_facts=True).run(inputs)
        for ours, theirs in zip(got, run_onnxruntime(proto, inputs)):
            assert ours.shape == theirs.shape
            np.testing.assert_allclose(ours, theirs)
    assert isinstance(typed.output_fact(1).shape[0], TDim) and typed.output_fact(1).shape[1:] == (2,)


def test_loop_body_is_planned_once_and_run_many_times(monkeypatch):
    typed = tractile.load(counting_loop())
    typed.plan()
    built = []
    original = SimplePlan.__init__

    def counting_init(self, *args, **kwargs):
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(SimplePlan, "__init__", counting_init)
    inputs = [np.array(20), np.array(True), np.zeros(2, np.float32), np.array(1e9, np.float32)]
    for _ in range(3):
        assert typed.run(inputs)[1].shape == (20, 2)
    assert len(built) == 1  # the body's plan, built on the first run only


def test_loop_past_the_iteration_limit_raises(monkeypatch):
    monkeypatch.setattr(tractile.Limits, "max_loop_iterations", 50)
    typed = tractile.load(counting_loop())
    inputs = [np.array(1000), np.array(True), np.zeros(2, np.float32), np.array(1e9, np.float32)]
    with pytest.raises(RunError, match="did not stop after 50 iterations"):
        typed.run(inputs)


def test_loop_carried_tensor_that_grows_gets_a_symbolic_dim():
    body = graph([node("Concat", ["acc_in", "one"], ["acc_out"], axis=0), node("Identity", ["c"], ["c_out"])],
                 [value("i", "i64", []), value("c", "bool", []), value("acc_in", "f32", [None])],
                 [value("c_out", "bool", []), value("acc_out", "f32", [None])])
    proto = model([node("Loop", ["trip", "", "acc"], ["out"], body=body)],
                  [value("trip", "i64", []), value("acc", "f32", [1])], [value("out", "f32")],
                  {"one": np.ones(1, np.float32)})
    typed = tractile.load(proto)
    assert isinstance(typed.output_fact(0).shape[0], TDim)
    got = typed.plan().state(check_facts=True).run([np.array(4), np.zeros(1, np.float32)])[0]
    np.testing.assert_array_equal(got, run_onnxruntime(proto, [np.array(4), np.zeros(1, np.float32)])[0])
    assert got.tolist() == [0, 1, 1, 1, 1]


def test_loop_carried_value_changing_rank_is_an_analysis_error():
    body = graph([node("Unsqueeze", ["acc_in", "zero"], ["acc_out"]), node("Identity", ["c"], ["c_out"])],
                 [value("i", "i64", []), value("c", "bool", []), value("acc_in", "f32", None)],
                 [value("c_out", "bool", []), value("acc_out", "f32", None)])
    proto = model([node("Loop", ["trip", "", "acc"], ["out"], body=body)],
                  [value("trip", "i64", []), value("acc", "f32", [1])], [value("out", "f32")],
                  {"zero": np.zeros(1, np.int64)})
    with pytest.raises(AnalysisError, match="loop-carried value 0 .* its rank changes"):
        tractile.load(proto)


def test_nested_loop_and_if_read_values_from_two_scopes_up():
    inner_then = graph([node("Add", ["acc_in", "w"], ["t"])], [], [value("t", "f32", [2])], "then")
    inner_else = graph([node("Sub", ["acc_in", "w"], ["e"])], [], [value("e", "f32", [2])], "else")
    body = graph([node("Mod", ["i", "two"], ["parity"]), node("Equal", ["parity", "zero"], ["even"]),
                  node("If", ["even"], ["acc_out"], then_branch=inner_then, else_branch=inner_else),
                  node("Identity", ["c"], ["c_out"])],
                 [value("i", "i64", []), value("c", "bool", []), value("acc_in", "f32", [2])],
                 [value("c_out", "bool", []), value("acc_out", "f32", [2])])
    proto = model([node("Mul", ["x", "x"], ["w"]), node("Loop", ["trip", "", "x"], ["y"], body=body)],
                  [value("trip", "i64", []), value("x", "f32", [2])], [value("y", "f32")],
                  {"two": np.array(2, np.int64), "zero": np.array(0, np.int64)})
    typed = tractile.load(proto)
    x = np.array([1.5, -2], np.float32)
    for trip in (0, 1, 5):
        got = typed.run([np.array(trip), x])[0]
        np.testing.assert_allclose(got, run_onnxruntime(proto, [np.array(trip), x])[0])


def scan_model(opset, reverse=False, output_axis=0):
    body = graph([node("Add", ["s_in", "x_t"], ["s_out"]), node("Mul", ["s_out", "k"], ["y_t"])],
                 [value("s_in", "f32", [2]), value("x_t", "f32", [2])],
                 [value("s_out", "f32", [2]), value("y_t", "f32", [2])])
    attrs = {"num_scan_inputs": 1}
    if opset >= 9:
        attrs.update(scan_input_axes=[1], scan_input_directions=[int(reverse)], scan_output_axes=[output_axis])
        inputs, names = [value("s0", "f32", [2]), value("x", "f32", [2, "T"])], ["s0", "x"]
    else:
        attrs.update(directions=[int(reverse)])
        inputs, names = [value("s0", "f32", [1, 2]), value("x", "f32", [1, "T", 2])], ["", "s0", "x"]
    scan = node("Scan", names, ["s", "ys"], body=body, **attrs)
    return model([scan], inputs, [value("s", "f32"), value("ys", "f32")], {"k": np.float32(2)}, opset=opset)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("output_axis", [0, 1, -1])
def test_scan_axes_and_directions_match_onnxruntime(reverse, output_axis):
    proto = scan_model(11, reverse, output_axis)
    typed = tractile.load(proto)
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    state = typed.plan().state(check_facts=True)
    for ours, theirs in zip(state.run([np.zeros(2, np.float32), x]),
                            run_onnxruntime(proto, [np.zeros(2, np.float32), x])):
        np.testing.assert_allclose(ours, theirs)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_opset8_batched_form(reverse):
    proto = scan_model(8, reverse)
    typed = tractile.load(proto)
    x = np.arange(8, dtype=np.float32).reshape(1, 4, 2)
    s0 = np.ones((1, 2), np.float32)
    s, ys = typed.run([s0, x])
    expected_states = np.cumsum(x[0, ::-1] if reverse else x[0], axis=0) + 1
    np.testing.assert_allclose(s[0], expected_states[-1])
    np.testing.assert_allclose(ys[0], 2 * expected_states)


def test_scan_inputs_of_different_lengths_are_an_analysis_error():
    body = graph([node("Add", ["a", "b"], ["c"])], [value("a", "f32", [2]), value("b", "f32", [2])],
                 [value("c", "f32", [2])])
    proto = model([node("Scan", ["x", "z"], ["y"], body=body, num_scan_inputs=2)],
                  [value("x", "f32", [3, 2]), value("z", "f32", [4, 2])], [value("y", "f32")])
    with pytest.raises(AnalysisError, match="Scan inputs have different lengths"):
        tractile.load(proto)


def test_fact_checks_reach_into_bodies(monkeypatch):
    typed = tractile.load(counting_loop())
    loop = next(n.op for n in typed.nodes if n.op.name == "Loop")
    checked = []
    from tractile.runtime import check

    original = check.check_step_outputs
    monkeypatch.setattr(check, "check_step_outputs",
                        lambda step, *a: (checked.append(step.node.name), original(step, *a)))
    inputs = [np.array(3), np.array(True), np.zeros(2, np.float32), np.array(1e9, np.float32)]
    typed.plan().state(check_facts=True).run(inputs)
    body_nodes = {n.name for n in loop.body.typed.nodes}
    assert body_nodes & set(checked)  # body steps were checked, on every iteration
    checked.clear()
    typed.plan().state().run(inputs)
    assert checked == []


def test_loop_trip_count_from_a_shape_gives_symbolic_scan_outputs():
    body = graph([node("Gather", ["x", "i"], ["row"], axis=0), node("Add", ["acc", "row"], ["acc_out"]),
                  node("Identity", ["c"], ["c_out"]), node("Mul", ["row", "row"], ["sq"])],
                 [value("i", "i64", []), value("c", "bool", []), value("acc", "f32", [3])],
                 [value("c_out", "bool", []), value("acc_out", "f32", [3]), value("sq", "f32", [3])])
    proto = model([node("Shape", ["x"], ["shape"]), node("Slice", ["shape", "zero", "one"], ["n1"]),
                   node("Squeeze", ["n1"], ["n"]), node("Loop", ["n", "", "init"], ["total", "squares"], body=body)],
                  [value("x", "f32", ["N", 3])], [value("total", "f32"), value("squares", "f32")],
                  {"zero": np.array([0]), "one": np.array([1]), "init": np.zeros(3, np.float32)})
    typed = tractile.load(proto)
    assert str(typed.output_fact(1)) == "N,3,f32"
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for ours, theirs in zip(typed.plan().state(check_facts=True).run([x]), run_onnxruntime(proto, [x])):
        np.testing.assert_allclose(ours, theirs)


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_opset8_sequence_lens_pad_with_zeros(reverse):
    body = graph([node("Add", ["s_in", "x_t"], ["s_out"]), node("Identity", ["s_out"], ["y_t"])],
                 [value("s_in", "f32", [2]), value("x_t", "f32", [2])],
                 [value("s_out", "f32", [2]), value("y_t", "f32", [2])])
    proto = model([node("Scan", ["lens", "s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1,
                        directions=[int(reverse)])],
                  [value("lens", "i64", [2]), value("s0", "f32", [2, 2]), value("x", "f32", [2, 4, 2])],
                  [value("s", "f32"), value("ys", "f32")], opset=8)
    args = [np.array([4, 2]), np.zeros((2, 2), np.float32), np.arange(16, dtype=np.float32).reshape(2, 4, 2)]
    got = tractile.load(proto).plan().state(check_facts=True).run(args)
    for ours, theirs in zip(got, run_onnxruntime(proto, args)):
        np.testing.assert_allclose(ours, theirs)
    assert (got[1][1, 2:] == 0).all()
