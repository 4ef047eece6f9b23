"""TensorFlow array, math, reduction and selection op translations against TensorFlow: shapes and
slicing (StridedSlice masks, SplitV -1, Squeeze), padding modes, gathers, Range, OneHot, Where,
Select (v1 and v2), TopKV2, Unique, Cumsum, Einsum, reductions and activations.

Inputs often go through a Relu or an Add first, so that translations that read an input's fact
see a computed tensor, not a graph input."""
from __future__ import annotations

import numpy as np
import pytest

from .test_ops import RNG, by_name, check, load_frozen, normal, tensorflow_outputs, tf


def integers(*shape, low=-5, high=6, dtype=np.int32) -> np.ndarray:
    return RNG.integers(low, high, shape).astype(dtype)


@pytest.mark.parametrize("op", ["Identity", "StopGradient", "Snapshot", "PreventGradient"])
def test_pass_throughs(tmp_path, op):
    check(tmp_path, lambda x: getattr(tf.raw_ops, op)(input=tf.nn.relu(x)) * 2.0, normal(3, 4))


def test_identity_n_and_no_op(tmp_path):
    def graph(x, y):
        with tf.control_dependencies([tf.raw_ops.NoOp()]):
            a, b = tf.raw_ops.IdentityN(input=[x + 1.0, y * 2])
        return a - 1.0, b + 1

    check(tmp_path, graph, normal(2, 3), integers(4))


@pytest.mark.parametrize("start,limit,delta,dtype", [(0, 7, 1, tf.int32), (3, -4, -2, tf.int64),
                                                     (0.5, 3.0, 0.75, tf.float32)])
def test_range(tmp_path, start, limit, delta, dtype):
    check(tmp_path, lambda x: x + tf.cast(tf.range(start, limit, delta, dtype=dtype), x.dtype), normal(1))


def test_range_to_a_computed_limit(tmp_path):
    check(tmp_path, lambda x: (tf.range(tf.shape(x)[1]) * 2, tf.range(1.5, tf.cast(tf.size(x), tf.float32), 2.5)),
          normal(2, 5), dynamic=True)


@pytest.mark.parametrize("indices", [[[1, 0], [0, 2]], [[1], [0], [1]], [[[0, 1, 2]], [[1, 0, 0]]]])
def test_gather_nd(tmp_path, indices):
    check(tmp_path, lambda x: tf.gather_nd(tf.nn.relu(x), indices), normal(2, 3, 4))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_v2(tmp_path, axis):
    check(tmp_path, lambda x, i: tf.gather(x * 2.0, i, axis=axis), normal(3, 4, 3), integers(2, 2, low=0, high=3))


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1])
def test_cumsum_and_cumprod(tmp_path, exclusive, reverse, axis):
    check(tmp_path, lambda x, i: (tf.math.cumsum(x, axis, exclusive=exclusive, reverse=reverse),
                                  tf.math.cumprod(x, axis, exclusive=exclusive, reverse=reverse),
                                  tf.math.cumsum(i, axis, exclusive=exclusive, reverse=reverse)),
          normal(3, 4), integers(3, 4))


