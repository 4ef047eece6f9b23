"""Models that analysis cannot type before their inputs are seen load as they are and are typed
and planned at their first run with each input signature (shapes, datum types, the values of
the small integer inputs that decide an If or a shape)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import tractile
from tractile import AnalysisError, RunError
from tractile.errors import RunTimeFactsError
from tractile.runtime import dynamic
from tractile.runtime.dynamic import DynamicModel

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value


def rank_from_a_flag():
    """``y = transpose(x[:, 0] if cond else x)``: the rank the Transpose sees depends on ``cond``."""
    then_branch = helper.make_graph([node("Squeeze", ["x", "one"], ["t"])], "then", [], [value("t", "f32", None)])
    else_branch = helper.make_graph([node("Identity", ["x"], ["e"])], "else", [], [value("e", "f32", None)])
    nodes = [node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch),
             node("Transpose", ["y"], ["z"], name="the_transpose"), node("Relu", ["z"], ["r"])]
    return model(nodes, [value("cond", "bool", []), value("x", "f32", ["N", 1])], [value("r", "f32")],
                 {"one": np.array([1], np.int64)})


def rank_from_a_shape_input():
    """Reshape to a run-time shape, then an op that needs the rank (Softmax on the last axis
    after a Transpose)."""
    nodes = [node("Reshape", ["x", "shape"], ["y"]), node("Transpose", ["y"], ["t"]),
             node("Softmax", ["t"], ["s"], axis=-1)]
    return model(nodes, [value("x", "f32", [24]), value("shape", "i64", ["K"])], [value("s", "f32")])


def mode_switch_of_one_rank():
    """``y = x * 2 if mode == 0 else x + 2`` (branches of the same rank) and a Gather by ``ids``;
    ``x`` has no declared shape."""
    then_branch = helper.make_graph([node("Mul", ["x", "two"], ["t"])], "then", [], [value("t", "f32", None)])
    else_branch = helper.make_graph([node("Add", ["x", "two"], ["e"])], "else", [], [value("e", "f32", None)])
    nodes = [node("Equal", ["mode", "zero"], ["is_zero"]),
             node("If", ["is_zero"], ["y"], then_branch=then_branch, else_branch=else_branch),
             node("Gather", ["y", "ids"], ["g"], axis=0), node("Transpose", ["g"], ["out"])]
    return model(nodes, [value("mode", "i64", []), value("x", "f32", None), value("ids", "i64", ["K"])],
                 [value("out", "f32")], {"zero": np.array(0, np.int64), "two": np.array(2, np.float32)})


def test_a_rank_decided_by_an_input_value_is_typed_at_the_first_run():
    proto = rank_from_a_flag()
    loaded = tractile.load(proto)
    assert isinstance(loaded, DynamicModel)
    assert "the_transpose" in loaded.reason and "depends on data" in loaded.reason
    # facts analysis could establish stay: datum types and the known dims
    assert str(loaded.input_fact("x")) == "N,1,f32" and loaded.output_fact(0).dtype == tractile.DatumType.F32
    # the explicit pipeline still says which node needs the rank
    with pytest.raises(AnalysisError, match=r'"the_transpose" \(Transpose\).*depends on data'):
        tractile.load(proto, optimize=False).into_typed()
    x = np.arange(6, dtype=np.float32).reshape(3, 2)[:, :1] - 1
    x = np.ascontiguousarray(x)
    state = loaded.state(check_facts=True)
    for flag in (True, False, True, False):
        got = state.run([np.array(flag), x])
        expected = run_onnxruntime(proto, [np.array(flag), x])
        assert got[0].shape == expected[0].shape
        np.testing.assert_array_equal(got[0], expected[0])
    signatures = [signature for signature, _ in loaded.plans]
    assert signatures == ["cond=True; 3,1,f32", "cond=False; 3,1,f32"], signatures
    for _, typed in loaded.plans:  # the flag folded away with its If
        assert not any(n.op.name == "If" for n in typed.nodes)
    loaded.run([np.array(True), np.zeros((5, 1), np.float32)])  # another shape: planned again
    assert len(loaded.plans) == 3


def test_a_rank_decided_by_a_shape_input():
    proto = rank_from_a_shape_input()
    loaded = tractile.load(proto)
    assert isinstance(loaded, DynamicModel)
    x = np.linspace(-2, 2, 24, dtype=np.float32)
    for shape in ([4, 6], [2, 3, 4], [4, 6], [24]):
        shape = np.array(shape, np.int64)
        got = loaded.run({"x": x, "shape": shape})
        np.testing.assert_allclose(got["s"], run_onnxruntime(proto, [x, shape])[0], rtol=1e-6)
    # the shape's value decides the plan's shapes, which are static in each plan
    assert len(loaded.plans) == 3
    for _, typed in loaded.plans:
        assert all(isinstance(d, int) for d in typed.output_fact(0).shape)


def test_an_input_without_a_shape():
    proto = model([node("Relu", ["x"], ["y"]), node("Transpose", ["y"], ["t"])], [value("x", "f32", None)],
                  [value("t", "f32")])
    loaded = tractile.load(proto)
    assert isinstance(loaded, DynamicModel) and "x" in loaded.reason
    for shape in ((2, 3), (4, 1, 2)):
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        np.testing.assert_array_equal(loaded.run([x])[0], run_onnxruntime(proto, [x])[0])
    assert [s for s, _ in loaded.plans] == ["2,3,f32", "4,1,2,f32"]


def test_values_that_decide_nothing_are_not_part_of_the_signature(monkeypatch):
    proto = mode_switch_of_one_rank()
    loaded = tractile.load(proto)
    assert isinstance(loaded, DynamicModel)
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    for ids in ([0, 4], [1, 1], [3, 2]):  # token-like ids: the same plan
        got = loaded.run([np.array(0, np.int64), x, np.array(ids, np.int64)])
        np.testing.assert_array_equal(got[0], run_onnxruntime(proto, [np.array(0, np.int64), x,
                                                                    np.array(ids, np.int64)])[0])
    assert len(loaded.plans) == 1 and loaded.plans[0][0].startswith("mode=0;")
    # a mode seen with many values stops being part of the signature (this model plans without it)
    monkeypatch.setattr(dynamic, "DECIDING_VALUES", 3)
    for mode in range(1, 9):
        inputs = [np.array(mode, np.int64), x, np.array([2, 0], np.int64)]
        np.testing.assert_array_equal(loaded.run(inputs)[0], run_onnxruntime(proto, inputs)[0])
    assert len(loaded.plans) <= 4, [s for s, _ in loaded.plans]


def test_wrong_inputs_are_named():
    loaded = tractile.load(rank_from_a_flag())
    x = np.zeros((3, 1), np.float32)
    with pytest.raises(RunError, match='input "x": expected N,1,f32 but got datum type float64'):
        loaded.run([np.array(True), x.astype(np.float64)])
    with pytest.raises(RunError, match='input "x": expected rank 2'):
        loaded.run([np.array(True), np.zeros(3, np.float32)])
    with pytest.raises(RunError, match=r'input "x": expected N,1,f32 but got shape \(3, 2\)'):
        loaded.run([np.array(True), np.zeros((3, 2), np.float32)])
    with pytest.raises(RunError, match="missing input"):
        loaded.run({"x": x})
    assert not loaded.plans


def test_static_models_load_as_before():
    proto = model([node("Relu", ["x"], ["y"])], [value("x", "f32", ["N", 3])], [value("y", "f32")])
    assert isinstance(tractile.load(proto), tractile.TypedModel)
    with pytest.raises(RunTimeFactsError):  # a run-time fact is what typing waits for
        tractile.load(rank_from_a_flag(), optimize=False).into_optimized()
    with pytest.raises(tractile.TractileError, match="compile='auto' needs the model typed"):
        tractile.load(rank_from_a_flag(), compile="auto")


def test_the_command_line_runs_it_without_facts(tmp_path, capsys):
    from onnx import save

    from tractile.cli.main import main

    path = tmp_path / "flag.onnx"
    save(rank_from_a_flag(), path)
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    assert "dims   N=1 chosen for the random inputs" in out, out
    assert "typed  for these inputs (cond=" in out and "; 1,1,f32)" in out, out
    assert "output r: 1 float32" in out, out  # x[:, 0] when cond, transposed
    assert main(["compile", str(path), "-o", str(tmp_path / "c")]) == 2
    assert "compiling needs the model typed when loading" in capsys.readouterr().err
