"""ONNX loading: registry versions, symbols, unsupported ops, malformed files, external data."""
import numpy as np
import onnx
import pytest
from onnx import helper

import tractile
from tractile import ModelFormatError, TractileError, UnsupportedOpError, symbol
from tractile.formats.onnx.registry import lookup

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value


def test_all_unsupported_ops_are_listed_at_load_time():
    proto = model([node("Relu", ["x"], ["a"]), node("FancyOp", ["a"], ["b"]),
                   helper.make_node("Custom", ["b"], ["c"], domain="com.example", name="c"),
                   node("FancyOp", ["c"], ["y"])],
                  [value("x", "f32", [2])], [value("y", None)])
    proto.opset_import.append(helper.make_opsetid("com.example", 3))
    with pytest.raises(UnsupportedOpError) as error:
        tractile.load(proto)
    text = str(error.value)
    assert "2 unsupported op(s)" in text
    assert "ai.onnx::FancyOp (opset 17) at b, y" in text
    assert "com.example::Custom (opset 3) at c" in text
    assert "supported ai.onnx ops:" in text and "Conv" in text
    assert {op for _, op, _, _ in error.value.ops} == {"FancyOp", "Custom"}


def test_highest_registered_version_not_above_the_opset_is_chosen():
    assert lookup("", "Softmax", 11) is not lookup("", "Softmax", 13)
    assert lookup("", "Softmax", 12) is lookup("", "Softmax", 11)
    assert lookup("", "Softmax", 20) is lookup("", "Softmax", 13)
    assert lookup("", "NotAnOp", 13) is None


@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_semantics_follow_the_opset(opset):
    proto = model([node("Softmax", ["x"], ["y"], axis=1)], [value("x", "f32", [2, 3, 4])],
                  [value("y", "f32")], opset=opset)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    got = tractile.load(proto).run([x])[0]
    np.testing.assert_allclose(got, run_onnxruntime(proto, [x])[0], rtol=1e-5, atol=1e-6)


def test_dim_params_become_symbols_and_unnamed_dims_get_names():
    proto = model([node("Relu", ["x"], ["y"])], [value("x", "f32", ["batch size", None, 3])], [value("y", None)])
    typed = tractile.load(proto)
    assert typed.input_fact(0).shape == (symbol("batch_size"), symbol("x_1"), 3)
    assert typed.run([np.ones((2, 5, 3), np.float32)])[0].shape == (2, 5, 3)


def test_malformed_files_raise_model_format_errors(tmp_path):
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x07this is not a protobuf\xff\xff\xff")
    with pytest.raises(ModelFormatError, match="not a valid ONNX model"):
        tractile.load(broken)
    with pytest.raises(TractileError, match="no such model file"):
        tractile.load(tmp_path / "missing.onnx")


def test_reading_an_undefined_name_is_a_format_error():
    proto = model([node("Relu", ["nowhere"], ["y"])], [value("x", "f32", [1])], [value("y", None)])
    with pytest.raises(ModelFormatError, match="'nowhere'"):
        tractile.load(proto)


def test_external_data_is_loaded(tmp_path):
    weights = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 1000
    proto = model([node("MatMul", ["x", "w"], ["y"])], [value("x", "f32", [1, 64])], [value("y", None)],
                  {"w": weights})
    path = tmp_path / "external.onnx"
    onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").exists()
    x = np.ones((1, 64), np.float32)
    np.testing.assert_allclose(tractile.load(path).run([x])[0], x @ weights, rtol=1e-5)


def test_old_opset_attribute_forms():
    # Reshape-1 with a shape attribute, Unsqueeze-1 with axes, Slice-1 with attributes
    proto = model([node("Reshape", ["x"], ["r"], shape=[3, 2]), node("Unsqueeze", ["r"], ["u"], axes=[0]),
                   node("Slice", ["u"], ["y"], starts=[1], ends=[3], axes=[1])],
                  [value("x", "f32", [6])], [value("y", None)], opset=1)
    y = tractile.load(proto).run([np.arange(6, dtype=np.float32)])[0]
    np.testing.assert_array_equal(y, np.arange(6, dtype=np.float32).reshape(1, 3, 2)[:, 1:3])


def test_model_properties_record_producer_and_opsets():
    proto = model([node("Relu", ["x"], ["y"])], [value("x", "f32", [1])], [value("y", None)])
    proto.producer_name = "unit-test"
    loaded = tractile.load(proto, optimize=False)
    assert loaded.properties["producer"].startswith("unit-test")
    assert loaded.properties["opsets"] == {"": 17}


def test_declared_output_dims_are_parsed_and_foreign_symbols_dropped():
    # "T - 1" is an expression over T; "M" names nothing any input has: analysis decides
    proto = model([node("Slice", ["x", "s", "e", "a"], ["y"]), node("Relu", ["x"], ["z"])],
                  [value("x", "f32", ["N", "T"])], [value("y", "f32", ["N", "T - 1"]), value("z", "f32", ["M", "T"])],
                  {"s": np.array([1]), "e": np.array([1 << 62]), "a": np.array([1])})
    typed = tractile.load(proto)
    assert [str(f) for f in typed.output_facts] == ["N,T-1,f32", "N,T,f32"]
