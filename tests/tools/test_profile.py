"""``tractile profile``: tables, JSON, the op-type plot and the progress callback."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import tractile
from tractile.cli.main import main

from .conftest import shared_tflite


def test_profile_json_accounts_for_every_node(demo_model, capsys):
    assert main(["profile", str(demo_model), "-i", "2,1,28,28,f32", "--warmup", "1", "--iters", "4", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    model = tractile.load(demo_model, inputs=["2,1,28,28,f32"])
    computed = [n for n in model.nodes if n.op.name not in ("Source", "Const")]
    assert sorted(n["id"] for n in data["nodes"]) == sorted(n.id for n in computed)
    assert (data["iterations"], data["warmup"]) == (4, 1)
    assert all(n["real"] > 0 for n in data["nodes"])
    assert sum(n["share"] for n in data["nodes"]) == pytest.approx(1.0)
    assert data["total"]["real"] == pytest.approx(sum(n["real"] for n in data["nodes"]))
    assert sum(op["count"] for op in data["ops"]) == len(data["nodes"])
    conv1 = next(n for n in data["nodes"] if n["name"] == "conv1")
    # 2 images x 8 channels x 28x28 outputs x 9 taps, a multiply and an add each
    assert conv1["flops"] >= 2 * 8 * 28 * 28 * 9 * 2
    assert conv1["gflops"] == pytest.approx(conv1["flops"] / conv1["real"] / 1e9)
    assert conv1["bytes"] == 4 * (2 * 28 * 28 + 8 * 9 + 8 + 2 * 8 * 28 * 28)
    assert conv1["attributes"]["activation"] == "Relu"


def test_profile_tables(demo_model, capsys):
    assert main(["profile", str(demo_model), "-i", "1,1,28,28,f32", "--iters", "3", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "2 most time-consuming of 7 nodes" in out
    assert "total per iteration: real" in out and "GFLOP/s overall" in out
    table = out.split("time per op type")[1]
    for op in ("Conv", "MaxPool", "MatMul", "Softmax", "Reshape"):
        assert op in table


def test_progress_callback_counts_warmup_and_iterations(demo_model):
    model = tractile.load(demo_model, inputs=["1,1,28,28,f32"])
    seen = []
    report = model.profile([np.zeros((1, 1, 28, 28), np.float32)], warmup=2, iterations=3,
                           progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]
    assert report.iterations == 3 and report.warmup == 2


def test_plot_draws_op_shares(demo_model, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from tractile.tools.plot import plot_op_shares

    model = tractile.load(demo_model, inputs=["1,1,28,28,f32"])
    report = model.profile([np.zeros((1, 1, 28, 28), np.float32)], warmup=0, iterations=2)
    rows = plot_op_shares(report, str(tmp_path / "direct.png"))
    assert [op for op, _ in rows] == [op for op, _, _ in report.by_op()]
    assert sum(share for _, share in rows) == pytest.approx(1.0)
    target = tmp_path / "shares.png"
    assert main(["profile", str(demo_model), "-i", "1,1,28,28,f32", "--iters", "2", "--plot", str(target)]) == 0
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot written to {target}" in capsys.readouterr().out


def test_plot_without_matplotlib_is_a_clear_error(demo_model, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code = main(["profile", str(demo_model), "-i", "1,1,28,28,f32", "--iters", "1", "--plot", str(tmp_path / "p.png")])
    assert code == 2
    assert "tractile[viz]" in capsys.readouterr().err


def test_bad_iteration_count(demo_model, capsys):
    assert main(["profile", str(demo_model), "-i", "1,1,28,28,f32", "--iters", "0"]) == 2
    assert "--iters must be at least 1" in capsys.readouterr().err


def test_profile_tflite_model(capsys):
    path = shared_tflite("micro_speech_quantized.tflite")
    assert main(["profile", str(path), "--iters", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    ops = {n["op"] for n in data["nodes"]}
    assert any("Conv" in op for op in ops) and any("MatMul" in op for op in ops)
    assert all(n["real"] > 0 for n in data["nodes"])
