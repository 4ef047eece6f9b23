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
    from tractile.model import TypedModel
    from tractile.ops.base import Op
    from tractile.fact import TypedFact
    from tractile.datum import DatumType

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

