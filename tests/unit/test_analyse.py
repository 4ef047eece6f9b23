"""The static analyser: forward and backward inference, symbolic values, constants, errors."""
import numpy as np
import pytest

import tractile
from tractile import AnalysisError, DatumType, symbol

from .onnx_builder import model, node, value

N = symbol("N")


def test_forward_inference_through_conv_pool_gemm():
    proto = model(
        [node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
         node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         node("Flatten", ["p"], ["f"]),
         node("Gemm", ["f", "fc"], ["y"], transB=1)],
        [value("x", "f32", ["N", 3, 32, 32])], [value("y", None)],
        {"w": np.zeros((8, 3, 3, 3), np.float32), "fc": np.zeros((10, 8 * 8 * 8), np.float32)})
    typed = tractile.load(proto, optimize=False).into_typed()
    conv = typed.node_by_name("c").outputs[0].fact
    assert conv.shape == (N, 8, 16, 16)
    assert typed.output_fact(0).shape == (N, 10)
    assert typed.output_fact(0).dtype == DatumType.F32


def test_backward_inference_from_an_output_hint():
    # the input has no type at all; the output hint flows back through Transpose and Relu
    proto = model([node("Relu", ["x"], ["r"]), node("Transpose", ["r"], ["y"], perm=[1, 2, 0])],
                  [value("x", None)], [value("y", None)])
    loaded = tractile.load(proto, outputs={"y": "4,5,3,f32"}, optimize=False)
    loaded.analyse()
    x = loaded.input_fact(0)
    assert x.dtype == DatumType.F32
    assert x.shape.dims == (3, 4, 5)
    ys, = loaded.run([np.ones((3, 4, 5), np.float32)])
    assert ys.shape == (4, 5, 3)


def test_backward_inference_through_concat():
    # y = Sigmoid(Concat(a, b)); only the output and b are known: a's shape is solved for
    proto = model([node("Concat", ["a", "b"], ["ab"], axis=0), node("Sigmoid", ["ab"], ["y"])],
                  [value("a", None), value("b", "f32", [3, 2])], [value("y", None)])
    loaded = tractile.load(proto, outputs=["10,2,f32"], optimize=False).analyse()
    assert loaded.input_fact("a").shape.dims == (7, 2)
    assert loaded.input_fact("a").dtype == DatumType.F32


def test_symbolic_shape_chain_resolves():
    proto = model(
        [node("Shape", ["x"], ["s"]),
         node("Gather", ["s", "zero"], ["n"], axis=0),
         node("Unsqueeze", ["n", "axes"], ["n1"]),
         node("Concat", ["n1", "minus1"], ["target"], axis=0),
         node("Reshape", ["x", "target"], ["y"])],
        [value("x", "f32", ["N", 4, 5])], [value("y", None)],
        {"zero": np.array(0, np.int64), "axes": np.array([0], np.int64), "minus1": np.array([-1], np.int64)})
    typed = tractile.load(proto, optimize=False).into_typed()
    assert typed.output_fact(0).shape == (N, 20)
    assert list(typed.node_by_name("target").outputs[0].fact.sym_value) == [N, -1]
    out, = typed.into_optimized().run([np.arange(2 * 20, dtype=np.float32).reshape(2, 4, 5)])
    assert out.shape == (2, 20)


def test_statically_known_values_become_constants():
    proto = model([node("Shape", ["x"], ["s"]), node("Cast", ["s"], ["y"], to=1)],
                  [value("x", "f32", [2, 3])], [value("y", None)])
    typed = tractile.load(proto, optimize=False).into_typed()
    ops = {n.op.name for n in typed.nodes}
    assert "Shape" not in ops and "Cast" not in ops
    assert typed.output_fact(0).konst.tolist() == [2.0, 3.0]


def test_constant_of_shape_large_output_is_not_folded():
    # TFDeploy's heuristic: a 1000x1000 constant would dwarf the 2 numbers it comes from
    proto = model([node("ConstantOfShape", ["shape"], ["big"], value=np.array([1.0], np.float32)),
                   node("ReduceMean", ["big"], ["y"], keepdims=0)],
                  [], [value("y", None)], {"shape": np.array([1000, 1000], np.int64)}, opset=11)
    loaded = tractile.load(proto, optimize=False)
    typed = loaded.into_typed()
    assert any(n.op.name == "ConstantOfShape" for n in typed.nodes)
    optimized = typed.into_optimized()
    assert any(n.op.name == "ConstantOfShape" for n in optimized.nodes)
    assert optimized.run([])[0] == pytest.approx(1.0)


def test_conv_channel_mismatch_names_node_and_facts():
    proto = model([node("Conv", ["x", "w"], ["y"], name="conv1")],
                  [value("x", "f32", [1, 3, 224, 224])], [value("y", None)],
                  {"w": np.zeros((8, 4, 3, 3), np.float32)})
    with pytest.raises(AnalysisError) as error:
        tractile.load(proto)
    text = str(error.value)
    assert 'node #' in text and '"conv1" (Conv)' in text
    assert "input 0 has 3 channels, the kernel expects 4" in text
    assert "1,3,224,224,f32" in text and "8,4,3,3,f32" in text


def test_incomplete_input_fact_says_what_to_do():
    proto = model([node("Relu", ["x"], ["y"])], [value("x", None)], [value("y", None)])
    with pytest.raises(AnalysisError, match=r'input "x".*inputs=\{"x"'):
        tractile.load(proto, optimize=False).into_typed()
    # load() keeps it for its first run, whose input gives the missing fact, and says why
    loaded = tractile.load(proto)
    assert 'input "x"' in loaded.reason
    np.testing.assert_array_equal(loaded.run([np.array([-1, 2], np.int32)])[0], [0, 2])


def test_user_input_fact_overrides_the_file():
    proto = model([node("Relu", ["x"], ["y"])], [value("x", "f32", [1, 8])], [value("y", None)])
    typed = tractile.load(proto, inputs={"x": "B,8,f32"})
    assert typed.input_fact(0).shape == (symbol("B"), 8)
    assert typed.run([np.ones((5, 8), np.float32)])[0].shape == (5, 8)


def test_analysis_is_idempotent():
    proto = model([node("Relu", ["x"], ["y"])], [value("x", "f32", [2])], [value("y", None)])
    loaded = tractile.load(proto, optimize=False).analyse()
    before = [str(o.fact) for n in loaded.nodes for o in n.outputs]
    loaded.analyse()
    assert [str(o.fact) for n in loaded.nodes for o in n.outputs] == before
