"""Declutter and optimize passes, and the pass driver."""
import numpy as np
import pytest
from onnx import numpy_helper

import tractile
from tractile.errors import TractileError
from tractile.graph import OutletId
from tractile.ops import Relu
from tractile.ops.binary import Add
from tractile.passes import run_passes
from tractile.patch import ModelPatch

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value

RNG = np.random.default_rng(7)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def op_names(typed):
    return [n.op.name for n in typed.nodes]


def test_no_op_removal():
    proto = model(
        [node("Identity", ["x"], ["a"]), node("Dropout", ["a"], ["b"]), node("Cast", ["b"], ["c"], to=1),
         node("Reshape", ["c", "same"], ["d"]), node("Transpose", ["d"], ["e"], perm=[0, 1]),
         node("Relu", ["e"], ["y"])],
        [value("x", "f32", [2, 3])], [value("y", None)], {"same": np.array([2, 3], np.int64)})
    typed = tractile.load(proto)
    assert op_names(typed) == ["Source", "Relu"]
    x = rand(2, 3)
    np.testing.assert_array_equal(typed.run([x])[0], np.maximum(x, 0))


def test_dead_nodes_are_removed():
    proto = model([node("Relu", ["x"], ["y"]), node("Exp", ["x"], ["unused"])],
                  [value("x", "f32", [4])], [value("y", None)])
    typed = tractile.load(proto)
    assert "Exp" not in op_names(typed)


def test_batchnorm_folds_into_conv_and_matches_onnxruntime():
    c = 6
    inits = {"w": rand(c, 3, 3, 3), "b": rand(c), "scale": rand(c), "bias": rand(c), "mean": rand(c),
             "var": np.abs(rand(c)) + 0.5}
    proto = model([node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                   node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["y"], epsilon=1e-3)],
                  [value("x", "f32", [2, 3, 9, 9])], [value("y", "f32")], inits)
    typed = tractile.load(proto)
    assert op_names(typed).count("Conv") == 1
    assert not {"BatchNorm", "Mul", "Add"} & set(op_names(typed))
    x = rand(2, 3, 9, 9)
    np.testing.assert_allclose(typed.run([x])[0], run_onnxruntime(proto, [x])[0], rtol=1e-4, atol=1e-5)


def test_batchnorm_folds_into_gemm():
    inits = {"w": rand(5, 4), "b": rand(5), "scale": rand(5), "bias": rand(5), "mean": rand(5),
             "var": np.abs(rand(5)) + 0.5}
    proto = model([node("Gemm", ["x", "w", "b"], ["g"], transB=1),
                   node("BatchNormalization", ["g", "scale", "bias", "mean", "var"], ["y"])],
                  [value("x", "f32", [3, 4])], [value("y", "f32")], inits)
    typed = tractile.load(proto)
    assert op_names(typed) == ["Source", "Const", "Const", "MatMul"]
    x = rand(3, 4)
    np.testing.assert_allclose(typed.run([x])[0], run_onnxruntime(proto, [x])[0], rtol=1e-4, atol=1e-5)


def test_bias_and_activation_fuse_into_matmul_and_conv():
    proto = model([node("MatMul", ["x", "w"], ["m"]), node("Add", ["m", "b"], ["a"]), node("Relu", ["a"], ["r"]),
                   node("Reshape", ["r", "shape"], ["img"]),
                   node("Conv", ["img", "k"], ["c"]), node("Sigmoid", ["c"], ["y"])],
                  [value("x", "f32", [2, 8])], [value("y", "f32")],
                  {"w": rand(8, 16), "b": rand(16), "shape": np.array([2, 1, 4, 4], np.int64), "k": rand(3, 1, 2, 2)})
    typed = tractile.load(proto)
    compute = [n for n in typed.nodes if n.op.name in ("MatMul", "Conv")]
    assert len(typed.nodes) == 8 and "Relu" not in op_names(typed) and "Sigmoid" not in op_names(typed)
    assert compute[0].op.has_bias and compute[0].op.activation.name == "Relu"
    assert compute[1].op.activation.name == "Sigmoid"
    x = rand(2, 8)
    np.testing.assert_allclose(typed.run([x])[0], run_onnxruntime(proto, [x])[0], rtol=1e-5, atol=1e-6)


def test_activation_is_not_fused_when_the_raw_output_is_also_used():
    proto = model([node("MatMul", ["x", "w"], ["m"]), node("Relu", ["m"], ["r"]), node("Add", ["r", "m"], ["y"])],
                  [value("x", "f32", [2, 3])], [value("y", "f32")], {"w": rand(3, 3)})
    typed = tractile.load(proto)
    assert "Relu" in op_names(typed)
    x = rand(2, 3)
    np.testing.assert_allclose(typed.run([x])[0], run_onnxruntime(proto, [x])[0], rtol=1e-6)


def test_constant_subgraphs_fold():
    proto = model([node("Transpose", ["w"], ["wt"], perm=[1, 0]), node("Mul", ["wt", "two"], ["w2"]),
                   node("MatMul", ["x", "w2"], ["y"])],
                  [value("x", "f32", [1, 3])], [value("y", None)], {"w": rand(4, 3), "two": np.float32(2)})
    typed = tractile.load(proto)
    assert op_names(typed) == ["Source", "Const", "MatMul"]


