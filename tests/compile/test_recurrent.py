"""Ops with memory compiled (SVDF: float, int8 with int8 and int16 memories) and QUANTIZE /
DEQUANTIZE, against the interpreter with the state carried over many invocations."""
from __future__ import annotations

import numpy as np
import pytest

from tractile.datum import DatumType
from tractile.fact import TypedFact
from tractile.ops.tfl.quantize import Dequantize, Quantize
from tractile.ops.tfl.svdf import Svdf

from .harness import check_against_interpreter, q, single_op_model

RNG = np.random.default_rng(11)


@pytest.mark.parametrize("memory_type", ["f32", "i8", "i16"])
@pytest.mark.parametrize("rank", [1, 2])
def test_svdf_carries_its_memory_over_invocations(memory_type, rank, compile_cache):
    batch, depth, filters, memory = 2, 7, 6, 5
    features = RNG.integers(-128, 128, (filters, depth)).astype(np.int8)
    times = RNG.integers(-128, 128, (filters, memory)).astype(np.int8)
    bias = RNG.integers(-500, 500, filters // rank).astype(np.int32)
    if memory_type == "f32":
        features, times, bias = (a.astype(np.float32) / 64 for a in (features, times, bias))
        op = Svdf(rank=rank, activation="RELU", initial_state=np.zeros((batch, memory * filters), np.float32))
        fact = TypedFact(DatumType.F32, (batch, depth))
    else:
        state_zero = -3 if memory_type == "i8" else 0
        state_q = q(0.02 if memory_type == "i8" else 0.0004, state_zero)
        initial = np.full((batch, memory * filters), state_zero, DatumType(memory_type).np)
        x_q = q(0.05, 4)
        op = Svdf(rank=rank, initial_state=initial, state_q=state_q,
                  in_q=(x_q, q(0.01), q(0.015), q(0.0003)), out_q=(q(0.03, -2),))
        fact = TypedFact(DatumType.I8, (batch, depth), None, x_q)
    model = single_op_model(op, [fact, features, times, bias])
    cm = check_against_interpreter(model, compile_cache, runs=25, stateful=True, name="svdf")
    assert cm.report["state_bytes"] == batch * memory * filters * np.dtype(DatumType(memory_type).np).itemsize


@pytest.mark.parametrize("source,target", [("f32", "i8"), ("f32", "i16"), ("f32", "u8"), ("i16", "i8"),
                                           ("i8", "i8"), ("u8", "i8")])
def test_quantize(source, target, compile_cache):
    in_q = None if source == "f32" else q(0.0007 if source == "i16" else 0.02, 0 if source == "i16" else 5)
    out_q = q(0.013, 0 if target == "i16" else (-9 if target == "i8" else 130))
    op = Quantize(in_q=(in_q,), out_q=(out_q,), out_dtypes=(DatumType(target),))
    model = single_op_model(op, [TypedFact(DatumType(source), (4, 33), None, in_q)])
    inputs = None
    if source == "f32":  # ties, saturation and ordinary values
        values = np.concatenate([(np.arange(-40, 40) + 0.5) * 0.013, RNG.standard_normal(52) * 3]).astype(np.float32)
        inputs = [[values.reshape(4, 33)]]
    check_against_interpreter(model, compile_cache, runs=4, inputs=inputs, name="quantize")


@pytest.mark.parametrize("source", ["i8", "u8", "i16"])
def test_dequantize(source, compile_cache):
    in_q = q(0.0123, 0 if source == "i16" else (7 if source == "i8" else 128))
    model = single_op_model(Dequantize(in_q=(in_q,)), [TypedFact(DatumType(source), (3, 17), None, in_q)])
    check_against_interpreter(model, compile_cache, runs=3, rtol=0, atol=0, name="dequantize")
