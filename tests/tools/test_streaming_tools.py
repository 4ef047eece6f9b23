"""profile, compare and dump on the streaming (pulsed) form of a model."""
from __future__ import annotations

import json
import re

import pytest

from tractile.cli.main import main

pytest.importorskip("onnxruntime")


def test_compare_streamed_outputs_with_onnxruntime(streaming_onnx, capsys):
    assert main(["compare", str(streaming_onnx), "--pulse", "4", "--set", "T=23", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] and data["stream"] == {"symbol": "T", "pulse": 4, "delays": [1]}
    (y,) = data["outputs"]
    assert y["shape"] == [1, 3, 23] and y["max_abs"] < 1e-5
    assert main(["compare", str(streaming_onnx), "--pulse", "T=5", "--set", "T=23"]) == 0
    assert "tractile streaming T by 5 frames (delay 1 dropped)" in capsys.readouterr().out.replace("\n", " ")


def test_compare_streaming_refuses_per_node(streaming_onnx, capsys):
    assert main(["compare", str(streaming_onnx), "--pulse", "4", "--set", "T=8", "--per-node"]) == 2
    assert "without --pulse" in capsys.readouterr().err
    assert main(["compare", str(streaming_onnx), "--pulse", "0"]) == 2
    assert "--pulse expects FRAMES" in capsys.readouterr().err


def test_profile_pulsed_model(streaming_onnx, capsys):
    assert main(["profile", str(streaming_onnx), "--pulse", "T=4", "--iters", "3", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["stage"] == "pulsed"
    ops = {n["name"]: n["op"] for n in data["nodes"]}
    assert ops["enc/conv.delay"] == "Delay" and ops["enc/conv"] == "Conv"
    conv = next(n for n in data["nodes"] if n["name"] == "enc/conv")
    # one chunk: 4 frames of 6 outputs from 4 channels x 3 taps, plus the bias add
    assert conv["flops"] == pytest.approx(2 * 4 * 6 * 4 * 3, rel=0.1)


def test_dump_pulsed_graph_page(streaming_onnx, tmp_path, capsys):
    target = tmp_path / "pulsed.html"
    assert main(["dump", str(streaming_onnx), "--pulse", "4", "--html", str(target)]) == 0
    html = target.read_text()
    data = json.loads(re.search(r'type="application/json">(.*?)</script>', html, re.S).group(1))
    assert data["stage"] == "optimize, pulsed 4"
    assert {"Delay", "PulseMask", "Conv"} <= {n["op"] for n in data["nodes"]}
    assert [g["path"] for g in data["groups"]] == ["", "enc"]
    x = next(n for n in data["nodes"] if n["name"] == "x")
    assert x["outputs"][0]["fact"] == "1,4,4,f32"  # one chunk of the stream
