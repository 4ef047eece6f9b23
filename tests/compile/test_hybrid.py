"""Hybrid (dynamic-range) models compiled: FULLY_CONNECTED (per-tensor and per-channel weights,
symmetric and asymmetric rows), SVDF and LSTM (CIFG, peepholes, projection), and the hybrid
convolution hook (``emit_hybrid_conv``), equal to the interpreter's hybrid arithmetic, the state
carried over the runs."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from tractile.compile.ops.hybrid import emit_hybrid_conv
from tractile.compile.registry import emitter
from tractile.datum import DatumType
from tractile.fact import TypedFact
from tractile.ops.activations import Relu
from tractile.ops.base import Op
from tractile.ops.quantized.hybrid import HybridConv

from ..tflite.builder import GraphBuilder, q, qc
from ..tflite.test_hybrid import hybrid_lstm_model, svdf_model
from .harness import check_against_interpreter, single_op_model

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


@dataclass(frozen=True, eq=False)
class _HybridConvOp(Op):
    """A float NHWC convolution by int8 weights through the hybrid hook (what the core
    convolution calls), for testing the hook's C lowering alone."""

    conv: object = None
    strides: tuple = (1, 1)
    dilations: tuple = (1, 1)
    pads: tuple = (0, 0, 0, 0)

    def output_facts(self, inputs):
        x = np.zeros(tuple(inputs[0].shape), np.float32)
        return [TypedFact(DatumType.F32, self.conv(x, self.strides, self.dilations, self.pads).shape)]

    def eval(self, inputs):
        return [np.maximum(self.conv(inputs[0], self.strides, self.dilations, self.pads), 0)]


@emitter(_HybridConvOp)
def _hybrid_conv(e):
    emit_hybrid_conv(e, e.op.conv, e.op.strides, e.op.dilations, e.op.pads, Relu())


@pytest.mark.parametrize("depthwise", [False, True])
def test_hybrid_convolution_hook_compiles(depthwise, compile_cache):
    channels = 6
    if depthwise:  # depth multiplier 2
        conv = HybridConv(RNG.integers(-127, 128, (12, 3, 3, 1)), np.linspace(0.01, 0.02, 12),
                          RNG.standard_normal(12), groups=channels, depthwise=True)
        op = _HybridConvOp(conv=conv, strides=(1, 2), pads=(1, 1, 1, 1))
    else:
        conv = HybridConv(RNG.integers(-127, 128, (8, 3, 2, channels)), np.linspace(0.01, 0.02, 8),
                          RNG.standard_normal(8))
        op = _HybridConvOp(conv=conv, strides=(2, 1), dilations=(1, 2), pads=(1, 0, 1, 2))
    model = single_op_model(op, [TypedFact(DatumType.F32, (2, 7, 6, channels))])
    check_against_interpreter(model, compile_cache, inputs=float_runs(model, 3), name="hybrid_conv")
