"""Gather*, Scatter*, TensorScatter, OneHot, Compress, NonZero and Unique against onnxruntime and by hand."""
import numpy as np
import pytest

from tractile import AnalysisError, RunError

from .single_node import check_node, run_node, typed_node

RNG = np.random.default_rng(11)
DATA = RNG.standard_normal((4, 5, 3)).astype(np.float32)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_with_negative_and_nd_indices_matches_onnxruntime(axis):
    indices = np.array([[0, -1], [2, 1]], np.int64)
    check_node("Gather", {"data": DATA, "indices": indices}, opset=13, axis=axis)
    check_node("Gather", {"data": DATA, "indices": np.array(-2, np.int32)}, opset=13, axis=axis)


def test_gather_index_out_of_range_is_a_run_error_naming_it():
    with pytest.raises(RunError, match="index 7 is out of range for a dimension of size 4"):
        run_node("Gather", {"data": DATA, "indices": np.array([1, 7])}, opset=13)


def test_gather_of_constant_out_of_range_is_an_analysis_error_or_run_error():
    with pytest.raises((AnalysisError, RunError), match="out of range"):
        run_node("Gather", {"data": np.array([3, 4], np.int64), "indices": np.array([5])}, opset=13,
                 constants=("data", "indices"))


@pytest.mark.parametrize("axis", [0, 1, 2, -2])
def test_gather_elements_matches_onnxruntime(axis):
    shape = list(DATA.shape)
    shape[axis] = 6
    shape[(axis + 1) % 3 if axis >= 0 else 2] -= 1  # smaller than the data on another axis
    size = DATA.shape[axis]
    indices = RNG.integers(-size, size, shape).astype(np.int64)
    check_node("GatherElements", {"data": DATA, "indices": indices}, opset=13, axis=axis)


def test_gather_elements_hand_computed():
    data = np.array([[1, 2], [3, 4]], np.int32)
    got = run_node("GatherElements", {"data": data, "indices": np.array([[0, 0], [1, 0]])}, opset=13, axis=1)[0]
    assert got.tolist() == [[1, 1], [4, 3]]


def test_gather_elements_rank_mismatch_is_an_analysis_error():
    with pytest.raises(AnalysisError, match="must have the same rank"):
        typed_node("GatherElements", {"data": DATA, "indices": np.zeros((2, 2), np.int64)}, opset=13)


@pytest.mark.parametrize("batch_dims, indices", [
    (0, np.array([[0, 1], [3, -1]])),
    (0, np.array([[[1]], [[2]]])),
    (0, np.array([[0, 1, 2], [3, 4, 0]])),
    (1, np.array([[1], [0], [4], [2]])),
    (1, np.array([[[1, 2]], [[0, 0]], [[4, 1]], [[2, 2]]])),
    (2, np.array([[[1], [0], [2], [1], [0]]] * 4)),
])
def test_gather_nd_matches_onnxruntime(batch_dims, indices):
    check_node("GatherND", {"data": DATA, "indices": indices.astype(np.int64)}, opset=13, batch_dims=batch_dims)


def test_gather_nd_hand_computed_and_errors():
    data = np.array([[[0, 1], [2, 3]], [[4, 5], [6, 7]]], np.int32)
    got = run_node("GatherND", {"data": data, "indices": np.array([[1], [0]])}, opset=13, batch_dims=1)[0]
    assert got.tolist() == [[2, 3], [4, 5]]
    with pytest.raises(AnalysisError, match="address 4 axes"):
        typed_node("GatherND", {"data": data, "indices": np.zeros((2, 4), np.int64)}, opset=13)
    with pytest.raises(RunError, match="index 2 is out of range"):
        run_node("GatherND", {"data": data, "indices": np.array([[2, 0]])}, opset=13)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements_matches_onnxruntime(reduction, axis):
    data = RNG.standard_normal((4, 5)).astype(np.float32)
    shape = (3, 2) if axis == 0 else (2, 3)
    size = data.shape[axis]
    if reduction == "none":  # distinct targets per line: onnxruntime's order with duplicates is unspecified
        positions = np.stack([RNG.permutation(size)[:shape[axis]] for _ in range(shape[1 - axis % 2])])
        indices = positions.T if axis == 0 else positions
        indices = np.where(RNG.random(indices.shape) < 0.5, indices - size, indices)
    else:
        indices = RNG.integers(-size, size, shape)
    updates = RNG.standard_normal(shape).astype(np.float32)
    check_node("ScatterElements", {"data": data, "indices": indices.astype(np.int64), "updates": updates},
               opset=18, axis=axis, reduction=reduction)


