"""Everyday mistakes end in one line (exit status 2, no traceback; --debug shows it), and a
closed pipe ends the output quietly."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import tractile
from tractile.cli.main import main


def one_line_error(capsys, argv, *fragments):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err
    return err


def test_missing_files_and_folders(demo_model, tmp_path, capsys):
    one_line_error(capsys, ["run", str(demo_model), "-i", "1,1,28,28,f32", "--input", str(tmp_path / "none.npz")],
                   "none.npz")
    one_line_error(capsys, ["run", str(demo_model), "-i", "1,1,28,28,f32", "--save-output",
                            str(tmp_path / "no" / "such" / "out.npz")], "out.npz")
    one_line_error(capsys, ["dump", str(tmp_path)], "is a folder")


def test_debug_shows_the_traceback(demo_model, tmp_path):
    with pytest.raises(tractile.TractileError):
        main(["--debug", "dump", str(tmp_path)])


def test_a_missing_optional_package_says_which_extra(demo_model, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    err = one_line_error(capsys, ["profile", str(demo_model), "-i", "1,1,28,28,f32", "--plot", "p.png"],
                         "matplotlib")
    assert "tractile[viz]" in err or "pip install" in err


def test_a_closed_pipe_ends_quietly(demo_model):
    command = f"{sys.executable} -m tractile.cli.main dump {demo_model} --json | head -c 100 > /dev/null"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def test_checked_runs_name_the_failing_node_as_plain_runs_do():
    from tractile.datum import DatumType
    from tractile.fact import TypedFact
    from tractile.model import TypedModel
    from tractile.ops.base import Op

    class Broken(Op):
        name = "Broken"

        def output_facts(self, inputs):
            return [inputs[0]]

        def eval(self, inputs):
            return [inputs[0][[99]]]  # IndexError on bad data

    model = TypedModel()
    x = model.add_source("x", TypedFact(DatumType.F32, (3,)))
    model.outputs = model.wire_node("broken_node", Broken(), [x])
    for checked in (False, True):
        with pytest.raises(tractile.RunError, match=r'"broken_node".*IndexError'):
            model.plan().state(check_facts=checked).run([np.zeros(3, np.float32)])



def kws_model(tmp_path):
    from onnx import TensorProto, helper, save

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "kws",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "T", 40])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "kws.onnx")
    return str(tmp_path / "kws.onnx")


def test_every_unbound_symbol_is_named_with_an_example_from_the_model(tmp_path, capsys):
    path = kws_model(tmp_path)
    # run picks the example and says so; profile, which times one shape, asks for it
    assert main(["run", path]) == 0
    assert "dims   B=1, T=1 chosen for the random inputs" in capsys.readouterr().out
    one_line_error(capsys, ["profile", path], "B, T need values", "-i x=1,100,40,f32", "--set B=1 --set T=100")
    one_line_error(capsys, ["profile", path, "--set", "B=2"], "T need values", "-i x=2,100,40,f32")


def test_a_fact_contradicting_the_declared_shape_names_both(tmp_path, capsys):
    path = kws_model(tmp_path)
    one_line_error(capsys, ["run", path, "-i", "1,40,T,f32"], "1,40,T", "B,T,40")
    with pytest.raises(tractile.TractileError, match="T is axis 1, given at axis 2"):
        tractile.load(path, inputs=["1,40,T,f32"])
    with pytest.raises(tractile.TractileError, match="2 dims given, 3 declared"):
        tractile.load(path, inputs=["1,40,f32"])
    assert tractile.load(path, inputs=["1,T,40,f32"]).input_facts[0].shape[2] == 40


@pytest.mark.parametrize("spec", ["N,1,28,28,flt", "1,T,f23", "1,2,i9"])
def test_a_misspelt_datum_type_is_a_parse_error(spec):
    with pytest.raises(tractile.TractileError, match="is not a datum type"):
        tractile.parse_fact(spec)
    assert str(tractile.parse_fact("1,batch")) == "1,batch,?"


def test_input_files_give_the_input_facts_when_no_fact_is_given(demo_model, tmp_path, capsys):
    import argparse

    from tractile.cli.common import load_at_stage

    x = np.zeros((3, 1, 28, 28), np.float32)
    for path, saver in ((tmp_path / "x.npz", lambda p: np.savez(p, x)), (tmp_path / "x.npy", lambda p: np.save(p, x))):
        saver(path)
        args = argparse.Namespace(model=str(demo_model), input_fact=[], output_fact=[], input=str(path))
        model = load_at_stage(args, "typed")
        assert [int(d) for d in model.input_facts[0].shape] == [3, 1, 28, 28]
        assert main(["run", str(demo_model), "--input", str(path)]) == 0
        assert "output probs: 3x10 float32" in capsys.readouterr().out
    args = argparse.Namespace(model=str(demo_model), input_fact=["N,1,28,28,f32"], output_fact=[],
                              input=str(tmp_path / "x.npz"))
    assert str(load_at_stage(args, "typed").input_facts[0].shape[0]) == "N"
