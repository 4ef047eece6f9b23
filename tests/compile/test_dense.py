"""The core MatMul compiled: TFLite's FULLY_CONNECTED (float, int8 per-tensor and per-channel in
both integer flavours, uint8, 16x8), BATCH_MATMUL (float, int8, int16, transposed operands) and
hybrid products, bit for bit with the interpreter (floats within 1e-5)."""
from __future__ import annotations

import numpy as np
import pytest

from tractile.datum import DatumType
from tractile.fact import TypedFact

from ..tflite.builder import GraphBuilder, q, qc
from .harness import check_against_interpreter

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("dtype,flavour", [("i8", "reference"), ("i8", "micro"), ("u8", "reference"),
                                           ("u8", "micro"), ("i16", "reference"), ("i16", "micro")])
def test_quantized_fully_connected(dtype, flavour, compile_cache):
    g = GraphBuilder()
    units, depth = (21 if dtype == "i8" else 11), 37  # int8: a block of 16 outputs (vectorised rescale) and a tail
    if dtype == "u8":
        x_q, w_q, w = q(0.04, 120), q(0.013, 131), RNG.integers(0, 256, (units, depth))
        bias_type, out_q, w_type = "i32", q(0.2, 100), "u8"
    elif dtype == "i8":
        x_q, w_q, w = q(0.05, -7), qc(np.linspace(0.003, 0.02, units), 0), RNG.integers(-127, 128, (units, depth))
        bias_type, out_q, w_type = "i32", q(0.3, 3), "i8"
    else:
        x_q, w_q, w = q(0.0004), qc(np.linspace(0.002, 0.01, units), 0), RNG.integers(-127, 128, (units, depth))
        bias_type, out_q, w_type = "i64", q(0.002), "i8"
    x = g.input("x", dtype, (3, 1, depth), x_q)
    weights = g.const("w", w, w_type, w_q)
    bias = g.const("b", RNG.integers(-3000, 3000, units), bias_type)
    model = g.outputs(g.dense("fc", x, weights, bias, quant=out_q, activation="RELU", flavour=flavour))
    check_against_interpreter(model.into_optimized(), compile_cache, runs=4, name=f"fc_{dtype}_{flavour}")


@pytest.mark.parametrize("activation", ["RELU6", "TANH"])
def test_float_fully_connected(activation, compile_cache):
    g = GraphBuilder()
    x = g.input("x", "f32", (2, 3, 9))
    w = g.const("w", RNG.standard_normal((5, 27)).astype(np.float32))
    b = g.const("b", RNG.standard_normal(5).astype(np.float32))
    model = g.outputs(g.dense("fc", x, w, b, activation=activation))
    check_against_interpreter(model.into_optimized(), compile_cache, runs=3, name="fc_f32")


@pytest.mark.parametrize("dtype", ["i8", "i16"])
@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, True)])
def test_quantized_batch_matmul(dtype, adj_x, adj_y, compile_cache):
    from tractile.ops.matmul import MatMul

    zero = 0 if dtype == "i16" else 1
    scale = 0.0005 if dtype == "i16" else 0.05
    g = GraphBuilder()
    a = g.input("a", dtype, (2, 1, 6, 3) if adj_x else (2, 1, 3, 6), q(scale, -4 * zero))
    b = g.input("b", dtype, (3, 4, 6) if adj_y else (3, 6, 4), q(scale * 1.3, 3 * zero))
    op = MatMul(transpose_a=adj_x, transpose_b=adj_y, quant=q(scale * 40, 5 * zero), flavour="micro")
    model = g.outputs(g.op("bmm", op, [a, b]))
    assert model.output_facts[0] == TypedFact(DatumType(dtype), (2, 3, 3, 4), qparams=q(scale * 40, 5 * zero))
    check_against_interpreter(model, compile_cache, runs=4, name=f"bmm_{dtype}")


@pytest.mark.parametrize("adj_x,adj_y", [(True, False), (False, True)])
def test_float_batch_matmul_with_transposed_operands(adj_x, adj_y, compile_cache):
    from tractile.ops.matmul import MatMul

    g = GraphBuilder()
    a = g.input("a", "f32", (2, 1, 5, 3) if adj_x else (2, 1, 3, 5))
    b = g.input("b", "f32", (3, 4, 5) if adj_y else (3, 5, 4))
    model = g.outputs(g.op("bmm", MatMul(transpose_a=adj_x, transpose_b=adj_y), [a, b]))
    check_against_interpreter(model, compile_cache, runs=3, name="bmm_f32")


def test_float_batch_matmul_in_register_blocks(compile_cache):
    """Two computed operands, broadcast batches: 7 rows (a block of four and three alone) by 37
    columns (two blocks of 16 and five by the loop), as the attention's products are run."""
    from tractile.ops.matmul import MatMul

    g = GraphBuilder()
    a = g.input("a", "f32", (2, 1, 7, 9))
    b = g.input("b", "f32", (3, 9, 37))
    model = g.outputs(g.op("bmm", MatMul(), [a, b]))
    check_against_interpreter(model, compile_cache, runs=2, name="bmm_blocks")


def test_int8_embedding_lookup_compiles_as_a_gather(compile_cache):
    from tractile.formats.tflite import load_tflite
    from tractile.formats.tflite.writer import write_model
    from tractile.ops.indexing import Gather

    g = GraphBuilder()
    ids = g.input("ids", "i32", (5,))
    table = g.const("table", RNG.integers(-128, 128, (7, 3)), "i8", q(0.03, 4))
    model = load_tflite(write_model(g.outputs(g.op("lookup", Gather(axis=0), [table, ids]))))
    rng = np.random.default_rng(1)
    check_against_interpreter(model, compile_cache, inputs=[[rng.integers(0, 7, 5).astype(np.int32)]
                                                            for _ in range(3)], name="lookup")