def test_scatter_elements_with_duplicates_hand_computed():
    data = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]], np.float32)
    indices = np.array([[1, 1]])
    updates = np.array([[1.1, 2.1]], np.float32)
    added = run_node("ScatterElements", {"data": data, "indices": indices, "updates": updates}, opset=18, axis=1,
                     reduction="add")[0]
    np.testing.assert_allclose(added, [[1.0, 5.2, 3.0, 4.0, 5.0]], rtol=1e-6)
    deprecated = run_node("Scatter", {"data": data, "indices": np.array([[0, -1]]), "updates": updates},
                          opset=10, axis=1)[0]
    np.testing.assert_allclose(deprecated, [[1.1, 2.0, 3.0, 4.0, 2.1]])


def test_scatter_elements_errors():
    data = np.zeros((2, 3), np.float32)
    with pytest.raises(AnalysisError, match="differ in shape"):
        typed_node("ScatterElements", {"data": data, "indices": np.zeros((1, 2), np.int64),
                                       "updates": np.zeros((1, 3), np.float32)}, opset=18)
    with pytest.raises(RunError, match="index 3 is out of range"):
        run_node("ScatterElements", {"data": data, "indices": np.array([[3]]), "updates": np.ones((1, 1), np.float32)},
                 opset=18)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_matches_onnxruntime(reduction):
    data = RNG.standard_normal((4, 4, 3)).astype(np.float32)
    if reduction == "none":
        indices = np.array([[[0, 1], [3, 2]], [[-1, 0], [1, 1]]])
    else:
        indices = np.array([[[0, 1], [3, 2]], [[0, 1], [-4, 2]]])
    updates = RNG.standard_normal((2, 2, 3)).astype(np.float32)
    check_node("ScatterND", {"data": data, "indices": indices.astype(np.int64), "updates": updates}, opset=18,
               reduction=reduction)


def test_scatter_nd_hand_computed_and_errors():
    data = np.arange(4, dtype=np.int64).reshape(2, 2)
    got = run_node("ScatterND", {"data": data, "indices": np.array([[1, 0], [1, 0]]),
                                 "updates": np.array([10, 5])}, opset=18, reduction="max")[0]
    assert got.tolist() == [[0, 1], [10, 3]]
    with pytest.raises(AnalysisError, match="updates .* should have shape"):
        typed_node("ScatterND", {"data": data, "indices": np.array([[1, 0]]), "updates": np.array([1, 2])},
                   opset=18)


def test_tensor_scatter_linear_and_circular_hand_computed():
    cache = np.arange(2 * 4 * 2, dtype=np.float32).reshape(2, 4, 2)
    update = -np.ones((2, 2, 2), np.float32) * np.array([1, 2], np.float32)[:, None, None]
    linear = run_node("TensorScatter", {"past": cache, "update": update, "write": np.array([1, 2])}, opset=24,
                      axis=1)[0]
    expected = cache.copy()
    expected[0, 1:3] = -1
    expected[1, 2:4] = -2
    np.testing.assert_array_equal(linear, expected)
    circular = run_node("TensorScatter", {"past": cache, "update": update, "write": np.array([3, 0])}, opset=24,
                        axis=-2, mode="circular")[0]
    expected = cache.copy()
    expected[0, [3, 0]] = -1
    expected[1, 0:2] = -2
    np.testing.assert_array_equal(circular, expected)
    prefill = run_node("TensorScatter", {"past": cache, "update": update}, opset=24, axis=1)[0]
    assert (prefill[:, :2] < 0).all() and (prefill[:, 2:] == cache[:, 2:]).all()


def test_tensor_scatter_errors():
    cache = np.zeros((2, 4, 2), np.float32)
    with pytest.raises(RunError, match="past the cache axis"):
        run_node("TensorScatter", {"past": cache, "update": np.ones((2, 2, 2), np.float32),
                                   "write": np.array([3, 0])}, opset=24, axis=1)
    with pytest.raises(AnalysisError, match="differ on axis 2"):
        typed_node("TensorScatter", {"past": cache, "update": np.ones((2, 2, 3), np.float32)}, opset=24, axis=1)


