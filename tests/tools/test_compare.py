"""``tractile compare``: against onnxruntime and TFLite's reference kernels, per output and per node."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tractile
from tractile.cli.main import main
from tractile.ops.binary import Add
from tractile.tools.compare import Tolerance, comparable_wires, difference

from .conftest import shared_tflite

pytest.importorskip("onnxruntime")


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_demo_model_agrees_with_onnxruntime_node_by_node(demo_model, capsys):
    assert main(["compare", str(demo_model), "--with", "onnxruntime", "-i", "2,1,28,28,f32", "--per-node",
                 "--json"]) == 0
    data = _json(capsys)
    assert data["ok"] and data["divergence"] is None
    (probs,) = data["outputs"]
    assert probs["name"] == "probs" and probs["shape"] == [2, 10] and probs["mismatches"] == 0
    assert probs["max_abs"] < 1e-5
    # BatchNorm folds into conv1 and relu2 fuses into conv2 when optimizing: their inputs c1 and
    # c2 stop existing, so the wires were compared on the decluttered graph
    assert data["per_node_stage"] == "declutter"
    assert "c2" in data["stage_reason"]
    assert data["wires_compared"] == 9


def test_value_names_follow_rewrites(demo_model):
    loaded = tractile.load(demo_model, optimize=False)
    decluttered = loaded.into_typed().declutter()
    optimized = decluttered.optimize()
    names = {"c1", "b1", "r1", "p1", "c2", "r2", "p2", "flat", "dropped", "logits", "probs"}
    at_declutter = {label for _, _, label in comparable_wires(decluttered, names)}
    at_optimize = {label for _, _, label in comparable_wires(optimized, names)}
    # conv1 + BatchNorm compute b1 (c1 no longer exists); Dropout and the flatten chain are gone
    assert "c1" not in at_declutter and {"b1", "r1", "c2", "r2", "logits", "probs"} <= at_declutter
    assert at_optimize == at_declutter - {"b1", "c2"}
    conv2 = next(n for n in optimized.nodes if n.name == "conv2")
    assert optimized.outlet_labels[tractile.OutletId(conv2.id, 0)] == "r2"
    assert optimized.output_names() == ["probs"]


def test_first_divergent_node_is_named(scoped_onnx, capsys, monkeypatch):
    original = Add.eval

    def shifted(self, inputs):
        return [value + np.float32(0.5) for value in original(self, inputs)]

    monkeypatch.setattr(Add, "eval", shifted)
    assert main(["compare", str(scoped_onnx), "-i", "3,8,f32", "--per-node", "--json"]) == 1
    data = _json(capsys)
    assert not data["ok"]
    divergence = data["divergence"]
    assert (divergence["node_name"], divergence["op"], divergence["reference_op"]) == ("block0/add", "Add", "Add")
    assert divergence["wire"] == "block0/sum"
    assert divergence["difference"]["max_abs"] == pytest.approx(0.5)
    assert divergence["difference"]["mismatches"] == 24
    assert divergence["input_facts"] == ["x: 3,8,f32", "block0/layer3/out: 3,8,f32"]
    assert divergence["inputs"] == [{"wire": "block0/layer3/out", "max_abs": 0.0, "ok": True}]
    assert data["per_node_stage"] == "declutter"

    assert main(["compare", str(scoped_onnx), "-i", "3,8,f32", "--per-node"]) == 1
    out = capsys.readouterr().out
    assert "first divergence" in out and "block0/add" in out and "DIFFERS" in out
    assert "input 'block0/layer3/out' agrees with the reference" in out


def test_given_inputs_and_tolerances(scoped_onnx, tmp_path, capsys):
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    np.savez(tmp_path / "in.npz", x=x)
    assert main(["compare", str(scoped_onnx), "--input", str(tmp_path / "in.npz"), "--json"]) == 0
    data = _json(capsys)
    assert data["outputs"][0]["shape"] == [2, 8]
    assert data["per_node_stage"] is None


def test_difference_measures():
    exact = Tolerance(exact=True)
    same = difference("a", np.array([1, 2, 3], np.int8), np.array([1, 2, 3], np.int8), exact)
    assert same.ok and same.max_abs == 0
    off = difference("a", np.array([1, 2, 4], np.int8), np.array([1, 2, 3], np.int8), Tolerance(atol=1.0, exact=True))
    assert not off.ok and off.mismatches == 1 and off.max_abs == 1 and off.worst["index"] == [2]
    assert difference("a", np.array([1, 2, 4], np.int8), np.array([1, 2, 3], np.int8), Tolerance(atol=1.0)).ok
    floats = difference("f", np.array([1.0, np.nan, 0.0]), np.array([1.00001, np.nan, 0.0]), exact)
    assert floats.ok and floats.max_rel == pytest.approx(1e-5, rel=1e-3)
    zero = difference("z", np.array([0.5]), np.array([0.0]), Tolerance())
    assert not zero.ok and zero.max_rel == np.inf
    shape = difference("s", np.zeros((2, 3)), np.zeros((3, 2)), Tolerance())
    assert not shape.ok and "reference's is (3, 2)" in shape.problem


def test_unknown_engine_and_broken_reference(demo_model, tmp_path, capsys):
    from tractile.tools.reference import run_reference

    with pytest.raises(tractile.TractileError, match="unknown reference engine"):
        run_reference("caffe", str(demo_model), {})
    with pytest.raises(tractile.TractileError, match="TensorFlow models only .* --with onnxruntime"):
        run_reference("tensorflow", str(demo_model), {})
    disguised = tmp_path / "model.tflite"
    disguised.write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes(56))
    with pytest.raises(tractile.TractileError, match="the TFLite interpreter cannot load"):
        run_reference("tflite", str(disguised), {})


def test_quantized_tflite_is_bit_exact_node_by_node(capsys):
    path = shared_tflite("micro_speech_quantized.tflite")
    assert main(["compare", str(path), "--with", "tflite", "--exact", "--per-node", "--json"]) == 0
    data = _json(capsys)
    assert data["outputs"][0]["name"] == "labels_softmax" and data["outputs"][0]["max_abs"] == 0
    assert data["per_node_stage"] == "optimize" and data["wires_compared"] == 4


def test_tflite_quirk_is_repaired_for_the_reference(tmp_path, capsys):
    path = shared_tflite("person_detect.tflite")
    person = np.load(shared_tflite("testdata/person_detect_person.npy"))
    np.save(tmp_path / "person.npy", person.reshape(1, 96, 96, 1).astype(np.int8))
    assert main(["compare", str(path), "--input", str(tmp_path / "person.npy"), "--exact", "--json"]) == 0
    data = _json(capsys)
    assert data["outputs"][0]["max_abs"] == 0
    assert any("14 1-d tensor(s)" in note for note in data["notes"])
