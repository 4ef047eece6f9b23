"""Random ops: shapes and datum types, seeds, distributions, never folded."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import tractile
from tractile import AnalysisError

from .onnx_builder import model, node, value


def load(nodes, inputs, outputs, opset=22):
    return tractile.load(model(nodes, inputs, outputs, opset=opset))


def test_random_normal_with_a_seed_is_deterministic_and_never_folded():
    typed = load([node("RandomNormal", [], ["y"], shape=[200, 50], mean=3.0, scale=0.5, seed=7.0)],
                 [], [value("y", "f32")])
    assert typed.output_fact(0).shape == (200, 50) and typed.output_fact(0).konst is None
    assert any(n.op.name == "RandomNormal" for n in typed.nodes)
    first, again = typed.run([])[0], typed.run([])[0]
    assert first.dtype == np.float32 and first.shape == (200, 50)
    np.testing.assert_array_equal(first, again)
    assert abs(first.mean() - 3.0) < 0.02 and abs(first.std() - 0.5) < 0.02
    other = load([node("RandomNormal", [], ["y"], shape=[200, 50], mean=3.0, scale=0.5, seed=8.0)],
                 [], [value("y", "f32")]).run([])[0]
    assert not np.array_equal(first, other)


def test_unseeded_random_ops_draw_new_values_every_run():
    typed = load([node("RandomUniform", [], ["y"], shape=[64], dtype=TensorProto.DOUBLE)], [], [value("y", None)])
    a, b = typed.run([])[0], typed.run([])[0]
    assert a.dtype == np.float64 and not np.array_equal(a, b)


@pytest.mark.parametrize("dtype, expected", [(None, np.float16), (TensorProto.DOUBLE, np.float64)])
def test_random_uniform_like_follows_the_input(dtype, expected):
    attrs = {"low": -2.0, "high": -1.0, **({"dtype": dtype} if dtype else {})}
    typed = load([node("RandomUniformLike", ["x"], ["y"], **attrs)], [value("x", "f16", [3, 1000])],
                 [value("y", None)])
    y = typed.plan().state(check_facts=True).run([np.zeros((3, 1000), np.float16)])[0]
    assert y.dtype == expected and y.shape == (3, 1000)
    assert y.min() >= -2.0 and y.max() <= -1.0 and y.std() > 0.2


def test_bernoulli_draws_zeros_and_ones_with_the_given_probabilities():
    typed = load([node("Bernoulli", ["p"], ["y"], seed=1.0, dtype=TensorProto.INT32)], [value("p", "f32", [3, 4000])],
                 [value("y", "i32")])
    p = np.stack([np.zeros(4000), np.ones(4000), np.full(4000, 0.25)]).astype(np.float32)
    y = typed.run([p])[0]
    assert y.dtype == np.int32 and set(np.unique(y)) <= {0, 1}
    assert y[0].sum() == 0 and y[1].sum() == 4000 and abs(y[2].mean() - 0.25) < 0.03
    np.testing.assert_array_equal(y, typed.run([p])[0])


def test_multinomial_samples_class_indices():
    typed = load([node("Multinomial", ["logits"], ["y"], sample_size=500, seed=3.0, dtype=TensorProto.INT64)],
                 [value("logits", "f32", [2, 3])], [value("y", "i64")])
    logits = np.log(np.array([[0, 1, 0], [0.5, 0, 0.5]], np.float32) + 1e-30)
    y = typed.run([logits])[0]
    assert y.dtype == np.int64 and y.shape == (2, 500)
    assert (y[0] == 1).all() and set(np.unique(y[1])) == {0, 2} and abs((y[1] == 0).mean() - 0.5) < 0.08


def test_random_op_errors_name_the_problem():
    with pytest.raises(AnalysisError, match="RandomNormal produces floats, not i32"):
        load([node("RandomNormal", [], ["y"], shape=[2], dtype=TensorProto.INT32)], [], [value("y", None)])
    with pytest.raises(AnalysisError, match="Multinomial takes \\[batch, classes\\]"):
        load([node("Multinomial", ["x"], ["y"])], [value("x", "f32", [3])], [value("y", None)])


def test_random_ops_inside_a_loop_body_keep_the_loop_unfolded():
    body = helper.make_graph([node("RandomUniform", [], ["r"], shape=[1]), node("Add", ["acc", "r"], ["acc_out"]),
                              node("Identity", ["c"], ["c_out"])], "body",
                             [value("i", "i64", []), value("c", "bool", []), value("acc", "f32", [1])],
                             [value("c_out", "bool", []), value("acc_out", "f32", [1])])
    typed = tractile.load(model([node("Loop", ["n", "", "zero"], ["y"], body=body)], [], [value("y", "f32")],
                                {"n": np.array(10), "zero": np.zeros(1, np.float32)}))
    assert any(n.op.name == "Loop" for n in typed.nodes)
    a, b = typed.run([])[0], typed.run([])[0]
    assert 0 < a[0] < 10 and a[0] != b[0]
