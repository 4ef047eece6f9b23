"""Hybrid (dynamic-range) models compiled: FULLY_CONNECTED (per-tensor and per-channel weights,
symmetric and asymmetric rows), SVDF and LSTM (CIFG, peepholes, projection), equal to the
interpreter's hybrid arithmetic, the state carried over the runs."""
from __future__ import annotations

import numpy as np
import pytest

from ..tflite.builder import GraphBuilder, q, qc
from ..tflite.test_hybrid import hybrid_lstm_model, svdf_model
from .harness import check_against_interpreter

RNG = np.random.default_rng(3)


def float_runs(model, count, seed=0):
    rng = np.random.default_rng(seed)
    return [[(rng.standard_normal(tuple(f.shape)) * 2 + 0.7 * (k % 2)).astype(np.float32)
             for f in model.input_facts] for k in range(count)]


@pytest.mark.parametrize("per_channel,asymmetric,activation", [(False, False, "RELU"), (True, True, "TANH"),
                                                               (True, False, "NONE")])
def test_hybrid_fully_connected(per_channel, asymmetric, activation, compile_cache):
    g = GraphBuilder()
    x = g.input("x", "f32", (3, 40))
    w_q = qc(np.linspace(0.01, 0.03, 16), 0) if per_channel else q(0.02)
    w = g.const("w", RNG.integers(-127, 128, (16, 40)), "i8", w_q)
    b = g.const("b", RNG.standard_normal(16).astype(np.float32)) if activation != "NONE" else None
    model = g.outputs(g.dense("fc", x, w, b, asymmetric=asymmetric, activation=activation)).into_optimized()
    check_against_interpreter(model, compile_cache, inputs=float_runs(model, 4), name="hybrid_fc")


@pytest.mark.parametrize("asymmetric", [False, True])
def test_hybrid_svdf(asymmetric, compile_cache):
    model = svdf_model(asymmetric)
    cm = check_against_interpreter(model, compile_cache, inputs=float_runs(model, 8), stateful=True,
                                   name="hybrid_svdf")
    assert cm.report["state_bytes"] == 2 * 8 * 6 * 4


@pytest.mark.parametrize("variant", [dict(), dict(asymmetric=False, cifg=True, peepholes=True),
                                     dict(projection=3, cell_clip=1.2, proj_clip=0.5, time_major=True, batch=3)])
def test_hybrid_lstm(variant, compile_cache):
    model = hybrid_lstm_model(**variant)
    check_against_interpreter(model, compile_cache, inputs=float_runs(model, 5), stateful=True,
                              name="hybrid_lstm")


def test_hybrid_kernels_build_without_warnings(tmp_path):
    from tractile.compile import generate

    from .harness import assert_builds_without_warnings

    for index, model in enumerate([hybrid_lstm_model(projection=3, peepholes=True), svdf_model(True)]):
        assert_builds_without_warnings(generate(model, name=f"hybrid{index}"), tmp_path / str(index))
