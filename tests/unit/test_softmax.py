"""Softmax, LogSoftmax and Hardmax, including the flattening semantics of opsets before 13."""
import numpy as np
import pytest

import tractile
from tractile.errors import AnalysisError

from ..conftest import run_onnxruntime
from .onnx_builder import model, node, value

RNG = np.random.default_rng(31)


def single(op, shape, opset, **attrs):
    return model([node(op, ["x"], ["y"], **attrs)], [value("x", "f32", list(shape))], [value("y")], opset=opset)


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset,axis", [(11, 1), (11, 0), (13, 1), (13, -1)])
def test_softmax_family_matches_onnxruntime(op, opset, axis):
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    proto = single(op, x.shape, opset, axis=axis)
    (ours,) = tractile.load(proto).run([x])
    (theirs,) = run_onnxruntime(proto, [x])
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_legacy_log_softmax_flattens_trailing_axes():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    (y,) = tractile.load(single("LogSoftmax", x.shape, 11, axis=1)).run([x])
    rows = x.reshape(2, 12).astype(np.float64)
    expected = rows - np.log(np.exp(rows).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(y, expected.reshape(x.shape), rtol=1e-5, atol=1e-6)


def test_hardmax_picks_the_first_maximum():
    x = np.array([[3.0, 1.0, 3.0], [0.0, 2.0, 2.0]], np.float32)
    (y,) = tractile.load(single("Hardmax", x.shape, 13)).run([x])
    np.testing.assert_array_equal(y, [[1, 0, 0], [0, 1, 0]])


def test_axis_out_of_range_is_an_analysis_error():
    with pytest.raises(AnalysisError, match="axis 3 is out of range for rank 2"):
        tractile.load(single("Hardmax", (2, 3), 13, axis=3))


def test_legacy_softmax_on_the_last_axis_declutters_to_the_modern_op():
    x = RNG.standard_normal((2, 5)).astype(np.float32)
    typed = tractile.load(single("Softmax", x.shape, 11, axis=1))
    (softmax,) = [n.op for n in typed.nodes if n.op.name == "Softmax"]
    assert not softmax.legacy and softmax.axis == -1
    np.testing.assert_allclose(typed.run([x])[0].sum(axis=1), 1, rtol=1e-6)
