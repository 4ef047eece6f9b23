"""Array, layout and generator ops (Transpose, Concat, Slice, Pad, Split, Expand, Tile, DepthToSpace,
SpaceToDepth, Trilu, ReverseSequence, CenterCropPad, Range, EyeLike) against onnxruntime and by hand."""
import numpy as np
import pytest

import tractile
from tractile import AnalysisError, RunError

from .single_node import check_node, run_node, typed_node

RNG = np.random.default_rng(5)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)


@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1]])
def test_transpose_matches_onnxruntime(perm):
    check_node("Transpose", {"x": X}, opset=13, **({} if perm is None else {"perm": perm}))


def test_transpose_bad_perm_is_an_analysis_error():
    with pytest.raises(AnalysisError, match="not a permutation"):
        typed_node("Transpose", {"x": X}, opset=13, perm=[0, 0, 1])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_matches_onnxruntime_with_empty_inputs(axis):
    other_shape = list(X.shape)
    other_shape[axis] = 0
    check_node("Concat", {"a": X, "b": np.zeros(other_shape, np.float32), "c": X}, opset=13, axis=axis)


@pytest.mark.parametrize("starts, ends, axes, steps", [
    ([0, 1], [2, 3], [0, 1], [1, 1]),
    ([-1], [-1000], [2], [-1]),
    ([10], [-10], [1], [-2]),
    ([1, -3], [1000, 4], [-1, 1], [2, 1]),
    ([5], [1], [0], [1]),
])
def test_slice_matches_onnxruntime(starts, ends, axes, steps):
    arrays = {"x": X, "starts": np.array(starts), "ends": np.array(ends), "axes": np.array(axes),
              "steps": np.array(steps)}
    check_node("Slice", arrays, opset=13, constants=("starts", "ends", "axes", "steps"))
    check_node("Slice", arrays, opset=13)  # parameters known only at run time


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", [[0, 2, 1, 1, 0, 2], [1, 0, 0, 0, 2, 1]])
def test_pad_modes_match_onnxruntime(mode, pads):
    data = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    inputs = {"x": data, "pads": np.array(pads, np.int64), "value": np.array(1.5, np.float32)}
    check_node("Pad", inputs, opset=19, constants=("pads",), mode=mode)


def test_pad_negative_pads_crop_and_axes_without_constant_value():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = check_node("Pad", {"x": data, "pads": np.array([-1, 1, 0, -2]), "value": None, "axes": np.array([0, 1])},
                     opset=18, constants=("pads", "axes"))[0]
    np.testing.assert_array_equal(got, [[0, 4, 5], [0, 8, 9]])
    only_last = run_node("Pad", {"x": data, "pads": np.array([1, 0]), "value": None, "axes": np.array([-1])},
                         opset=18, constants=("pads", "axes"))[0]
    assert only_last.shape == (3, 5) and (only_last[:, 0] == 0).all()


def test_pad_errors():
    data = np.ones((2, 3), np.float32)
    with pytest.raises(AnalysisError, match="3 pads for 2 axes"):
        typed_node("Pad", {"x": data, "pads": np.array([1, 1, 1])}, opset=13, constants=("pads",))
    with pytest.raises(AnalysisError, match="below zero"):
        typed_node("Pad", {"x": data, "pads": np.array([-2, 0, -1, 0])}, opset=13, constants=("pads",))


def test_split_opset_18_uneven_num_outputs():
    data = np.arange(7, dtype=np.float32)
    parts = run_node("Split", {"x": data}, outputs=4, opset=18, num_outputs=4)
    assert [p.tolist() for p in parts] == [[0, 1], [2, 3], [4, 5], [6]]


@pytest.mark.parametrize("constant", [True, False])
def test_split_with_sizes_input_matches_onnxruntime(constant):
    data = RNG.standard_normal((2, 6)).astype(np.float32)
    check_node("Split", {"x": data, "split": np.array([1, 0, 5])}, outputs=3, opset=13, axis=-1,
               constants=("split",) if constant else ())


def test_split_opset_11_attribute_and_equal_parts():
    data = RNG.standard_normal((6, 2)).astype(np.float32)
    check_node("Split", {"x": data}, outputs=2, opset=11, split=[4, 2])
    check_node("Split", {"x": data}, outputs=3, opset=11)


def test_split_errors():
    data = np.ones((5,), np.float32)
    with pytest.raises(AnalysisError, match="add up to 4"):
        typed_node("Split", {"x": data, "split": np.array([2, 2])}, outputs=2, opset=13, constants=("split",))
    with pytest.raises(RunError, match="do not split an axis of 5"):
        run_node("Split", {"x": data, "split": np.array([2, 2])}, outputs=2, opset=13)


