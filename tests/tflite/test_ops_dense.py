"""FULLY_CONNECTED, BATCH_MATMUL and EMBEDDING_LOOKUP translated onto the core MatMul and Gather:
float32, int8 (per-tensor and per-channel weights, both integer flavours), uint8, 16x8 and
hybrid models built here, bit-exact with LiteRT's reference kernels (floats within 1e-5) and
written back; the micro flavour against TFLite Micro."""
from __future__ import annotations

import numpy as np
import pytest

from tests.tflite.builder import GraphBuilder, check_model, q, qc, random_values
from tests.tflite.oracle import micro_interpreter, reference_interpreter, run_micro, run_reference
from tractile.datum import DatumType
from tractile.fact import TypedFact
from tractile.formats.tflite import load_tflite
from tractile.formats.tflite.registry import WRITERS, OpSpec
from tractile.formats.tflite.writer import write_model
from tractile.ops.indexing import Gather
from tractile.ops.matmul import MatMul

RNG = np.random.default_rng(24)


def runs(model, count: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [[random_values(fact, rng) for fact in model.input_facts] for _ in range(count)]


@pytest.mark.parametrize("shape,keep", [((3, 10), False), ((2, 3, 10), False), ((2, 3, 10), True), ((10,), False),
                                        ((1, 2, 5), False)])
@pytest.mark.parametrize("activation", ["NONE", "RELU", "TANH"])
def test_float_fully_connected(shape, keep, activation):
    g = GraphBuilder()
    x = g.input("x", "f32", shape)
    depth = 10
    w = g.const("w", RNG.standard_normal((7, depth)).astype(np.float32))
    b = g.const("b", RNG.standard_normal(7).astype(np.float32))
    if keep:
        y = g.op("fc", MatMul(has_bias=True, transpose_b=True), [x, w, b])
        y = g.fused_activation("fc.act", y, activation, None) if activation != "NONE" else y
    else:
        y = g.dense("fc", x, w, b, activation=activation)
    model = g.outputs(y)
    check_model(model, runs(model))


INT8_CASES = {
    "per_tensor": dict(w_q=q(0.011), activation="NONE"),
    "per_channel_relu6": dict(w_q="per_channel", activation="RELU6"),
    "relu_no_bias": dict(w_q=q(0.02), activation="RELU", bias=False),
}


def int8_model(w_q, activation, bias=True, flavour="reference", units=9, depth=33):
    g = GraphBuilder()
    x_q = q(0.05, -7)
    x = g.input("x", "i8", (4, depth), x_q)
    if w_q == "per_channel":
        w_q = qc(np.linspace(0.003, 0.02, units), 0)
    w = g.const("w", RNG.integers(-127, 128, (units, depth)), "i8", w_q)
    bias_q = qc(np.float32(x_q.scale[0]) * np.asarray(w_q.scale, np.float32), 0) if len(w_q.scale) > 1 else \
        q(np.float32(x_q.scale[0]) * np.float32(w_q.scale[0]))
    b = g.const("b", RNG.integers(-3000, 3000, units), "i32", bias_q) if bias else None
    return g.outputs(g.dense("fc", x, w, b, quant=q(0.09, 3), activation=activation, flavour=flavour))


@pytest.mark.parametrize("case", sorted(INT8_CASES))
def test_int8_fully_connected_matches_litert(case):
    model = int8_model(**INT8_CASES[case])
    results = check_model(model, runs(model, 4))
    outputs = np.concatenate([r[0].reshape(-1) for r in results])
    assert len(np.unique(outputs)) > 20, "outputs too uniform to tell requantizations apart"


@pytest.mark.parametrize("case", sorted(INT8_CASES))
def test_int8_fully_connected_micro_flavour_matches_tflite_micro(case):
    model = int8_model(**INT8_CASES[case], flavour="micro")
    data = write_model(model)
    loaded = load_tflite(data, flavour="micro")
    assert all(n.op.flavour == "micro" for n in loaded.nodes if isinstance(n.op, MatMul))
    micro = micro_interpreter(data)
    for values in runs(model, 3, seed=5):
        np.testing.assert_array_equal(loaded.run(values)[0], run_micro(micro, values)[0])


def test_uint8_fully_connected_with_weight_zero_point():
    g = GraphBuilder()
    x = g.input("x", "u8", (2, 3, 4), q(0.04, 120))
    w = g.const("w", RNG.integers(0, 256, (5, 12)), "u8", q(0.013, 131))
    b = g.const("b", RNG.integers(-2000, 2000, 5), "i32", q(0.04 * 0.013))
    model = g.outputs(g.dense("fc", x, w, b, quant=q(0.2, 100), activation="RELU"))
    check_model(model, runs(model, 4))


def test_int16x8_fully_connected():
    g = GraphBuilder()
    x = g.input("x", "i16", (3, 17), q(0.0004))
    w = g.const("w", RNG.integers(-127, 128, (6, 17)), "i8", qc(np.linspace(0.002, 0.01, 6), 0))
    b = g.const("b", RNG.integers(-90000, 90000, 6), "i64", qc(0.0004 * np.linspace(0.002, 0.01, 6), 0))
    model = g.outputs(g.dense("fc", x, w, b, quant=q(0.0009)))
    check_model(model, runs(model, 4))


@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, False), (False, True), (True, True)])
def test_float_batch_matmul_broadcasts(adj_x, adj_y):
    g = GraphBuilder()
    a_shape = (2, 1, 5, 3) if adj_x else (2, 1, 3, 5)
    b_shape = (3, 4, 5) if adj_y else (3, 5, 4)
    a, b = g.input("a", "f32", a_shape), g.input("b", "f32", b_shape)
    model = g.outputs(g.op("bmm", MatMul(transpose_a=adj_x, transpose_b=adj_y), [a, b]))
    assert model.output_facts[0].shape == (2, 3, 3, 4)
    check_model(model, runs(model))


