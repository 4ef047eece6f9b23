"""ONNX functions: model-local functions and schema function bodies expanded at load time."""
import numpy as np
import pytest
from onnx import AttributeProto, TensorProto, helper

import tractile
from tractile import UnsupportedOpError
from tractile.formats.onnx import registry
from tractile.ops.cast import Identity

from ..conftest import run_onnxruntime
from .onnx_builder import value

CUSTOM = "com.example"


def ref_attribute(name: str, refers_to: str, kind=AttributeProto.FLOAT) -> AttributeProto:
    attribute = AttributeProto()
    attribute.name, attribute.ref_attr_name, attribute.type = name, refers_to, kind
    return attribute


def scaled_add_function():
    """ScaledAdd(x, y; alpha=2.0) = x + alpha * y, with Offset(z) = z + 1 called inside."""
    constant = helper.make_node("Constant", [], ["alpha_value"])
    constant.attribute.append(ref_attribute("value_float", "alpha"))
    scaled_add = helper.make_function(
        CUSTOM, "ScaledAdd", ["x", "y"], ["out"],
        [constant, helper.make_node("Mul", ["y", "alpha_value"], ["scaled"]),
         helper.make_node("Add", ["x", "scaled"], ["sum"]),
         helper.make_node("Offset", ["sum"], ["out"], domain=CUSTOM)],
        [helper.make_opsetid("", 17), helper.make_opsetid(CUSTOM, 1)], attributes=[])
    scaled_add.attribute_proto.append(helper.make_attribute("alpha", 2.0))
    offset = helper.make_function(CUSTOM, "Offset", ["z"], ["w"],
                                  [helper.make_node("Constant", [], ["one"], value_float=1.0),
                                   helper.make_node("Add", ["z", "one"], ["w"])],
                                  [helper.make_opsetid("", 17)])
    return [scaled_add, offset]


def function_model(nodes, inputs, outputs, functions):
    graph = helper.make_graph(nodes, "functions", inputs, outputs)
    return helper.make_model(graph, functions=functions, ir_version=10,
                             opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(CUSTOM, 1)])


@pytest.mark.parametrize("alpha", [None, -0.5])
def test_model_local_functions_with_attribute_references(alpha):
    attrs = {} if alpha is None else {"alpha": alpha}
    call = helper.make_node("ScaledAdd", ["a", "b"], ["c"], domain=CUSTOM, name="call", **attrs)
    proto = function_model([call], [value("a", "f32", [3]), value("b", "f32", [3])], [value("c", "f32", [3])],
                           scaled_add_function())
    a, b = np.array([1, 2, 3], np.float32), np.array([10, 20, 30], np.float32)
    got = tractile.load(proto).run([a, b])[0]
    np.testing.assert_allclose(got, a + (2.0 if alpha is None else alpha) * b + 1)
    np.testing.assert_allclose(got, run_onnxruntime(proto, [a, b])[0])


def test_unsupported_lists_only_ops_without_translation_or_function():
    call = helper.make_node("ScaledAdd", ["a", "b"], ["c"], domain=CUSTOM, name="call")
    mystery = helper.make_node("Mystery", ["c"], ["d"], domain=CUSTOM, name="mystery")
    proto = function_model([call, mystery], [value("a", "f32", [3]), value("b", "f32", [3])],
                           [value("d", "f32", [3])], scaled_add_function())
    with pytest.raises(UnsupportedOpError) as error:
        tractile.load(proto)
    assert [op for _, op, _, _ in error.value.ops] == ["Mystery"]


def test_a_native_translation_wins_over_a_function_body(monkeypatch):
    monkeypatch.setitem(registry.REGISTRY, (CUSTOM, "Offset"), [(1, lambda n: Identity())])
    call = helper.make_node("ScaledAdd", ["a", "b"], ["c"], domain=CUSTOM, name="call")
    proto = function_model([call], [value("a", "f32", [2]), value("b", "f32", [2])], [value("c", "f32", [2])],
                           scaled_add_function())
    got = tractile.load(proto).run([np.ones(2, np.float32), np.ones(2, np.float32)])[0]
    assert got.tolist() == [3, 3]  # Offset (+1) replaced by the registered Identity


@pytest.mark.parametrize("op, attrs, opset", [
    ("MeanVarianceNormalization", {"axes": [0, 2]}, 13),  # a static function body
    ("LayerNormalization", {"axis": -1, "epsilon": 1e-3}, 17),  # built from the input types
])
def test_schema_function_bodies_stand_in_for_missing_translations(monkeypatch, op, attrs, opset):
    monkeypatch.delitem(registry.REGISTRY, ("", op), raising=False)
    inputs = [value("x", "f32", [2, 3, 4])]
    names = ["x"]
    initializers = {}
    if op == "LayerNormalization":
        names += ["scale", "bias"]
        initializers = {"scale": np.linspace(0.5, 2, 4).astype(np.float32), "bias": np.ones(4, np.float32)}
    graph = helper.make_graph([helper.make_node(op, names, ["y"], name="op", **attrs)], "g", inputs,
                              [value("y", "f32", [2, 3, 4])],
                              [helper.make_tensor(k, TensorProto.FLOAT, v.shape, v) for k, v in initializers.items()])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)
    typed = tractile.load(proto)
    assert all(n.op.name != op for n in typed.nodes)
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(typed.run([x])[0], run_onnxruntime(proto, [x])[0], rtol=1e-4, atol=1e-5)


def test_omitted_optional_inputs_of_a_function_are_absent_in_its_body(monkeypatch):
    monkeypatch.delitem(registry.REGISTRY, ("", "LayerNormalization"), raising=False)
    graph = helper.make_graph([helper.make_node("LayerNormalization", ["x", "scale"], ["y"], name="ln")], "g",
                              [value("x", "f32", [2, 4])], [value("y", "f32", [2, 4])],
                              [helper.make_tensor("scale", TensorProto.FLOAT, [4], [1, 2, 3, 4])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    centered = x - x.mean(-1, keepdims=True)
    expected = centered / np.sqrt((centered ** 2).mean(-1, keepdims=True) + 1e-5) * [1, 2, 3, 4]
    np.testing.assert_allclose(tractile.load(proto).run([x])[0], expected, rtol=1e-5, atol=1e-5)
