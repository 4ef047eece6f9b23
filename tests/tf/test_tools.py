"""The tools on TensorFlow models: dump, run, profile, the graph page and compare --with tensorflow,
on a Keras CNN with name scopes saved as a frozen .pb and as a SavedModel folder."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

import tractile
from tractile.cli.main import main

from .oracle import assert_close, tensorflow, write_frozen

INPUT_SHAPE = (8, 8, 3)


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    """(keras model, frozen .pb, SavedModel folder, the .pb's GraphDef): layers named after blocks,
    non-zero biases and batch-norm statistics so that a misplaced value shows."""
    tf = tensorflow()
    tf.keras.utils.set_random_seed(5)
    inputs = tf.keras.Input(INPUT_SHAPE)
    x = tf.keras.layers.Conv2D(6, 3, padding="same", activation="relu", bias_initializer="random_normal",
                               name="block1_conv")(inputs)
    x = tf.keras.layers.BatchNormalization(name="block1_norm")(x)
    x = tf.keras.layers.MaxPooling2D(2, name="block1_pool")(x)
    x = tf.keras.layers.DepthwiseConv2D(3, bias_initializer="random_normal", name="block2_depthwise")(x)
    x = tf.keras.layers.Conv2D(4, 1, activation="relu6", bias_initializer="random_normal", name="block2_conv")(x)
    x = tf.keras.layers.Flatten(name="head_flatten")(x)
    outputs = tf.keras.layers.Dense(5, bias_initializer="random_normal", name="head_dense")(x)
    model = tf.keras.Model(inputs, outputs, name="tiny")
    norm = model.get_layer("block1_norm")
    rng = np.random.default_rng(0)
    norm.set_weights([w + rng.uniform(0.1, 1, w.shape).astype(np.float32) for w in norm.get_weights()])
    folder = tmp_path_factory.mktemp("tf_tools")
    write_frozen(folder / "cnn.pb", lambda x: model(x), tf.TensorSpec((None,) + INPUT_SHAPE, tf.float32))
    tf.saved_model.save(model, str(folder / "saved"))
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString((folder / "cnn.pb").read_bytes())
    return model, folder / "cnn.pb", folder / "saved", graph_def


@pytest.fixture(scope="module")
def image(cnn, tmp_path_factory):
    x = np.random.default_rng(1).standard_normal((2,) + INPUT_SHAPE).astype(np.float32)
    path = tmp_path_factory.mktemp("tf_tools_input") / "x.npy"
    np.save(path, x)
    return x, path


def both(cnn):
    return [("frozen", cnn[1]), ("saved", cnn[2])]


def compute_nodes(graph_def) -> dict[str, str]:
    """TensorFlow's nodes that compute something (name -> op), as the frozen graph has them."""
    return {n.name: n.op for n in graph_def.node
            if n.op in ("Conv2D", "DepthwiseConv2dNative", "MatMul", "MaxPool", "Relu", "Relu6", "BiasAdd")}


def in_scope(layer: str, name: str) -> str:
    """A pattern for TensorFlow's name of node ``name`` of Keras layer ``layer`` (Keras numbers
    scopes it opens again: ``block1_conv_1``)."""
    return rf"/{layer}(_\d+)?/{name}$"


def test_dump_names_the_tensorflow_nodes(cnn, capsys):
    _, frozen, saved, graph_def = cnn
    for path in (frozen, saved):
        assert main(["dump", str(path), "-i", "1,8,8,3,f32", "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["outputs"][0]["fact"] == "1,5,f32"
        names = [node["name"] for node in data["nodes"]]
        for layer, name in (("block1_conv", "convolution"), ("block2_depthwise", "depthwise"),
                            ("head_dense", "MatMul")):
            assert any(re.search(in_scope(layer, name), n) for n in names), (path.name, layer, names)


def test_run_matches_tensorflow_on_a_file_and_a_folder(cnn, image, tmp_path, capsys):
    model, frozen, saved, _ = cnn
    x, x_path = image
    for label, path in both(cnn):
        out = tmp_path / f"{label}.npz"
        assert main(["run", str(path), "--input", str(x_path), "--save-output", str(out)]) == 0
        assert "2x5 float32" in capsys.readouterr().out
        (value,) = np.load(out).values()
        assert_close(value, model(x).numpy(), what=label)


def test_profile_rows_are_the_tensorflow_nodes(cnn, capsys):
    _, frozen, saved, graph_def = cnn
    convolutions = [n for n, op in compute_nodes(graph_def).items() if op in ("Conv2D", "DepthwiseConv2dNative")]
    for path in (frozen, saved):
        assert main(["profile", str(path), "-i", "1,8,8,3,f32", "--json", "--warmup", "1", "--iters", "2",
                     "--top", "0"]) == 0
        data = json.loads(capsys.readouterr().out)
        rows = {row["name"]: row for row in data["nodes"]}
        for name in convolutions:
            conv = next(row for row_name, row in rows.items() if row_name.endswith(f"{name}.conv"))
            assert conv["op"] == "Conv" and conv["flops"] > 0
        assert any(re.search(in_scope("head_dense", "MatMul"), row["name"]) and row["op"] == "MatMul"
                   for row in data["nodes"])


def page_data(path) -> dict:
    found = re.search(r'<script id="graph-data" type="application/json">(.*?)</script>', path.read_text(), re.S)
    return json.loads(found.group(1).replace("<\\/", "</"))


def test_graph_page_groups_are_the_name_scopes(cnn, tmp_path, capsys):
    _, frozen, saved, graph_def = cnn
    layers = {name.split("/")[-2] for name in compute_nodes(graph_def)}
    assert {"block1_conv", "block2_depthwise", "block2_conv", "head_dense"} <= {re.sub(r"_\d+$", "", n)
                                                                                   for n in layers}
    for label, path in both(cnn):
        page = tmp_path / f"{label}.html"
        assert main(["dump", str(path), "-i", "1,8,8,3,f32", "--html", str(page)]) == 0
        assert f"wrote {page}" in capsys.readouterr().out
        data = page_data(page)
        groups = {g["id"]: g for g in data["groups"]}
        grouped = set()
        for layer in layers:
            members = [n for n in data["nodes"] if f"/{layer}/" in n["name"]]
            assert members, (label, layer)
            if len(members) > 1:  # a scope of one node is drawn as that node
                # every node of the scope, helper nodes included, is drawn inside the layer's group
                assert {groups[n["group"]]["label"] for n in members} == {layer}, (label, layer, members)
                assert groups[members[0]["group"]]["path"].endswith(layer)
                grouped.add(re.sub(r"_\d+$", "", layer))
        assert {"block1_conv", "block2_depthwise", "block2_conv"} <= grouped


def compare_json(args: list[str], capsys) -> tuple[int, dict]:
    status = main(["compare", *args, "--json"])
    return status, json.loads(capsys.readouterr().out)


def test_compare_with_tensorflow_node_by_node(cnn, image, capsys):
    _, frozen, saved, graph_def = cnn
    for label, path in both(cnn):
        status, data = compare_json([str(path), "--input", str(image[1]), "--per-node"], capsys)
        assert data["engine"] == "tensorflow", label
        assert status == 0 and data["ok"] and data["divergence"] is None, (label, data)
        assert data["outputs"][0]["max_abs"] < 1e-4
        # every convolution, pooling, activation and product TensorFlow computed has its counterpart
        assert data["wires_compared"] >= len(compute_nodes(graph_def)) - 2, (label, data["wires_compared"])


def test_first_diverging_node_is_named(cnn, image, monkeypatch):
    from tractile.ops.pool import MaxPool
    from tractile.tools.compare import compare_with_reference

    _, frozen, _, _ = cnn
    original = MaxPool.eval
    monkeypatch.setattr(MaxPool, "eval", lambda self, inputs: [y + 0.25 for y in original(self, inputs)])
    decluttered = tractile.load(frozen, inputs=["2,8,8,3,f32"], optimize=False).analyse().into_typed().declutter()
    report = compare_with_reference(decluttered, str(frozen), "tensorflow", [image[0]], per_node=True)
    assert not report.ok
    divergence = report.divergence
    assert divergence is not None and re.search(in_scope("block1_pool", "MaxPool2d"), divergence.node_name)
    assert divergence.reference_op == "MaxPool"
    assert divergence.difference.max_abs == pytest.approx(0.25, rel=1e-5)
    assert all(item["ok"] for item in divergence.inputs)


def test_reference_engines_refuse_the_other_formats(cnn, demo_model, capsys):
    _, frozen, saved, _ = cnn
    assert main(["compare", str(demo_model), "--with", "tensorflow"]) == 2
    assert "tensorflow runs TensorFlow models only" in capsys.readouterr().err
    for path in (frozen, saved):
        assert main(["compare", str(path), "--with", "onnxruntime"]) == 2
        assert "is a TensorFlow model: use --with tensorflow" in capsys.readouterr().err


def test_missing_tensorflow_is_a_clear_error(monkeypatch):
    import sys

    from tractile.tools import reference_tensorflow

    monkeypatch.setitem(sys.modules, "tensorflow", None)
    with pytest.raises(tractile.TractileError, match="pip install tensorflow-cpu"):
        reference_tensorflow.run_tensorflow("model.pb", {}, False)


def v1_control_flow_graph(tf):
    """A TF 1 graph: a while loop then a conditional (control flow v1: Enter/Merge/Switch/Exit)."""
    from tensorflow.python.ops import control_flow_util

    was = control_flow_util.ENABLE_CONTROL_FLOW_V2
    control_flow_util.ENABLE_CONTROL_FLOW_V2 = False
    try:
        with tf.Graph().as_default() as graph:
            x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
            start = tf.nn.relu(x * 2.0, name="start")
            _, looped = tf.compat.v1.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, a * 0.5 + tf.sin(a)),
                                                [tf.constant(0), start], name="loop")
            chosen = tf.compat.v1.cond(tf.reduce_sum(looped) > 0, lambda: looped * 3.0, lambda: looped - 1.0,
                                       name="branch")
            tf.identity(tf.tanh(chosen) + 1.0, name="out")
            return graph.as_graph_def()
    finally:
        control_flow_util.ENABLE_CONTROL_FLOW_V2 = was


def test_compare_a_graph_with_v1_control_flow(tmp_path, capsys):
    tf = tensorflow()
    path = tmp_path / "v1.pb"
    graph_def = v1_control_flow_graph(tf)
    assert {"Enter", "Merge", "Switch", "Exit"} <= {node.op for node in graph_def.node}
    path.write_bytes(graph_def.SerializeToString())
    # the outputs are what the graph computes, not the predicate raising the conditional leaves unconsumed
    assert tractile.load(path).output_names() == ["loop/Exit", "out"]
    status, data = compare_json([str(path), "--per-node"], capsys)
    assert status == 0 and data["ok"] and not data["unmatched_outputs"], data
    assert [item["name"] for item in data["outputs"]] == ["loop/Exit", "out"]
    assert data["wires_compared"] >= 5  # the values before the loop and after the conditional