@pytest.mark.parametrize("axis", [0, 1, -1, -3])
def test_one_hot_matches_onnxruntime(axis):
    indices = np.array([[0, 3, -1], [9, -10, 11]], np.int64)  # 11 is out of range: an all-off row
    check_node("OneHot", {"indices": indices, "depth": np.array(10.0, np.float32),
                          "values": np.array([-1.0, 5.0], np.float32)}, opset=11, axis=axis)


def test_one_hot_hand_computed_with_float_indices():
    got = run_node("OneHot", {"indices": np.array([1.0, 2.7], np.float32), "depth": np.array([3], np.int64),
                              "values": np.array([0, 1], np.int32)}, opset=11)[0]
    assert got.tolist() == [[0, 1, 0], [0, 0, 1]] and got.dtype == np.int32


def test_one_hot_errors():
    with pytest.raises(AnalysisError, match="values must hold"):
        typed_node("OneHot", {"indices": np.zeros(2, np.int64), "depth": np.array(3), "values": np.zeros(3)},
                   opset=11)
    with pytest.raises(RunError, match="depth is 0"):
        run_node("OneHot", {"indices": np.zeros(2, np.int64), "depth": np.array(0), "values": np.zeros(2)}, opset=11)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_compress_matches_onnxruntime(axis):
    data = RNG.standard_normal((3, 4)).astype(np.float32)
    condition = np.array([True, False, True], bool) if axis == 0 else np.array([False, True, True], bool)
    attrs = {} if axis is None else {"axis": axis}
    check_node("Compress", {"data": data, "condition": condition}, opset=11, **attrs)


def test_compress_with_constant_condition_has_a_known_length():
    typed = typed_node("Compress", {"data": np.ones((3, 4), np.float32), "condition": np.array([1, 0, 1], bool)},
                       opset=11, constants=("condition",), axis=0)
    assert typed.output_fact(0).shape == (2, 4)
    with pytest.raises(RunError, match="3 entries for an axis of size 2"):
        run_node("Compress", {"data": np.ones((3, 2), np.float32), "condition": np.ones(3, bool)}, opset=11, axis=1)


def test_non_zero_matches_onnxruntime():
    data = np.array([[1, 0, 2], [0, 0, 3]], np.int32)
    got = check_node("NonZero", {"x": data}, opset=13)[0]
    assert got.tolist() == [[0, 0, 1], [0, 2, 2]]
    assert check_node("NonZero", {"x": np.zeros((2, 0), np.float32)}, opset=13)[0].shape == (2, 0)


def test_non_zero_output_has_a_fresh_dim_bound_at_run_time():
    typed = typed_node("NonZero", {"x": np.ones((2, 3), np.float32)}, opset=13)
    rows, count = typed.output_fact(0).shape
    assert rows == 2 and not isinstance(count, int)


# onnxruntime always sorts sub-tensors (unique along an axis), so unsorted is compared without an axis
@pytest.mark.parametrize("sorted_, axis", [(0, None), (1, None), (1, 0), (1, 1), (1, -1)])
def test_unique_matches_onnxruntime(sorted_, axis):
    data = np.array([[1, 0, 1], [1, 0, 1], [2, 3, 2], [0, 0, 0]], np.float32)
    attrs = {"sorted": sorted_} if axis is None else {"sorted": sorted_, "axis": axis}
    check_node("Unique", {"x": data}, outputs=4, opset=11, **attrs)


def test_unique_unsorted_hand_computed_and_shared_count_dim():
    values, first, inverse, counts = run_node("Unique", {"x": np.array([2, 1, 1, 3, 4, 3], np.int64)}, outputs=4,
                                              opset=11, sorted=0)
    assert values.tolist() == [2, 1, 3, 4] and first.tolist() == [0, 1, 3, 4]
    assert inverse.tolist() == [0, 1, 1, 2, 3, 2] and counts.tolist() == [1, 2, 2, 1]
    typed = typed_node("Unique", {"x": np.ones((6,), np.float32)}, outputs=4, opset=11)
    facts = typed.output_facts
    assert facts[0].shape == facts[1].shape == facts[3].shape and facts[2].shape == (6,)
