"""Reductions, arg-reductions, scans, TopK and Einsum against onnxruntime and hand-computed values."""
import numpy as np
import pytest

import tractile
from tractile import AnalysisError, RunError, symbol

from .single_node import check_node, run_node, typed_node

RNG = np.random.default_rng(7)
X = RNG.uniform(0.5, 2.0, (3, 4, 5)).astype(np.float32) * np.where(RNG.random((3, 4, 5)) < 0.3, -1, 1)
POSITIVE = np.abs(X)

REDUCERS = ["ReduceSum", "ReduceMean", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2",
            "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]


@pytest.mark.parametrize("op", REDUCERS)
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("axes", [[1], [0, 2], [-1], None])
def test_reductions_with_axes_input_match_onnxruntime(op, keepdims, axes):
    data = POSITIVE if op == "ReduceLogSum" else X
    inputs = {"data": data, "axes": None if axes is None else np.array(axes, np.int64)}
    check_node(op, inputs, opset=18, constants=("axes",), keepdims=keepdims, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", REDUCERS)
def test_reductions_with_axes_attribute_match_onnxruntime(op):
    data = POSITIVE if op == "ReduceLogSum" else X
    check_node(op, {"data": data}, opset=11, axes=[0, -1], keepdims=0, rtol=1e-5, atol=1e-5)


def test_reduce_sum_reads_axes_from_its_input_since_opset_13():
    check_node("ReduceSum", {"data": X, "axes": np.array([2, 0])}, opset=13, constants=("axes",), keepdims=0)
    check_node("ReduceSum", {"data": X}, opset=12, axes=[1], keepdims=1)


def test_axes_known_only_at_run_time_give_the_right_rank_and_values():
    typed = typed_node("ReduceMax", {"data": X, "axes": np.array([0, 2])}, keepdims=0)
    assert typed.output_fact(0).rank == 1
    kept = typed_node("ReduceMax", {"data": np.ones((3, 1, 2), np.float32), "axes": np.array([0])}, keepdims=1)
    assert kept.output_fact(0).rank == 3 and kept.output_fact(0).shape[1] == 1
    got = check_node("ReduceMax", {"data": X, "axes": np.array([0, 2])}, keepdims=0)[0]
    np.testing.assert_array_equal(got, X.max(axis=(0, 2)))


EMPTY_SET_VALUES = {
    "ReduceSum": 0.0, "ReduceProd": 1.0, "ReduceMax": -np.inf, "ReduceMin": np.inf, "ReduceL1": 0.0,
    "ReduceL2": 0.0, "ReduceSumSquare": 0.0, "ReduceLogSum": -np.inf, "ReduceLogSumExp": -np.inf,
}


@pytest.mark.parametrize("op", sorted(EMPTY_SET_VALUES))
def test_reducing_an_empty_set_gives_the_identity(op):
    data = np.zeros((2, 0, 4), np.float32)
    got = run_node(op, {"data": data, "axes": np.array([1], np.int64)}, opset=20, keepdims=1)[0]
    assert got.shape == (2, 1, 4) and got.dtype == np.float32
    np.testing.assert_array_equal(got, np.full((2, 1, 4), EMPTY_SET_VALUES[op], np.float32))


def test_empty_set_on_integers_and_bools():
    ints = run_node("ReduceMax", {"data": np.zeros((0, 3), np.int32)}, opset=20, keepdims=0)[0]
    assert ints.shape == () and ints == np.iinfo(np.int32).min
    bools = run_node("ReduceMin", {"data": np.zeros((2, 0), bool), "axes": np.array([1])}, opset=20, keepdims=0)[0]
    assert bools.tolist() == [True, True]


def test_noop_with_empty_axes():
    same = run_node("ReduceSum", {"data": X, "axes": np.zeros(0, np.int64)}, opset=13, noop_with_empty_axes=1)[0]
    np.testing.assert_array_equal(same, X)
    everything = check_node("ReduceSum", {"data": X, "axes": np.zeros(0, np.int64)}, opset=13, keepdims=0)[0]
    assert everything.shape == () and np.isclose(everything, X.astype(np.float64).sum(), rtol=1e-5)


def test_bool_max_and_min_are_any_and_all():
    data = np.array([[True, False], [False, False], [True, True]])
    got_max = run_node("ReduceMax", {"data": data, "axes": np.array([1])}, opset=20, keepdims=0)[0]
    got_min = run_node("ReduceMin", {"data": data, "axes": np.array([1])}, opset=20, keepdims=0)[0]
    assert got_max.tolist() == [True, False, True] and got_min.tolist() == [False, False, True]


def test_integer_and_float16_sums():
    ints = RNG.integers(-100, 100, (4, 6)).astype(np.int32)
    check_node("ReduceSum", {"data": ints, "axes": np.array([1])}, constants=("axes",), keepdims=0)
    halves = RNG.uniform(0, 1, (4096,)).astype(np.float16)
    got = run_node("ReduceSum", {"data": halves}, keepdims=0)[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(float(got), float(halves.astype(np.float64).sum()), rtol=1e-3)


def test_log_sum_exp_is_stable_for_large_values():
    data = np.array([[1000.0, 1000.0], [-1000.0, -1000.0]], np.float32)
    got = run_node("ReduceLogSumExp", {"data": data, "axes": np.array([1])}, keepdims=0)[0]
    np.testing.assert_allclose(got, [1000.0 + np.log(2.0), -1000.0 + np.log(2.0)], rtol=1e-6)


def test_reduction_axis_out_of_range_is_an_analysis_error():
    with pytest.raises(AnalysisError, match="axis 3 is out of range for rank 3"):
        typed_node("ReduceSum", {"data": X, "axes": np.array([3])}, opset=13, constants=("axes",))


def test_reduce_prod_of_a_symbolic_shape_is_symbolic():
    from .onnx_builder import model, node, value

    proto = model([node("Shape", ["x"], ["s"]), node("ReduceProd", ["s"], ["n"], keepdims=0)],
                  [value("x", "f32", ["N", 3, "T"])], [value("n", None)], opset=18)
    typed = tractile.load(proto, optimize=False).into_typed()
    assert typed.output_fact(0).sym_value.item() == symbol("N") * 3 * symbol("T")
    assert tractile.load(proto).run([np.zeros((2, 3, 5), np.float32)])[0] == 30


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_reductions_match_onnxruntime(op, axis, keepdims, last):
    data = RNG.integers(0, 3, (3, 4, 5)).astype(np.float32)  # many ties
    check_node(op, {"data": data}, opset=13, axis=axis, keepdims=keepdims, select_last_index=last)


def test_arg_max_ties_pick_first_or_last():
    data = np.array([[2.0, 7.0, 7.0, 1.0]], np.float32)
    assert run_node("ArgMax", {"data": data}, opset=13, axis=1, keepdims=0)[0].tolist() == [1]
    assert run_node("ArgMax", {"data": data}, opset=13, axis=1, keepdims=0, select_last_index=1)[0].tolist() == [2]


def test_arg_max_over_an_empty_axis_is_an_analysis_error():
    with pytest.raises(AnalysisError, match="the axis is empty"):
        typed_node("ArgMax", {"data": np.zeros((2, 0), np.float32)}, opset=13, axis=1)


@pytest.mark.parametrize("exclusive", [0, 1])
@pytest.mark.parametrize("reverse", [0, 1])
@pytest.mark.parametrize("axis", [0, -1])
def test_cumsum_matches_onnxruntime(exclusive, reverse, axis):
    data = RNG.standard_normal((4, 5)).astype(np.float32)
    check_node("CumSum", {"x": data, "axis": np.array(axis, np.int64)}, opset=14, exclusive=exclusive,
               reverse=reverse)


def test_cumsum_and_cumprod_hand_computed():
    x = np.array([1, 2, 3, 4], np.int32)
    cases = {(0, 0): ([1, 3, 6, 10], [1, 2, 6, 24]), (1, 0): ([0, 1, 3, 6], [1, 1, 2, 6]),
             (0, 1): ([10, 9, 7, 4], [24, 24, 12, 4]), (1, 1): ([9, 7, 4, 0], [24, 12, 4, 1])}
    for (exclusive, reverse), (sums, prods) in cases.items():
        got_sum = run_node("CumSum", {"x": x, "axis": np.array(0)}, opset=14, exclusive=exclusive, reverse=reverse)
        got_prod = run_node("CumProd", {"x": x, "axis": np.array(0)}, opset=26, exclusive=exclusive,
                            reverse=reverse)
        assert got_sum[0].tolist() == sums and got_sum[0].dtype == np.int32
        assert got_prod[0].tolist() == prods and got_prod[0].dtype == np.int32


def test_cumsum_axis_out_of_range():
    with pytest.raises(AnalysisError, match="CumSum axis 2 is out of range"):
        typed_node("CumSum", {"x": np.ones((2, 2), np.float32), "axis": np.array(2)}, opset=14, constants=("axis",))
    with pytest.raises(RunError, match="CumSum axis 2 is out of range"):
        run_node("CumSum", {"x": np.ones((2, 2), np.float32), "axis": np.array(2)}, opset=14)


@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_top_k_matches_onnxruntime(largest, axis, k):
    data = RNG.integers(0, 4, (4, 5, 3)).astype(np.float32)  # ties everywhere
    check_node("TopK", {"x": data, "k": np.array([k], np.int64)}, outputs=2, opset=11, axis=axis,
               largest=largest, sorted=1)


def test_top_k_breaks_ties_by_lowest_index_and_handles_uint64():
    data = np.array([3, 1, 3, 2, 1], np.uint64)
    values, indices = run_node("TopK", {"x": data, "k": np.array([3])}, outputs=2, opset=11)
    assert values.tolist() == [3, 3, 2] and indices.tolist() == [0, 2, 3] and values.dtype == np.uint64
    values, indices = run_node("TopK", {"x": data, "k": np.array([3])}, outputs=2, opset=11, largest=0)
    assert values.tolist() == [1, 1, 2] and indices.tolist() == [1, 4, 3]


def test_top_k_opset_1_reads_k_from_an_attribute():
    data = np.array([[1.0, 5.0, 3.0]], np.float32)
    values, indices = run_node("TopK", {"x": data}, outputs=2, opset=1, k=2)
    assert values.tolist() == [[5.0, 3.0]] and indices.tolist() == [[1, 2]]


def test_top_k_larger_than_the_axis_is_an_error():
    data = np.ones((2, 3), np.float32)
    with pytest.raises(AnalysisError, match="TopK's k is 4"):
        typed_node("TopK", {"x": data, "k": np.array([4])}, outputs=2, opset=11, constants=("k",))
    with pytest.raises(RunError, match="TopK's k is 4"):
        run_node("TopK", {"x": data, "k": np.array([4])}, outputs=2, opset=11)


@pytest.mark.parametrize("equation, shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ij", [(3, 4)]),
    ("ji", [(3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("...ii->...i", [(2, 4, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (1, 5, 4, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ii->", [(4, 4)]),
])
def test_einsum_matches_onnxruntime(equation, shapes):
    inputs = {f"x{i}": RNG.standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)}
    check_node("Einsum", inputs, opset=12, equation=equation, rtol=1e-4, atol=1e-5)


def test_einsum_hand_computed_and_bfloat16():
    import ml_dtypes

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = run_node("Einsum", {"a": a, "b": b}, opset=12, equation="ij,jk->ik")[0]
    np.testing.assert_array_equal(got, a @ b)
    halves = run_node("Einsum", {"a": a.astype(ml_dtypes.bfloat16)}, opset=12, equation="ij->i")[0]
    assert halves.dtype == ml_dtypes.bfloat16 and halves.astype(np.float32).tolist() == [3.0, 12.0]


def test_einsum_label_size_conflict_is_an_analysis_error():
    with pytest.raises(AnalysisError, match="label 'j' is 4 in one input and 5 in another"):
        typed_node("Einsum", {"a": np.ones((3, 4), np.float32), "b": np.ones((5, 2), np.float32)}, opset=12,
                   equation="ij,jk->ik")
    with pytest.raises(AnalysisError, match="2 operands"):
        typed_node("Einsum", {"a": np.ones((3, 4), np.float32)}, opset=12, equation="ij,jk->ik")