@pytest.mark.parametrize("dtype", ["i8", "i16"])
@pytest.mark.parametrize("adj_y", [False, True])
def test_quantized_batch_matmul(dtype, adj_y):
    g = GraphBuilder()
    zero = 0 if dtype == "i16" else 1
    scale = 0.0005 if dtype == "i16" else 0.05
    a = g.input("a", dtype, (2, 3, 6), q(scale, -4 * zero))
    b = g.input("b", dtype, (2, 4, 6) if adj_y else (2, 6, 4), q(scale * 1.3, 3 * zero))
    op = MatMul(transpose_b=adj_y, quant=q(scale * 40, 5 * zero), flavour="micro")
    model = g.outputs(g.op("bmm", op, [a, b]))
    check_model(model, runs(model, 4))


@pytest.mark.parametrize("table", ["f32", "i8"])
def test_embedding_lookup(table):
    g = GraphBuilder()
    ids = g.input("ids", "i32", (5,))
    if table == "f32":
        values = g.const("table", RNG.standard_normal((7, 3, 2)).astype(np.float32))
    else:
        values = g.const("table", RNG.integers(-128, 128, (7, 3, 2)), "i8", q(0.03, 4))
    model = g.outputs(g.op("lookup", Gather(axis=0), [values, ids]))
    rng = np.random.default_rng(2)
    check_model(model, [[rng.integers(0, 7, 5).astype(np.int32)] for _ in range(3)])


class _HybridLookup(Gather):
    """A lookup with a float output, written as LiteRT's hybrid EMBEDDING_LOOKUP (test only)."""

    def output_facts(self, inputs):
        return [TypedFact(DatumType.F32, (inputs[1].shape[0], *inputs[0].shape[1:]))]


@pytest.fixture
def hybrid_lookup_writer():
    WRITERS[_HybridLookup] = lambda op, ctx: OpSpec("EMBEDDING_LOOKUP", None, [1, 0])
    yield
    del WRITERS[_HybridLookup]


@pytest.mark.parametrize("per_row", [False, True])
def test_hybrid_embedding_lookup_dequantizes_rows(per_row, hybrid_lookup_writer):
    g = GraphBuilder()
    ids = g.input("ids", "i32", (6,))
    quant = qc(np.linspace(0.01, 0.07, 7), 0) if per_row else q(0.02)
    table = g.const("table", RNG.integers(-128, 128, (7, 4)), "i8", quant)
    data = write_model(g.outputs(g.op("lookup", _HybridLookup(axis=0), [table, ids])))
    loaded = load_tflite(data)
    interpreter = reference_interpreter(data)
    for seed in range(3):
        values = [np.random.default_rng(seed).integers(0, 7, 6).astype(np.int32)]
        np.testing.assert_array_equal(loaded.run(values)[0], run_reference(interpreter, values)[0])
