"""TensorList gather, scatter, concat and split (what v1 TensorArrays become) against TensorFlow."""
from __future__ import annotations

import numpy as np
import pytest

import tractile

from .oracle import assert_close, tensorflow, write_frozen

NAMES = ("x", "indices", "more", "lengths")


def lists_function(tf):
    def function(x, indices, more, lengths):
        items = tf.raw_ops.TensorListFromTensor(tensor=x, element_shape=tf.constant([3]))
        gathered = tf.raw_ops.TensorListGather(input_handle=items, indices=indices, element_shape=tf.constant([3]),
                                               element_dtype=tf.float32)
        spread = tf.raw_ops.TensorListScatterIntoExistingList(input_handle=items, tensor=more,
                                                              indices=tf.constant([4, 1], tf.int32))
        stacked = tf.raw_ops.TensorListStack(input_handle=spread, element_shape=tf.constant([3]),
                                             element_dtype=tf.float32)
        pieces = tf.raw_ops.TensorListSplit(tensor=x, element_shape=tf.constant([-1, 3]), lengths=lengths)
        joined, joined_lengths = tf.raw_ops.TensorListConcatV2(
            input_handle=pieces, element_shape=tf.constant([-1, 3]), leading_dims=tf.constant([], tf.int64),
            element_dtype=tf.float32)
        last = tf.raw_ops.TensorListGetItem(input_handle=pieces, index=tf.size(lengths) - 1,
                                            element_shape=tf.constant([-1, 3]), element_dtype=tf.float32)
        return gathered, stacked, joined * 2.0, joined_lengths, last

    return function


@pytest.fixture(scope="module")
def lists_model(tmp_path_factory):
    tf = tensorflow()
    function = lists_function(tf)
    specs = (tf.TensorSpec([4, 3], tf.float32), tf.TensorSpec([None], tf.int32), tf.TensorSpec([2, 3], tf.float32),
             tf.TensorSpec([None], tf.int64))
    path = tmp_path_factory.mktemp("lists") / "lists.pb"
    _, outputs = write_frozen(path, function, *specs)
    return tf.function(function), tractile.load(path).into_optimized()


@pytest.mark.parametrize("indices,lengths", [([3, 0, 0], [1, 3]), ([2], [4]), ([1, 2, 3, 0], [2, 0, 2])])
def test_tensor_list_gather_scatter_concat_split_match_tensorflow(lists_model, indices, lengths):
    function, model = lists_model
    rng = np.random.default_rng(len(indices))
    feeds = [rng.standard_normal((4, 3)).astype(np.float32), np.array(indices, np.int32),
             rng.standard_normal((2, 3)).astype(np.float32), np.array(lengths, np.int64)]
    expected = [t.numpy() for t in function(*feeds)]
    got_all = model.run(None, dict(zip(NAMES, feeds)))
    for index, (got, want) in enumerate(zip(got_all, expected)):
        assert_close(got, want, what=f"output {index}")


def test_tensor_list_errors_name_the_op(lists_model):
    _, model = lists_model
    feeds = [np.zeros((4, 3), np.float32), np.array([7], np.int32), np.zeros((2, 3), np.float32),
             np.array([1, 3], np.int64)]
    with pytest.raises(tractile.TractileError, match="TensorListGather index 7 is out of range"):
        model.run(dict(zip(NAMES, feeds)))
    feeds[1], feeds[3] = np.array([0], np.int32), np.array([1, 2], np.int64)
    with pytest.raises(tractile.TractileError, match="do not add up"):
        model.run(dict(zip(NAMES, feeds)))
