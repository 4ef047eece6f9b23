"""The graph page's data: groups by scope, hidden constants, edge facts, Cassowary layouts."""
from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest

import tractile
from tractile.cli.main import main
from tractile.tools.html_graph import graph_page_data, render_html, write_html
from tractile.tools.layout import GAP, Item, assign_ranks, layered_layout

from .big_graph import big_scoped_model
from .conftest import shared_tflite

pytest.importorskip("kiwisolver")


def _page_data(html: str) -> dict:
    found = re.search(r'<script id="graph-data" type="application/json">(.*?)</script>', html, re.S)
    return json.loads(found.group(1).replace("<\\/", "</"))


def test_constants_become_summaries_and_edges_carry_facts(demo_model):
    model = tractile.load(demo_model, inputs={"image": "N,1,28,28,f32"})
    data = graph_page_data(model, "demo", "optimize")
    ops = [n["op"] for n in data["nodes"]]
    assert "Const" not in ops and ops.count("Conv") == 2
    conv1 = next(n for n in data["nodes"] if n["name"] == "conv1")
    weight = conv1["inputs"][1]
    assert weight["fact"].startswith("8,1,3,3,f32") and weight["const"].startswith("8x1x3x3 float32, min ")
    assert conv1["inputs"][0] == {"fact": "N,1,28,28,f32", "wire": "image", "from": 0}
    assert conv1["attrs"]["activation"] == "Relu"
    facts = {(model.nodes[e[0]].name, model.nodes[e[1]].name): e[2] for e in data["edges"]}
    assert facts[("conv1", "pool1")] == "N,8,28,28,f32"
    assert facts[("pool2", "flatten")] == "N,16,7,7,f32"
    assert [o["name"] for o in data["outputs"]] == ["probs"]


def test_groups_follow_name_scopes(scoped_onnx):
    model = tractile.load(scoped_onnx, inputs=["N,8,f32"], optimize=False).into_typed()
    data = graph_page_data(model)
    paths = {g["path"]: g for g in data["groups"]}
    assert {"block0", "block1", "block2"} <= set(paths) and "head" not in paths  # one node: no group
    assert paths["block0"]["depth"] == 1 and paths["block0/layer2"]["depth"] == 2
    assert paths["block0"]["count"] == 9 and paths["block0/layer2"]["count"] == 2
    relu = next(n for n in data["nodes"] if n["name"] == "block0/layer2/relu")
    assert relu["label"] == "relu" and relu["group"] == paths["block0/layer2"]["id"]
    # x feeds block0's first matmul and its residual add: both edges meet at the root
    x = next(n for n in data["nodes"] if n["name"] == "x")
    into_block0 = [e for e in data["edges"] if e[0] == x["id"]]
    assert {(e[3], e[4], e[5]) for e in into_block0} == {(0, f"n{x['id']}", f"g{paths['block0']['id']}")}


def test_constant_chains_sit_above_their_consumer():
    from tractile.ops.activations import Relu
    from tractile.ops.binary import Add

    model = big_scoped_model(blocks=2, layers=2)
    weight = model.wire_node("wrelu", Relu(), [model.add_const("w", np.ones((1, 4), np.float32))])[0]
    model.outputs = [model.wire_node("final", Add(), [model.outputs[0], weight])[0]]
    data = graph_page_data(model)
    rows = data["groups"][0]["layout"]["rows"]
    row_of = {key: index for index, row in enumerate(rows) for key in row}
    key = {n["name"]: f"n{n['id']}" for n in data["nodes"]}
    # x, block0, block1, final: wrelu (computed from a constant only) shares block1's row
    assert [row_of[key["x"]], row_of[key["final"]], row_of[key["wrelu"]]] == [0, 3, 2]


def test_shared_outer_scope_is_dropped():
    model = big_scoped_model(blocks=2, layers=2)
    for node in model.nodes:
        node.name = f"model/{node.name}"
    data = graph_page_data(model)
    assert sorted(g["path"] for g in data["groups"] if g["depth"] == 1) == ["block0", "block1"]


def test_layout_keeps_rows_apart_and_edges_downwards():
    model = big_scoped_model(blocks=30, layers=3)
    data = graph_page_data(model)
    widths = {f"n{n['id']}": n["w"] for n in data["nodes"]}
    widths.update({f"g{g['id']}": g["w"] for g in data["groups"]})
    for group in data["groups"]:
        layout = group["layout"]
        for row in layout["rows"]:
            for left, right in zip(row, row[1:]):
                need = (widths.get(left, 14.0) + widths.get(right, 14.0)) / 2 + GAP
                assert layout["x"][right] - layout["x"][left] >= need - 0.5
    root = data["groups"][0]["layout"]
    row_of = {key: index for index, row in enumerate(root["rows"]) for key in row}
    for edge in data["edges"]:
        if edge[3] == 0:
            assert row_of[edge[5]] > row_of[edge[4]]


