"""Specialising a model by input values (``load(values=...)``, ``with_input_values``, ``--value``)."""
import json

import numpy as np
import pytest
from onnx import helper

import tractile
from tractile import TractileError
from tractile.cli.main import main

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value


def mode_switch():
    """``y = x * 2 if mode == 1 else x[:, 0]`` (the branches differ in rank), then ``+ 1``."""
    then_branch = helper.make_graph([node("Mul", ["x", "two"], ["t"])], "then", [], [value("t", "f32", None)])
    else_branch = helper.make_graph([node("Squeeze", ["x", "one"], ["e"])], "else", [], [value("e", "f32", None)])
    return model([node("Equal", ["mode", "one_scalar"], ["cond"]),
                  node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch),
                  node("Add", ["y", "plus"], ["z"])],
                 [value("x", "f32", [3, 1]), value("mode", "i64", [])], [value("z", "f32")],
                 {"two": np.float32(2), "one": np.array([1], np.int64), "one_scalar": np.int64(1),
                  "plus": np.float32(1)})


@pytest.mark.parametrize("mode", [1, 0])
def test_load_with_a_value_folds_the_if_and_types_the_rank(mode):
    proto = mode_switch()
    loaded = tractile.load(proto, values={"mode": mode})
    assert loaded.input_names() == ["x"]
    assert not any(n.op.name == "If" for n in loaded.nodes)
    (fact,) = loaded.output_facts
    x = np.array([[1], [2], [3]], np.float32)
    expected = run_onnxruntime(proto, [x, np.array(mode, np.int64)])[0]
    assert fact.has_rank and fact.shape == expected.shape
    np.testing.assert_array_equal(loaded.run([x])[0], expected)


def test_without_the_value_the_rank_is_known_only_at_run_time():
    typed = tractile.load(mode_switch())
    assert not typed.output_fact(0).has_rank
    specialised = typed.with_input_values({"mode": 0})
    assert specialised.output_fact(0).shape == (3,) and typed.input_names() == ["x", "mode"]
    assert not any(n.op.name == "If" for n in specialised.nodes)


def test_values_must_fit_the_input():
    with pytest.raises(TractileError, match='input "mode".*without loss'):
        tractile.load(mode_switch(), values={"mode": 1.5})
    with pytest.raises(TractileError, match='input "x"'):
        tractile.load(mode_switch(), values={"x": np.zeros((2, 2), np.float32)})
    with pytest.raises(TractileError, match="no input named 'rate'"):
        tractile.load(mode_switch(), values={"rate": 1})


def test_cli_value_option(tmp_path, capsys):
    path = tmp_path / "switch.onnx"
    path.write_bytes(mode_switch().SerializeToString())
    assert main(["dump", str(path), "--value", "mode=0", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [i["name"] for i in data["inputs"]] == ["x"] and data["outputs"][0]["fact"] == "3,f32"
    assert "If" not in [n["op"] for n in data["nodes"]]
    assert main(["compare", str(path), "--value", "mode=1"]) == 0  # the reference gets mode too
    assert "agrees" in capsys.readouterr().out
    assert main(["run", str(path), "--value", "mode"]) != 0
    assert "--value expects NAME=V" in capsys.readouterr().err
