"""Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, ConstantOfShape, and symbolic shape computations."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import tractile
from tractile import AnalysisError, RunError, symbol

from .onnx_builder import model, node, value
from .single_node import check_node, run_node, typed_node

X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
N, T = symbol("N"), symbol("T")


@pytest.mark.parametrize("start, end", [(0, None), (1, None), (-1, None), (0, -1), (-10, 10), (2, 1)])
def test_shape_start_end_matches_onnxruntime(start, end):
    attrs = {"start": start} if end is None else {"start": start, "end": end}
    check_node("Shape", {"x": X}, opset=15, **attrs)


def test_size_is_the_element_count():
    assert check_node("Size", {"x": X}, opset=13)[0] == 24
    assert run_node("Size", {"x": np.zeros((3, 0), np.float32)}, opset=13)[0] == 0


@pytest.mark.parametrize("target, allowzero", [([4, -1], 0), ([0, 12], 0), ([2, 0, 4], 0), ([-1], 0),
                                               ([2, 12], 1)])
def test_reshape_matches_onnxruntime(target, allowzero):
    check_node("Reshape", {"x": X, "shape": np.array(target, np.int64)}, opset=14, allowzero=allowzero,
               constants=("shape",))
    check_node("Reshape", {"x": X, "shape": np.array(target, np.int64)}, opset=14, allowzero=allowzero)


def test_reshape_allowzero_keeps_a_real_zero():
    got = run_node("Reshape", {"x": np.zeros((0, 3), np.float32), "shape": np.array([3, 0])}, opset=14,
                   allowzero=1, constants=("shape",))[0]
    assert got.shape == (3, 0)


def test_reshape_errors():
    with pytest.raises(AnalysisError, match="more than one -1"):
        typed_node("Reshape", {"x": X, "shape": np.array([-1, -1])}, opset=14, constants=("shape",))
    with pytest.raises(AnalysisError, match="cannot reshape"):
        typed_node("Reshape", {"x": X, "shape": np.array([5, -1])}, opset=14, constants=("shape",))


@pytest.mark.parametrize("axis", [0, 1, 3, -1])
def test_flatten_matches_onnxruntime(axis):
    check_node("Flatten", {"x": X}, opset=13, axis=axis)


def test_squeeze_and_unsqueeze_across_opsets():
    data = np.ones((1, 3, 1, 2), np.float32)
    check_node("Squeeze", {"x": data}, opset=11, axes=[0, -2])
    check_node("Squeeze", {"x": data}, opset=13)
    check_node("Squeeze", {"x": data, "axes": np.array([2])}, opset=13, constants=("axes",))
    check_node("Unsqueeze", {"x": X}, opset=11, axes=[0, -1])
    check_node("Unsqueeze", {"x": X, "axes": np.array([4, 1])}, opset=13, constants=("axes",))
    check_node("Unsqueeze", {"x": X, "axes": np.array([-1])}, opset=13)


def test_squeeze_of_a_non_unit_axis_is_an_analysis_error():
    with pytest.raises(AnalysisError, match="cannot squeeze axis 1"):
        typed_node("Squeeze", {"x": X, "axes": np.array([1])}, opset=13, constants=("axes",))


def test_constant_of_shape_value_and_limits():
    got = check_node("ConstantOfShape", {"shape": np.array([2, 3])}, opset=9,
                     value=helper.make_tensor("v", TensorProto.INT32, [1], [7]))[0]
    assert got.dtype == np.int32 and got.tolist() == [[7, 7, 7]] * 2
    with pytest.raises(RunError, match="negative dimension"):
        run_node("ConstantOfShape", {"shape": np.array([2, -3])}, opset=9)


def _scalar(name: str, number: int):
    return node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64, [], [number]))


def test_shape_gather_concat_reshape_keeps_the_batch_symbol():
    nodes = [node("Shape", ["x"], ["s"]), _scalar("zero", 0), node("Gather", ["s", "zero"], ["n"], axis=0),
             node("Unsqueeze", ["n", "axes0"], ["n1"]), node("Concat", ["n1", "minus1"], ["target"], axis=0),
             node("Reshape", ["x", "target"], ["y"])]
    proto = model(nodes, [value("x", "f32", ["N", 3, "T"])], [value("y", None)],
                  {"axes0": np.array([0]), "minus1": np.array([-1])}, opset=18)
    typed = tractile.load(proto, optimize=False).into_typed()
    assert typed.output_fact(0).shape == (N, 3 * T)
    optimized = tractile.load(proto)
    assert optimized.output_fact(0).shape == (N, 3 * T)
    assert optimized.run([np.zeros((2, 3, 5), np.float32)])[0].shape == (2, 15)
    # the plumbing folds away: one Flatten, as a person would have written it
    assert [n.op.name for n in optimized.nodes] == ["Source", "Flatten"]


def test_a_computed_target_that_is_concrete_becomes_a_constant_reshape():
    nodes = [node("Shape", ["x"], ["s"]), node("ReduceProd", ["s"], ["volume"], keepdims=1),
             node("Reshape", ["x", "volume"], ["y"])]
    proto = model(nodes, [value("x", "f32", [2, 3, 4])], [value("y", None)], opset=13)
    optimized = tractile.load(proto)
    assert [n.op.name for n in optimized.nodes if n.op.name != "Const"] in (["Source", "Reshape"],
                                                                           ["Source", "Flatten"])
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(optimized.run([x])[0], x.reshape(24))


def test_symbolic_values_flow_through_range_expand_slice_size_and_reduce_prod():
    nodes = [node("Shape", ["x"], ["s"]), _scalar("zero", 0), _scalar("one", 1), _scalar("two", 2),
             node("Gather", ["s", "two"], ["t"], axis=0),
             node("Range", ["zero", "t", "one"], ["positions"]),
             node("Size", ["x"], ["size"]),
             node("ReduceProd", ["s"], ["prod"], keepdims=0),
             node("Slice", ["s", "from1", "to3"], ["tail"]),
             node("Expand", ["b", "s"], ["expanded"]),
             node("Squeeze", ["tail2", "axes0"], ["first"]),
             node("Slice", ["s", "from0", "to1"], ["tail2"]),
             node("ConstantOfShape", ["tail"], ["filled"])]
    outputs = ["positions", "size", "prod", "tail", "expanded", "first", "filled"]
    proto = model(nodes, [value("x", "f32", ["N", 3, "T"])], [value(o, None) for o in outputs],
                  {"from1": np.array([1]), "to3": np.array([3]), "from0": np.array([0]), "to1": np.array([1]),
                   "axes0": np.array([0]), "b": np.ones((1, 3, 1), np.float32)}, opset=18)
    typed = tractile.load(proto, optimize=False).into_typed()
    facts = dict(zip(outputs, typed.output_facts))
    assert facts["positions"].shape == (T,)
    assert facts["size"].sym_value.item() == facts["prod"].sym_value.item() == 3 * N * T
    assert facts["tail"].sym_value.tolist() == [3, T]
    assert facts["expanded"].shape == (N, 3, T)
    assert facts["first"].shape == () and facts["first"].sym_value.item() == N
    assert facts["filled"].shape == (3, T)
    results = tractile.load(proto).run([np.zeros((2, 3, 5), np.float32)])
    got = dict(zip(outputs, results))
    assert got["positions"].tolist() == [0, 1, 2, 3, 4]
    assert got["size"] == got["prod"] == 30 and got["tail"].tolist() == [3, 5]
    assert got["expanded"].shape == (2, 3, 5) and got["first"] == 2 and got["filled"].shape == (3, 5)


def test_range_over_a_symbolic_bound_with_a_step():
    nodes = [node("Shape", ["x"], ["s"]), _scalar("zero", 0), _scalar("two", 2), _scalar("step", 3),
             node("Gather", ["s", "zero"], ["n"], axis=0), node("Range", ["two", "n", "step"], ["y"])]
    proto = model(nodes, [value("x", "f32", ["N"])], [value("y", None)], opset=18)
    typed = tractile.load(proto, optimize=False).into_typed()
    assert typed.output_fact(0).shape == ((N - 2 + 2) // 3,)
    assert tractile.load(proto).run([np.zeros(9, np.float32)])[0].tolist() == [2, 5, 8]


def test_run_time_shape_errors_are_run_errors():
    with pytest.raises(RunError, match="cannot reshape an input of shape"):
        run_node("Reshape", {"x": X, "shape": np.array([5, -1])}, opset=14)
    with pytest.raises(RunError, match="cannot squeeze axis 1"):
        run_node("Squeeze", {"x": X, "axes": np.array([1])}, opset=13)
    with pytest.raises(RunError, match="Unsqueeze axis 5 is out of range"):
        run_node("Unsqueeze", {"x": X, "axes": np.array([5])}, opset=13)


@pytest.mark.parametrize("start, end, step, expected", [
    (1, (1 << 63) - 1, 1, N - 1), (-2, (1 << 63) - 1, 1, 2), (-1, -(1 << 63), -1, N), (0, -1, 2, N // 2),
    (0, 1000, 1, None), (5, 0, -1, None),
])
def test_slice_over_a_symbolic_axis(start, end, step, expected):
    proto = model([node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])], [value("x", "f32", ["N", 3])],
                  [value("y", None)], {"starts": np.array([start]), "ends": np.array([end]), "axes": np.array([0]),
                                       "steps": np.array([step])}, opset=13)
    dim = tractile.load(proto, optimize=False).into_typed().output_fact(0).shape[0]
    if expected is None:
        assert not isinstance(dim, int) and "N" not in str(dim)  # a fresh symbol: it depends on N's size
    else:
        assert dim == expected
    typed = tractile.load(proto)
    for size in (4, 7):  # symbols stand for sizes at least as large as the constant bounds
        data = np.arange(size * 3, dtype=np.float32).reshape(size, 3)
        got = typed.plan().state(check_facts=True).run([data])[0]
        np.testing.assert_array_equal(got, data[slice(start, end, step)])
