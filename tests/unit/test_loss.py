"""NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss."""
import numpy as np
import pytest

import tractile
from tractile.errors import AnalysisError, RunError

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value

RNG = np.random.default_rng(5)


def nll_model(reduction, weight=False, ignore_index=None, shape=(3, 4, 2)):
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    inputs = ["x", "t"] + (["w"] if weight else [])
    ins = [value("x", "f32", list(shape)), value("t", "i64", [shape[0], *shape[2:]])]
    ins += [value("w", "f32", [shape[1]])] if weight else []
    return model([node("NegativeLogLikelihoodLoss", inputs, ["loss"], **attrs)], ins, [value("loss")], opset=13)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weight", [False, True])
def test_nll_matches_onnxruntime(reduction, weight):
    x = RNG.standard_normal((3, 4, 2)).astype(np.float32)
    t = np.array([[0, 3], [1, 1], [2, 0]], np.int64)
    w = np.array([0.5, 1.0, 2.0, 0.25], np.float32)
    proto = nll_model(reduction, weight, ignore_index=1)
    inputs = [x, t] + ([w] if weight else [])
    (ours,) = tractile.load(proto).run(inputs)
    (theirs,) = run_onnxruntime(proto, inputs)
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_nll_mean_by_hand():
    x = np.array([[-1.0, -2.0, -3.0], [-0.5, -0.25, -4.0]], np.float32)
    t = np.array([2, 0], np.int64)
    (loss,) = tractile.load(nll_model("mean", shape=(2, 3))).run([x, t])
    assert loss.shape == () and loss == pytest.approx((3.0 + 0.5) / 2)


def test_negative_ignore_index_is_skipped_not_indexed():
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    t = np.array([-5, 1], np.int64)
    (loss,) = tractile.load(nll_model("sum", ignore_index=-5, shape=(2, 3))).run([x, t])
    assert loss == pytest.approx(-x[1, 1])


def test_label_out_of_range_is_a_run_error():
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    with pytest.raises(RunError, match="label 7 is out of range for 3 classes"):
        tractile.load(nll_model("sum", shape=(2, 3))).run([x, np.array([7, 0], np.int64)])


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_softmax_cross_entropy_with_log_prob(reduction):
    x = RNG.standard_normal((2, 5, 3)).astype(np.float32)
    t = RNG.integers(0, 5, (2, 3)).astype(np.int64)
    t[0, 1] = -1
    proto = model([node("SoftmaxCrossEntropyLoss", ["x", "t"], ["loss", "logp"], reduction=reduction,
                        ignore_index=-1)],
                  [value("x", "f32", [2, 5, 3]), value("t", "i64", [2, 3])], [value("loss"), value("logp")],
                  opset=13)
    loss, log_prob = tractile.load(proto).run([x, t])
    shifted = x.astype(np.float64) - x.max(axis=1, keepdims=True)
    expected_log_prob = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(log_prob, expected_log_prob, rtol=1e-5, atol=1e-6)
    theirs = run_onnxruntime(proto, [x, t])
    np.testing.assert_allclose(loss, theirs[0], rtol=1e-5)


def test_labels_of_wrong_shape_are_an_analysis_error():
    proto = model([node("NegativeLogLikelihoodLoss", ["x", "t"], ["loss"])],
                  [value("x", "f32", [2, 3, 4]), value("t", "i64", [2, 3])], [value("loss")], opset=13)
    with pytest.raises(AnalysisError, match="labels should be integers of shape"):
        tractile.load(proto)


def test_unknown_reduction_names_the_node():
    from tractile.errors import ModelFormatError

    proto = model([node("SoftmaxCrossEntropyLoss", ["x", "t"], ["loss"], reduction="avg")],
                  [value("x", "f32", [2, 3]), value("t", "i64", [2])], [value("loss")], opset=13)
    with pytest.raises(ModelFormatError, match='SoftmaxCrossEntropyLoss node "loss".*reduction must be one of'):
        tractile.load(proto)