def test_ranks_by_evaluation_order():
    items = [Item("a", 50, 0), Item("b", 50, 1), Item("c", 50, 2), Item("w", 50, 3), Item("d", 50, 4)]
    edges = [("a", "b"), ("b", "c"), ("a", "d"), ("c", "d"), ("w", "d"), ("d", "a")]
    # w depends on no input: it sinks to just above its consumer unless it is an anchor
    assert assign_ranks(items, edges, anchors={"a"}) == {"a": 0, "b": 1, "c": 2, "w": 2, "d": 3}
    assert assign_ranks(items, edges) == {"a": 0, "b": 1, "c": 2, "w": 0, "d": 3}
    layout = layered_layout(items, edges, anchors={"a"})
    assert layout.rank == {"a": 0, "b": 1, "c": 2, "w": 2, "d": 3}
    assert set(layout.chains["a"]) == {1, 2}  # a's edge to d passes rows 1 and 2 through placeholders
    assert "d" in layout.lanes  # the edge going up runs along a lane


def test_page_is_self_contained(demo_model, tmp_path, capsys):
    target = tmp_path / "graph.html"
    assert main(["dump", str(demo_model), "-i", "N,1,28,28,f32", "--html", str(target)]) == 0
    out = capsys.readouterr().out
    html = target.read_text()
    assert "<script src" not in html and "<link" not in html and "@import" not in html
    assert re.findall(r"https?://[^\s\"'<>]+", html) == ["http://www.w3.org/2000/svg"]  # a namespace name
    data = _page_data(html)
    assert data["stage"] == "optimize"
    assert f"wrote {target}: {len(data['nodes'])} nodes, {len(data['edges'])} edges, 0 groups" in out
    assert {"Conv", "MaxPool", "MatMul", "Softmax", "Flatten"} <= {n["op"] for n in data["nodes"]}


def test_names_are_escaped(tmp_path):
    model = big_scoped_model(blocks=1, layers=1)
    model.nodes[-1].name = "</script><b>odd & bold</b>"
    html = render_html(graph_page_data(model, title="<title>"))
    assert html.count("</script>") == 2  # the data and the script blocks, nothing from names
    assert "&lt;title&gt; — tractile" in html
    assert any(n["name"] == "</script><b>odd & bold</b>" for n in _page_data(html)["nodes"])


def test_tflite_model_page(tmp_path):
    path = shared_tflite("person_detect.tflite")
    target = tmp_path / "person.html"
    assert main(["dump", str(path), "--html", str(target)]) == 0
    data = _page_data(target.read_text())
    assert any(n["op"] == "Conv" for n in data["nodes"])  # TFLite's CONV_2D is the core Conv
    assert any(g["path"] == "MobilenetV1" for g in data["groups"])
    assert any("q(s=" in e[2] for e in data["edges"])  # quantized facts on the edges


def test_missing_kiwisolver_is_a_clear_error(demo_model, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "kiwisolver", None)
    assert main(["dump", str(demo_model), "-i", "1,1,28,28,f32", "--html", str(tmp_path / "g.html")]) == 2
    assert "tractile[viz]" in capsys.readouterr().err


def test_big_graph_page_size(tmp_path):
    model = big_scoped_model()
    summary = write_html(model, tmp_path / "big.html")
    assert summary.nodes > 3000 and summary.groups == 40 + 40 * 26


def test_page_of_a_model_as_loaded(demo_model, tmp_path):
    target = tmp_path / "loaded.html"
    assert main(["dump", str(demo_model), "--pass", "load", "--html", str(target)]) == 0
    data = _page_data(target.read_text())
    ops = {n["op"] for n in data["nodes"]}
    assert {"BatchNorm", "Dropout", "Gemm"} & ops  # nothing folded yet
    assert data["kind"] == "InferenceModel" and data["stage"] == "load"
    image = next(n for n in data["nodes"] if n["name"] == "image")
    conv1 = next(n for n in data["nodes"] if n["name"] == "conv1")
    assert image["outputs"][0]["fact"] == "N,1,28,28,f32"
    assert conv1["outputs"][0]["fact"] == "..,?"  # not analysed yet: nothing known