@pytest.mark.parametrize("equation,shapes", [("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]),
                                             ("...ij,...j->...i", [(2, 3, 4), (2, 4)]), ("ii->i", [(4, 4)]),
                                             ("abc->cb", [(2, 3, 4)])])
def test_einsum(tmp_path, equation, shapes):
    check(tmp_path, lambda *xs: tf.einsum(equation, *xs), *[normal(*s) for s in shapes])


REDUCERS = ("reduce_mean", "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_euclidean_norm")


@pytest.mark.parametrize("axis", [None, 1, [0, 2], -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions(tmp_path, axis, keepdims):
    """Mean, Sum, Max, Min, Prod and EuclideanNorm (outputs in this order)."""
    check(tmp_path, lambda x: [getattr(tf.math, reducer)(x + 0.5, axis=axis, keepdims=keepdims)
                               for reducer in REDUCERS], normal(2, 3, 4))


@pytest.mark.parametrize("axis", [None, 0, [1]])
@pytest.mark.parametrize("keepdims", [False, True])
def test_all_and_any(tmp_path, axis, keepdims):
    x = normal(3, 4)
    check(tmp_path, lambda x: (tf.reduce_all(x > -0.5, axis=axis, keepdims=keepdims),
                               tf.reduce_any(x > 1.0, axis=axis, keepdims=keepdims)), x)


@pytest.mark.parametrize("paddings", [[[1, 2], [0, 3]], [[0, 0], [2, 2]], [[3, 1], [1, 0]]])
def test_pad_modes(tmp_path, paddings):
    """Modes CONSTANT, REFLECT and SYMMETRIC (outputs in this order)."""
    check(tmp_path, lambda x: [tf.pad(tf.nn.relu(x), paddings, mode=mode)
                               for mode in ("CONSTANT", "REFLECT", "SYMMETRIC")], normal(4, 5))


def test_pad_v2_with_a_value(tmp_path):
    check(tmp_path, lambda x: tf.pad(x, [[1, 0], [2, 1]], constant_values=-3.5), normal(2, 3))


@pytest.mark.parametrize("sizes", [[2, -1, 1], [-1, 3], [6]])
def test_split_v_with_an_inferred_size(tmp_path, sizes):
    check(tmp_path, lambda x: tf.split(tf.nn.relu(x), sizes, axis=1), normal(2, 6, 3))


def test_split_and_unpack_and_pack(tmp_path):
    check(tmp_path, lambda x: tf.split(x, 3, axis=-1) + tf.unstack(x, axis=1)
          + [tf.stack([x, x * 2.0], axis=1)], normal(2, 4, 6))


SLICES = {
    "plain": lambda x: x[1:3, ::2, -3:],
    "negative_steps": lambda x: x[::-1, 3:0:-2, :],
    "shrink": lambda x: x[1, :, -1],
    "new_axis": lambda x: x[:, tf.newaxis, 1:, tf.newaxis],
    "ellipsis_first": lambda x: x[..., 1],
    "ellipsis_middle": lambda x: x[1:, ..., :2],
    "ellipsis_new_axis": lambda x: x[tf.newaxis, ..., tf.newaxis, 2],
    "begin_end_masks": lambda x: x[:2, 1:, :-1],
    "shrink_last": lambda x: x[-1],
}


def test_strided_slice_masks(tmp_path):
    """Every entry of SLICES, outputs in sorted name order."""
    check(tmp_path, lambda x: [SLICES[name](tf.nn.relu(x)) for name in sorted(SLICES)], normal(4, 5, 6))


@pytest.mark.parametrize("sorted_", [True, False])
@pytest.mark.parametrize("k", [1, 3])
def test_top_k(tmp_path, sorted_, k):
    x = RNG.permutation(30).reshape(5, 6).astype(np.float32)
    function = lambda x: tf.math.top_k(x * 2.0, k=k, sorted=sorted_)  # noqa: E731
    values, indices = load_frozen(tmp_path, function, x).run(None, by_name([x]))
    expected_values, expected_indices = tensorflow_outputs(function, x)
    assert indices.dtype == np.int32 and values.dtype == np.float32
    if not sorted_:  # the order is unspecified: compare each row's entries sorted
        order, expected_order = np.argsort(-values, axis=1), np.argsort(-expected_values, axis=1)
        values, indices = np.take_along_axis(values, order, 1), np.take_along_axis(indices, order, 1)
        expected_values = np.take_along_axis(expected_values, expected_order, 1)
        expected_indices = np.take_along_axis(expected_indices, expected_order, 1)
    np.testing.assert_array_equal(values, expected_values)
    np.testing.assert_array_equal(indices, expected_indices)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(tmp_path, axis):
    check(tmp_path, lambda i: tf.one_hot(i, 4, on_value=2.5, off_value=-1.0, axis=axis),
          integers(3, 2, low=-1, high=5))


def test_where_with_one_input(tmp_path):
    check(tmp_path, lambda x: tf.where(tf.nn.relu(x) > 0.2), normal(3, 4, 2))


@pytest.mark.parametrize("cond_shape", [(4,), (4, 3), ()])
def test_v1_select(tmp_path, cond_shape):
    def graph(x, y, c):
        return tf.compat.v1.where(tf.logical_not(c), x + 1.0, y)

    cond = RNG.random(cond_shape) > 0.5
    check(tmp_path, graph, normal(4, 3), normal(4, 3), np.asarray(cond))


def test_select_v2_broadcasts(tmp_path):
    check(tmp_path, lambda c, x, y: tf.where(c, x, y), RNG.random((1, 3)) > 0.5, normal(4, 1), normal(4, 3))


def test_squeeze_without_dims_and_with(tmp_path):
    check(tmp_path, lambda x: (tf.squeeze(x * 1.0), tf.squeeze(x, [0]), tf.expand_dims(x, -1)), normal(1, 3, 1, 2))


def test_activations(tmp_path):
    """Every function below, outputs in sorted name order."""
    functions = {
        "leaky_relu": lambda x: tf.nn.leaky_relu(x, alpha=0.15), "elu": tf.nn.elu, "selu": tf.nn.selu,
        "relu6": tf.nn.relu6, "softplus": tf.nn.softplus, "softsign": tf.nn.softsign, "sigmoid": tf.sigmoid,
        "tanh": tf.tanh, "gelu": tf.nn.gelu, "swish": tf.nn.silu,
        "clip": lambda x: tf.clip_by_value(x, -0.5, tf.constant([0.1, 0.7, 2.0])),
        "rsqrt": lambda x: tf.math.rsqrt(x * x + 0.1), "square": tf.square,
    }
    check(tmp_path, lambda x: [functions[name](x) for name in sorted(functions)], normal(4, 3) * 3)


@pytest.mark.parametrize("shape", [(2, 5), (2, 3, 5), (2, 3, 4, 5)])
def test_softmax_and_log_softmax_on_any_rank(tmp_path, shape):
    check(tmp_path, lambda x: (tf.nn.softmax(x), tf.nn.log_softmax(x)), normal(*shape))


@pytest.mark.parametrize("output_type", [tf.int32, tf.int64])
def test_arg_max_and_min(tmp_path, output_type):
    x = RNG.permutation(24).reshape(2, 3, 4).astype(np.float32)
    check(tmp_path, lambda x: (tf.argmax(x, 1, output_type=output_type), tf.argmin(x, -1, output_type=output_type)), x)


def test_unique(tmp_path):
    values, indices = check(tmp_path, lambda x: tf.unique(x * 2), integers(12, low=0, high=5))
    assert indices.dtype == np.int32


@pytest.mark.parametrize("axes", [[0], [1, 2], [-1], [-1, 0]])
def test_reverse(tmp_path, axes):
    check(tmp_path, lambda x: tf.reverse(tf.nn.relu(x), axes), normal(2, 3, 4))


def test_integer_math(tmp_path):
    a, b = integers(4, 5), integers(4, 5, low=1, high=4) * np.where(RNG.random((4, 5)) > 0.5, 1, -1).astype(np.int32)
    check(tmp_path, lambda a, b: (a // b, a % b, tf.raw_ops.TruncateDiv(x=a, y=b), tf.raw_ops.TruncateMod(x=a, y=b)),
          a, b)


def test_div_no_nan(tmp_path):
    y = normal(3, 4)
    y[0, 1] = y[2, 3] = 0.0
    check(tmp_path, lambda x, y: tf.math.divide_no_nan(x, y), normal(3, 4), y)


def test_shape_ops(tmp_path):
    def graph(x):
        y = tf.nn.relu(x)
        filled = tf.fill(tf.shape(y)[1:], 2.0)
        return (tf.shape(y), tf.size(y), tf.rank(y), tf.tile(y, [2, 1, 3]) + 1.0, filled,
                tf.reshape(y, [-1, 4]), tf.transpose(y, [2, 0, 1]), tf.concat([y, y * 2.0], axis=-1),
                tf.cast(y * 4.0, tf.int32), tf.zeros_like(y), tf.ones_like(y), tf.broadcast_to(y[:1], [3, 3, 4]))

    check(tmp_path, graph, normal(2, 3, 4))


@pytest.mark.parametrize("batch_axis,seq_axis", [(0, 1), (1, 0), (2, 1)])
def test_reverse_sequence(tmp_path, batch_axis, seq_axis):
    x = normal(3, 4, 3)
    lengths = RNG.integers(0, x.shape[seq_axis] + 1, x.shape[batch_axis]).astype(np.int32)
    check(tmp_path, lambda x, n: tf.reverse_sequence(x * 2.0, n, seq_axis=seq_axis, batch_axis=batch_axis), x, lengths)


@pytest.mark.parametrize("below,above", [(0, -1), (-1, 0), (1, 2), (0, 0), (-1, -1)])
def test_matrix_band_part(tmp_path, below, above):
    check(tmp_path, lambda x: tf.linalg.band_part(tf.nn.relu(x), below, above), normal(2, 4, 5))


@pytest.mark.parametrize("params_shape,indices_shape,batch_dims", [((2, 3, 4), (2, 5), 1), ((2, 3, 4, 5), (2, 3, 6), 2),
                                                                  ((2, 3), (2, 5), -1)])
def test_gather_with_batch_dims(tmp_path, params_shape, indices_shape, batch_dims):
    rank = len(indices_shape) + batch_dims if batch_dims < 0 else batch_dims
    indices = integers(*indices_shape, low=0, high=params_shape[rank])
    check(tmp_path, lambda p, i: tf.gather(p * 2.0, i, batch_dims=batch_dims), normal(*params_shape), indices)


def test_unsupported_ops_are_listed_together(tmp_path):
    from tractile.errors import UnsupportedOpError

    with pytest.raises(UnsupportedOpError, match=r"2 unsupported TensorFlow op\(s\)(.|\n)*Digamma(.|\n)*Lgamma"):
        load_frozen(tmp_path, lambda x: tf.math.lgamma(x) + tf.math.digamma(tf.nn.relu(x)), normal(3))


def test_translation_errors_name_the_node(tmp_path):
    from tractile.errors import ModelFormatError

    with pytest.raises(ModelFormatError, match=r"FakeQuantWithMinMaxVars node .*input 1 \(min\) must be a constant"):
        load_frozen(tmp_path, lambda x, low: tf.quantization.fake_quant_with_min_max_vars(x, low, 3.0),
                    normal(4), np.float32(-1.0))
    with pytest.raises(ModelFormatError, match=r"SpaceToBatchND node .*needs the input's dims after the batch"):
        load_frozen(tmp_path, lambda x: tf.space_to_batch(x, [2], [[0, 0]]), normal(2, 4, 3), dynamic=True)