def test_driver_checks_every_patch():
    proto = model([node("Relu", ["x"], ["y"])], [value("x", "f32", [3])], [value("y", None)])
    typed = tractile.load(proto)

    def bad_pass(model, node):
        if isinstance(node.op, Relu):
            patch = ModelPatch(model, "bad")
            wrong = patch.add_const("wrong", np.zeros((5,), np.float32))
            patch.shunt(OutletId(node.id, 0), wrong)
            return patch
        return None

    with pytest.raises(TractileError, match="cannot shunt"):
        run_passes(typed, [("bad", bad_pass)])


def test_trace_records_rewrites():
    proto = model([node("Identity", ["x"], ["a"]), node("Add", ["a", "zero"], ["y"])],
                  [value("x", "f32", [3])], [value("y", None)], {"zero": np.zeros(3, np.float32)})
    trace = []
    typed = tractile.load(proto, optimize=False).into_typed()
    out = tractile.passes.declutter(typed, trace=trace)
    assert [n.op.name for n in out.nodes] == ["Source"]
    assert any("identity" in label for _, _, label in trace)
    assert isinstance(Add(), Add)


def test_generated_weights_fold_but_generated_activations_do_not():
    # a kernel made by ConstantOfShape folds (it only feeds Conv's weight input, through a
    # Transpose), so BatchNorm can fold too; the same tensor feeding an Add stays an op
    proto = model(
        [node("ConstantOfShape", ["kshape"], ["k0"], value=numpy_helper.from_array(np.array([0.5], np.float32))),
         node("Transpose", ["k0"], ["k"], perm=[0, 1, 3, 2]),
         node("Conv", ["x", "k"], ["c"]),
         node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"]),
         node("ConstantOfShape", ["ashape"], ["a"], value=numpy_helper.from_array(np.array([1.0], np.float32))),
         node("Add", ["bn", "a"], ["y"])],
        [value("x", "f32", [1, 3, 40, 40])], [value("y", "f32")],
        {"kshape": np.array([8, 3, 3, 3], np.int64), "ashape": np.array([1, 8, 38, 38], np.int64),
         "s": rand(8), "b": rand(8), "m": rand(8), "v": np.abs(rand(8)) + 1})
    typed = tractile.load(proto)
    assert op_names(typed).count("ConstantOfShape") == 1
    assert "BatchNorm" not in op_names(typed) and "Transpose" not in op_names(typed)
    x = rand(1, 3, 40, 40)
    np.testing.assert_allclose(typed.run([x])[0], run_onnxruntime(proto, [x])[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape,steps,copies", [
    ((2, 3, 4, 5), [("T", [0, 3, 1, 2]), ("R", [2, 15, 4]), ("T", [2, 0, 1])], 1),  # a CRNN's exit and time-major
    ((6, 10), [("T", [1, 0]), ("R", [5, 2, 6]), ("T", [2, 1, 0]), ("R", [60])], 1),  # a dim cut in two
    ((6, 10), [("T", [1, 0]), ("R", [5, 2, 6]), ("T", [2, 0, 1])], 0),  # the input again, reshaped
    ((4, 6), [("T", [1, 0]), ("R", [3, 8]), ("T", [1, 0])], 1),  # 6 x 4 as 3 x 8: 6 and 8 cut as 3 x 2, 2 x 4
    ((4, 6), [("T", [1, 0]), ("R", [4, 6]), ("T", [1, 0])], 2),  # 6 x 4 regrouped as 4 x 6: no common axes
])
def test_transposes_and_reshapes_compose_into_one_copy(shape, steps, copies):
    """``compose_layout`` (the compiler's) keeps the values exactly: it only moves them."""
    from tractile.ops.array import Transpose
    from tractile.passes.compose_layout import compose_layout

    nodes, inits, source = [], {}, "x"
    for index, (kind, value_) in enumerate(steps):
        out = "y" if index == len(steps) - 1 else f"s{index}"
        if kind == "T":
            nodes.append(node("Transpose", [source], [out], perm=value_))
        else:
            inits[f"shape{index}"] = np.asarray(value_, np.int64)
            nodes.append(node("Reshape", [source, f"shape{index}"], [out]))
        source = out
    typed = tractile.load(model(nodes, [value("x", "f32", list(shape))], [value("y", None)], inits))
    composed = run_passes(typed, [("compose-layout", compose_layout)])
    assert sum(isinstance(n.op, Transpose) for n in composed.nodes) == copies
    x = rand(*shape)
    np.testing.assert_array_equal(composed.run([x])[0], typed.run([x])[0])


def test_a_product_over_the_composed_features_reads_them_in_the_input_order():
    """Before a MatMul with constant weights, the flattened features keep the order of the chain's
    input (channels innermost: a copy of whole pixels) and the weights' rows are permuted instead."""
    from tractile.ops.array import Transpose
    from tractile.passes.compose_layout import compose_layout

    b = rand(12, 5)
    proto = model([node("Transpose", ["x"], ["a"], perm=[0, 3, 1, 2]), node("Reshape", ["a", "flat"], ["r"]),
                   node("Transpose", ["r"], ["t"], perm=[0, 2, 1]), node("MatMul", ["t", "b"], ["y"])],
                  [value("x", "f32", [1, 2, 7, 6])], [value("y", None)],
                  {"flat": np.asarray([1, 12, 7], np.int64), "b": b})
    typed = tractile.load(proto)
    composed = run_passes(typed, [("compose-layout", compose_layout)])
    perms = [n.op.perm for n in composed.nodes if isinstance(n.op, Transpose)]
    assert perms == [(1, 0, 2)]  # (h, w, c) -> (w, h, c): only h and w swap
    x = rand(1, 2, 7, 6)
    np.testing.assert_allclose(composed.run([x])[0], typed.run([x])[0], rtol=1e-5, atol=1e-6)
