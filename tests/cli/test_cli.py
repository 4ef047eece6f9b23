"""The tractile command line: dump, run, --help."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tractile.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]



def test_dump_json_at_each_stage(demo_model, capsys):
    counts = {}
    for stage in ("load", "analyse", "typed", "declutter", "optimize"):
        assert main(["dump", str(demo_model), "-i", "N,1,28,28,f32", "--pass", stage, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        counts[stage] = len(data["nodes"])
        assert data["outputs"][0]["name"] == "probs"
    assert data["outputs"][0]["fact"] == "N,10,f32"
    ops = [n["op"] for n in data["nodes"]]
    assert "BatchNorm" not in ops and "Dropout" not in ops
    assert counts["optimize"] < counts["load"]
    conv = next(n for n in data["nodes"] if n["name"] == "conv1")
    assert conv["attributes"]["activation"] == "Relu"


def test_dump_table_shows_symbolic_facts(demo_model, capsys):
    assert main(["dump", str(demo_model), "--pass", "analyse"]) == 0
    out = capsys.readouterr().out
    assert "BatchNorm" in out and "N,8,28,28,f32" in out and "value=[N,16,7,7]" in out


def test_run_with_random_inputs_and_assert_output(demo_model, tmp_path, capsys):
    saved = tmp_path / "out.npz"
    assert main(["run", str(demo_model), "-i", "2,1,28,28,f32", "--save-output", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "output probs: 2x10 float32" in out
    probs = np.load(saved)["probs"]
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    assert main(["run", str(demo_model), "-i", "2,1,28,28,f32", "--assert-output", str(saved)]) == 0
    np.savez(tmp_path / "wrong.npz", probs=probs + np.eye(2, 10, dtype=np.float32))
    assert main(["run", str(demo_model), "-i", "2,1,28,28,f32", "--assert-output", str(tmp_path / "wrong.npz")]) == 1
    out = capsys.readouterr().out
    assert "mismatch" in out and "output 'probs'" in out and "largest difference" in out


def test_run_with_given_inputs(demo_model, tmp_path, capsys):
    x = np.zeros((1, 1, 28, 28), np.float32)
    np.savez(tmp_path / "in.npz", image=x)
    assert main(["run", str(demo_model), "--input", str(tmp_path / "in.npz")]) == 0
    assert "input  image: 1x1x28x28 float32" in capsys.readouterr().out


def test_symbols_without_values_get_example_values_and_say_so(demo_model, capsys):
    assert main(["run", str(demo_model)]) == 0
    out = capsys.readouterr().out
    assert "dims   N=1 chosen for the random inputs" in out and "input  image: 1x1x28x28 float32" in out
    assert main(["run", str(demo_model), "--set", "N=3"]) == 0
    out = capsys.readouterr().out
    assert "chosen" not in out and "input  image: 3x1x28x28 float32" in out


def test_errors_are_reported_not_raised(tmp_path, capsys):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"garbage")
    assert main(["dump", str(bad)]) == 2
    assert "ModelFormatError" in capsys.readouterr().err


def test_every_command_has_help(capsys):
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    assert {"dump", "run", "conformance"} <= set(commands)
    for name in commands:
        with pytest.raises(SystemExit) as done:
            main([name, "--help"])
        assert done.value.code == 0
        assert "usage: tractile " + name in capsys.readouterr().out


def test_console_script_runs(demo_model):
    result = subprocess.run([sys.executable, "-m", "tractile.cli.main", "run", str(demo_model), "-i", "1,1,28,28,f32"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "output probs: 1x10" in result.stdout
