"""Det: determinants of (batches of) square matrices."""
from __future__ import annotations

import numpy as np
import pytest

import tractile
from tractile.errors import AnalysisError

from .onnx_builder import model, node, value
from .single_node import check_node, run_node

RNG = np.random.default_rng(21)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 3, 5, 5), (1, 1)])
def test_det_matches_onnxruntime(shape):
    check_node("Det", {"x": RNG.standard_normal(shape).astype(np.float32)}, opset=11, rtol=1e-4, atol=1e-5)


def test_det_f64_by_hand():
    x = np.array([[[2.0, 1.0], [7.0, 4.0]], [[1.0, 2.0], [2.0, 4.0]], [[0.0, 3.0], [5.0, 1.0]]])
    (out,) = run_node("Det", {"x": x}, opset=11)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [1.0, 0.0, -15.0], atol=1e-12)


def test_det_f16_runs_in_f32():
    x = np.array([[1.5, 2.0, 0.0], [0.5, -1.0, 4.0], [2.0, 0.0, 1.0]], np.float16)
    (out,) = run_node("Det", {"x": x}, opset=22)
    assert out.dtype == np.float16 and out.shape == ()
    # 1.5 * (-1 - 0) - 2 * (0.5 - 8) + 0 = 13.5
    assert float(out) == 13.5


def test_det_keeps_a_symbolic_batch():
    proto = model([node("Det", ["x"], ["y"])], [value("x", "f32", ["N", 3, 3])], [value("y")], opset=11)
    typed = tractile.load(proto)
    assert str(typed.output_fact(0)) == "N,f32"
    x = RNG.standard_normal((4, 3, 3)).astype(np.float32)
    (out,) = typed.run([x])
    np.testing.assert_allclose(out, np.linalg.det(x.astype(np.float64)), rtol=1e-4)


def test_det_of_a_non_square_matrix_is_an_analysis_error():
    proto = model([node("Det", ["x"], ["y"])], [value("x", "f32", [2, 3])], [value("y")], opset=11)
    with pytest.raises(AnalysisError, match="Det needs square matrices, got 2 x 3"):
        tractile.load(proto)
