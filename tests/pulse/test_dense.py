"""FULLY_CONNECTED layers applied frame by frame (int8, and hybrid: each frame's row quantized on
its own) stream like the batch model, flattened or keeping their dims."""
from __future__ import annotations

import numpy as np
import pytest

from tractile.dim import symbol
from tractile.ops.matmul import MatMul

from ..tflite.builder import GraphBuilder, q, qc
from .helpers import LENGTH, assert_streams_like_batch


@pytest.mark.parametrize("kind", ["i8", "hybrid"])
@pytest.mark.parametrize("keep", [False, True])
def test_fully_connected_over_frames_streams(kind, keep):
    rng = np.random.default_rng(0)
    g = GraphBuilder()
    x = g.input("x", "i8" if kind == "i8" else "f32", (1, symbol("T"), 8), q(0.05, 3) if kind == "i8" else None)
    w = g.const("w", rng.integers(-127, 128, (5, 8)), "i8", qc(np.linspace(0.01, 0.02, 5), 0))
    if kind == "i8":
        b = g.const("b", rng.integers(-500, 500, 5), "i32")
        y = g.dense("fc", x, w, b, quant=q(0.1, -2), activation="RELU") if not keep else \
            g.op("fc", MatMul(has_bias=True, transpose_b=True, quant=q(0.1, -2)), [x, w, b])
        values = rng.integers(-128, 128, (1, LENGTH, 8)).astype(np.int8)
    else:
        b = g.const("b", rng.standard_normal(5).astype(np.float32))
        y = g.dense("fc", x, w, b, asymmetric=True) if not keep else \
            g.op("fc", MatMul(has_bias=True, transpose_b=True, asymmetric_inputs=True), [x, w, b])
        values = (rng.standard_normal((1, LENGTH, 8)) * 2).astype(np.float32)
    model = g.outputs(y)
    pulsed = assert_streams_like_batch(model, [values])
    assert {p.delay for p in pulsed} == {0}