@pytest.mark.parametrize("shape", [[2, 1, 4], [3, 1, 1, 1], [1], [4], [5, 1, 1]])
def test_expand_matches_onnxruntime(shape):
    data = RNG.standard_normal((3, 1)).astype(np.float32) if shape != [4] else X[0, 0]
    check_node("Expand", {"x": data, "shape": np.array(shape, np.int64)}, opset=13, constants=("shape",))
    check_node("Expand", {"x": data, "shape": np.array(shape, np.int64)}, opset=13)


def test_expand_errors():
    with pytest.raises(AnalysisError, match="cannot broadcast"):
        typed_node("Expand", {"x": np.ones((3, 2), np.float32), "shape": np.array([4])}, opset=13,
                   constants=("shape",))
    with pytest.raises(RunError, match="cannot broadcast"):
        run_node("Expand", {"x": np.ones((3, 2), np.float32), "shape": np.array([4])}, opset=13)
    try:
        tractile.set_limits(max_tensor_bytes=1 << 20)
        with pytest.raises(RunError, match="over the limit"):
            run_node("Expand", {"x": np.ones((1,), np.float32), "shape": np.array([1 << 20])}, opset=13)
    finally:
        tractile.set_limits(max_tensor_bytes=8 << 30)


def test_tile_matches_onnxruntime_and_checks_its_repeats():
    check_node("Tile", {"x": X, "repeats": np.array([2, 1, 3])}, opset=13, constants=("repeats",))
    check_node("Tile", {"x": X, "repeats": np.array([1, 0, 2])}, opset=13)
    with pytest.raises(AnalysisError, match="one entry per axis"):
        typed_node("Tile", {"x": X, "repeats": np.array([2, 2])}, opset=13, constants=("repeats",))


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_matches_onnxruntime(mode):
    data = RNG.standard_normal((2, 8, 3, 2)).astype(np.float32)
    check_node("DepthToSpace", {"x": data}, opset=13, blocksize=2, mode=mode)


def test_space_to_depth_matches_onnxruntime_and_inverts_depth_to_space():
    data = RNG.standard_normal((2, 3, 4, 6)).astype(np.float32)
    check_node("SpaceToDepth", {"x": data}, opset=13, blocksize=2)
    for mode in ("DCR", "CRD"):
        packed = run_node("SpaceToDepth", {"x": data}, opset=28, blocksize=2, mode=mode)[0]
        assert packed.shape == (2, 12, 2, 3)
        unpacked = run_node("DepthToSpace", {"x": packed}, opset=13, blocksize=2, mode=mode)[0]
        np.testing.assert_array_equal(unpacked, data)


def test_space_to_depth_needs_divisible_spatial_dims():
    with pytest.raises(AnalysisError, match="height: 5 is not a multiple of 2"):
        typed_node("SpaceToDepth", {"x": np.ones((1, 1, 5, 4), np.float32)}, opset=13, blocksize=2)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [-6, -1, 0, 2, 7])
def test_trilu_matches_numpy_triangles(upper, k):
    data = RNG.integers(1, 9, (2, 4, 5)).astype(np.int64)
    got = run_node("Trilu", {"x": data, "k": np.array(k, np.int64)}, opset=14, upper=upper)[0]
    expected = np.triu(data, k) if upper else np.tril(data, k)
    np.testing.assert_array_equal(got, expected)
    check_node("Trilu", {"x": data.astype(np.float32), "k": np.array(k, np.int64)}, opset=14, upper=upper)


def test_reverse_sequence_hand_computed():
    data = np.arange(16, dtype=np.float32).reshape(4, 4)
    by_batch = run_node("ReverseSequence", {"x": data, "lens": np.array([1, 2, 3, 4])}, opset=10,
                        batch_axis=0, time_axis=1)[0]
    assert by_batch.tolist() == [[0, 1, 2, 3], [5, 4, 6, 7], [10, 9, 8, 11], [15, 14, 13, 12]]
    by_time = run_node("ReverseSequence", {"x": data, "lens": np.array([4, 3, 2, 1])}, opset=10,
                       batch_axis=1, time_axis=0)[0]
    assert by_time.tolist() == [[12, 9, 6, 3], [8, 5, 2, 7], [4, 1, 10, 11], [0, 13, 14, 15]]
    check_node("ReverseSequence", {"x": RNG.standard_normal((3, 2, 5)).astype(np.float32),
                                   "lens": np.array([3, 1])}, opset=10, batch_axis=1, time_axis=0)


def test_reverse_sequence_errors():
    with pytest.raises(AnalysisError, match="3 sequence lengths for a batch of 4"):
        typed_node("ReverseSequence", {"x": np.ones((4, 4), np.float32), "lens": np.array([1, 2, 3])}, opset=10,
                   batch_axis=0, time_axis=1)
    with pytest.raises(RunError, match=r"in \[0, 4\]"):
        run_node("ReverseSequence", {"x": np.ones((4, 4), np.float32), "lens": np.array([1, 2, 3, 5])}, opset=10,
                 batch_axis=0, time_axis=1)


