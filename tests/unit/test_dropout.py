"""Dropout with run-time ratio and training_mode inputs (opset 12 and later)."""
import numpy as np
import pytest
from onnx import numpy_helper

import tractile
from tractile.errors import AnalysisError

from .onnx_builder import model, node, value


def dropout_model(ratio_shape=()):
    return model([node("Dropout", ["x", "r", "t"], ["y", "mask"], seed=3)],
                 [value("x", "f32", [4, 5]), value("r", "f32", list(ratio_shape)), value("t", "bool", [])],
                 [value("y"), value("mask", "bool")], opset=13)


def test_training_keeps_with_a_seeded_draw_and_rescales():
    x = np.arange(20, dtype=np.float32).reshape(4, 5) + 1
    ratio = np.asarray(0.25, np.float32)
    y, mask = tractile.load(dropout_model()).run([x, ratio, np.asarray(True)])
    expected_mask = np.random.RandomState(3).uniform(0, 1, (4, 5)) >= 0.25
    np.testing.assert_array_equal(mask, expected_mask)
    np.testing.assert_allclose(y, np.where(expected_mask, x / 0.75, 0), rtol=1e-6)


def test_inference_passes_data_through():
    x = np.ones((4, 5), np.float32)
    y, mask = tractile.load(dropout_model()).run([x, np.asarray(0.5, np.float32), np.asarray(False)])
    np.testing.assert_array_equal(y, x)
    assert mask.all()


def test_constant_false_training_mode_declutters_away():
    proto = model([node("Dropout", ["x", "r", "t"], ["y"]), node("Relu", ["y"], ["z"])],
                  [value("x", "f32", [3])], [value("z")], opset=13)
    proto.graph.initializer.extend([numpy_helper.from_array(np.asarray(0.5, np.float32), "r"),
                                    numpy_helper.from_array(np.asarray(False), "t")])
    typed = tractile.load(proto)
    assert [n.op.name for n in typed.nodes if "Dropout" in n.op.name] == []
    np.testing.assert_array_equal(typed.run([np.array([-1, 0, 2], np.float32)])[0], [0, 0, 2])


def test_ratio_must_be_a_scalar():
    with pytest.raises(AnalysisError, match="ratio should be a float scalar"):
        tractile.load(dropout_model(ratio_shape=(2,)))