def test_center_crop_pad_hand_computed():
    data = np.arange(5 * 4, dtype=np.float32).reshape(5, 4)
    got = run_node("CenterCropPad", {"x": data, "shape": np.array([2, 7])}, opset=18)[0]
    assert got.shape == (2, 7)
    # rows 1-2 kept (crop starts at floor((5-2)/2)); 3 columns of padding: 1 left, 2 right
    np.testing.assert_array_equal(got[:, 1:5], data[1:3])
    assert (got[:, 0] == 0).all() and (got[:, 5:] == 0).all()
    only_cols = run_node("CenterCropPad", {"x": data, "shape": np.array([2])}, opset=18, axes=[-1])[0]
    np.testing.assert_array_equal(only_cols, data[:, 1:3])
    typed = typed_node("CenterCropPad", {"x": data, "shape": np.array([2, 7])}, opset=18, constants=("shape",))
    assert typed.output_fact(0).shape == (2, 7)


@pytest.mark.parametrize("start, limit, delta, dtype", [
    (0, 10, 3, np.int64), (10, 4, -3, np.int32), (1.0, 5.0, 0.5, np.float32), (5, 1, 1, np.int64),
    (-2.5, 2.5, 1.25, np.float64),
])
def test_range_matches_onnxruntime(start, limit, delta, dtype):
    inputs = {"start": np.array(start, dtype), "limit": np.array(limit, dtype), "delta": np.array(delta, dtype)}
    check_node("Range", inputs, opset=11)
    check_node("Range", inputs, opset=11, constants=("start", "limit", "delta"))


def test_range_half_precision_and_errors():
    got = run_node("Range", {"start": np.array(1, np.float16), "limit": np.array(5, np.float16),
                             "delta": np.array(2, np.float16)}, opset=27)[0]
    assert got.dtype == np.float16 and got.tolist() == [1.0, 3.0]
    with pytest.raises(RunError, match="Range delta is 0"):
        run_node("Range", {"start": np.array(1), "limit": np.array(5), "delta": np.array(0)}, opset=11)
    with pytest.raises(AnalysisError, match="share a datum type"):
        typed_node("Range", {"start": np.array(1), "limit": np.array(5.0), "delta": np.array(1)}, opset=11)


@pytest.mark.parametrize("k", [-2, 0, 1, 4])
def test_eye_like_matches_onnxruntime(k):
    check_node("EyeLike", {"x": np.zeros((3, 5), np.int32)}, opset=9, k=k)
    check_node("EyeLike", {"x": np.zeros((4, 2), np.int32)}, opset=9, k=k, dtype=1)


def test_eye_like_needs_a_matrix():
    with pytest.raises(AnalysisError, match="EyeLike needs a 2-d input"):
        typed_node("EyeLike", {"x": np.zeros((3,), np.float32)}, opset=9)


@pytest.mark.parametrize("op, inputs", [
    ("Expand", {"x": X, "shape": np.array([1, 3, 1])}),
    ("Tile", {"x": X, "repeats": np.array([1, 1, 1])}),
    ("Pad", {"x": X, "pads": np.zeros(6, np.int64)}),
    ("Slice", {"x": X, "starts": np.array([0]), "ends": np.array([1 << 62]), "axes": np.array([1])}),
])
def test_no_op_data_movement_is_decluttered_away(op, inputs):
    from .single_node import single_node

    constants = tuple(name for name in inputs if name != "x")
    proto, feeds = single_node(op, inputs, opset=13, constants=constants)
    optimized = tractile.load(proto)
    assert op not in {node.op.name for node in optimized.nodes}
    np.testing.assert_array_equal(optimized.run(feeds)[0], X)


def test_reversing_slice_is_not_a_no_op():
    from .single_node import single_node

    proto, feeds = single_node("Slice", {"x": X, "starts": np.array([-1]), "ends": np.array([-1 << 62]),
                                         "axes": np.array([2]), "steps": np.array([-1])}, opset=13,
                               constants=("starts", "ends", "axes", "steps"))
    np.testing.assert_array_equal(tractile.load(proto).run(feeds)[0], X[:, :, ::-1])


def test_data_sized_allocations_check_the_limit():
    try:
        tractile.set_limits(max_tensor_bytes=1 << 16)
        with pytest.raises(RunError, match="Tile: .* over the limit"):
            run_node("Tile", {"x": np.ones((4, 4), np.float32), "repeats": np.array([100, 100])}, opset=13)
        with pytest.raises(RunError, match="Range: .* over the limit"):
            run_node("Range", {"start": np.array(0), "limit": np.array(1 << 20), "delta": np.array(1)}, opset=11)
        with pytest.raises(RunError, match="OneHot: .* over the limit"):
            run_node("OneHot", {"indices": np.arange(100), "depth": np.array(1000),
                                "values": np.array([0.0, 1.0], np.float32)}, opset=11)
    finally:
        tractile.set_limits(max_tensor_bytes=8 << 30)
