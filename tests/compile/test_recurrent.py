"""Ops with memory compiled: TFLite SVDF (float, int8 with int8 and int16 memories) and
UNIDIRECTIONAL_SEQUENCE_LSTM (float, int8 8x8_16), and QUANTIZE / DEQUANTIZE, against the
interpreter with the state carried over many invocations (TFLite's variable tensors)."""
from __future__ import annotations

import numpy as np
import pytest

import tractile
from tractile.compile import generate
from tractile.compile.ops import recurrent as recurrent_emitters
from tractile.datum import DatumType
from tractile.fact import TypedFact
from tractile.graph import OutletId
from tractile.model import TypedModel
from tractile.ops.io import Const
from tractile.ops.lstm_projected import ProjectedLstm
from tractile.ops.quant import Dequantize, Quantize
from tractile.ops.svdf import Svdf

from ..conftest import shared_model as shared_path
from .harness import (
    assert_builds_without_warnings,
    check_against_interpreter,
    compiled,
    q,
    random_input,
    single_op_model,
)

RNG = np.random.default_rng(11)


def shared_model(name: str):
    return tractile.load(str(shared_path(f"tflite/{name}.tflite")))


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
        op = Svdf(rank=rank, initial_state=initial, state_q=state_q, quant=q(0.03, -2))
        fact = TypedFact(DatumType.I8, (batch, depth), None, x_q)
        features, times, bias = (features, q(0.01)), (times, q(0.015)), (bias, q(0.0003))
    model = single_op_model(op, [fact, features, times, bias])
    cm = check_against_interpreter(model, compile_cache, runs=25, stateful=True, name="svdf")
    assert cm.report["state_bytes"] == batch * memory * filters * np.dtype(DatumType(memory_type).np).itemsize


@pytest.mark.parametrize("source,target", [("f32", "i8"), ("f32", "i16"), ("f32", "u8"), ("i16", "i8"),
                                           ("i8", "i8"), ("u8", "i8")])
def test_quantize(source, target, compile_cache):
    in_q = None if source == "f32" else q(0.0007 if source == "i16" else 0.02, 0 if source == "i16" else 5)
    out_q = q(0.013, 0 if target == "i16" else (-9 if target == "i8" else 130))
    op = Quantize(DatumType(target), out_q)
    model = single_op_model(op, [TypedFact(DatumType(source), (4, 33), None, in_q)])
    inputs = None
    if source == "f32":  # ties, saturation and ordinary values
        values = np.concatenate([(np.arange(-40, 40) + 0.5) * 0.013, RNG.standard_normal(52) * 3]).astype(np.float32)
        inputs = [[values.reshape(4, 33)]]
    check_against_interpreter(model, compile_cache, runs=4, inputs=inputs, name="quantize")


@pytest.mark.parametrize("source", ["i8", "u8", "i16"])
def test_dequantize(source, compile_cache):
    in_q = q(0.0123, 0 if source == "i16" else (7 if source == "i8" else 128))
    model = single_op_model(Dequantize(), [TypedFact(DatumType(source), (3, 17), None, in_q)])
    check_against_interpreter(model, compile_cache, runs=3, rtol=0, atol=0, name="dequantize")


def submodel(model: TypedModel, start: OutletId, end: OutletId) -> TypedModel:
    """The part of ``model`` from ``start`` (which becomes the input) to ``end`` (the output)."""
    part = TypedModel()
    mapped = {start: part.add_source("x", model.outlet_fact(start))}
    for node in sorted(model.nodes, key=lambda n: n.id):
        if node.op.name == "Source" or not all(i in mapped for i in node.inputs):
            continue
        if any(OutletId(node.id, slot) in mapped for slot in range(len(node.outputs))):
            continue
        wires = part.wire_node(node.name, node.op, [mapped[i] for i in node.inputs])
        mapped.update({OutletId(node.id, slot): wire for slot, wire in enumerate(wires)})
        if end in mapped:
            break
    part.outputs = [mapped[end]]
    return part


# SVDF -------------------------------------------------------------------------------------------
def svdf_model(dtype: str, batch=2, depth=7, filters=6, frames=5, rank=2, memory=DatumType.I8,
               activation="NONE", seed=0) -> TypedModel:
    rng = np.random.default_rng(seed)
    units = filters // rank
    if dtype == "f32":
        x = TypedFact(DatumType.F32, (batch, depth))
        features = rng.standard_normal((filters, depth)).astype(np.float32)
        times = rng.standard_normal((filters, frames)).astype(np.float32)
        bias = rng.standard_normal(units).astype(np.float32)
        op = Svdf(rank=rank, activation=activation, initial_state=np.zeros((batch, filters * frames), np.float32))
        return single_op_model(op, [x, features, times, bias], "svdf")
    x_q, m_q, y_q = q(0.05, -7), q(0.4 if memory == DatumType.I8 else 0.01, -11 if memory == DatumType.I8 else 0), \
        q(0.2, 5)
    x = TypedFact(DatumType.I8, (batch, depth), qparams=x_q)
    features = rng.integers(-127, 128, (filters, depth)).astype(np.int8)
    times = rng.integers(-127, 128, (filters, frames)).astype(np.int8)
    bias = rng.integers(-3000, 3000, units).astype(np.int32)
    initial = np.zeros((batch, filters * frames), memory.np)
    initial += np.asarray(m_q.zero_point[0], memory.np)
    op = Svdf(rank=rank, activation=activation, initial_state=initial, state_q=m_q, quant=y_q)
    return single_op_model(op, [x, (features, q(0.01)), (times, q(0.02)), (bias, q(0.05 * 0.01))], "svdf")


def test_svdf_reset_restores_the_initial_memory(compile_cache):
    model = svdf_model("i8", seed=3)
    cm = compiled(model, compile_cache, name="svdf_reset")
    rng = np.random.default_rng(1)
    inputs = [random_input(cm.input_facts[0], rng) for _ in range(8)]
    first = [cm.run([x])[0] for x in inputs]
    cm.reset()
    again = [cm.run([x])[0] for x in inputs]
    np.testing.assert_array_equal(np.stack(first), np.stack(again))
    assert not all(np.array_equal(first[0], other) for other in first[1:4])


def test_float_svdf_with_a_fused_tanh(compile_cache):
    check_against_interpreter(svdf_model("f32", activation="TANH"), compile_cache, runs=20, stateful=True,
                              name="svdf_tanh")


def keyword_svdfs(first: int, last: int, zero_bias: bool) -> tuple[TypedModel, list]:
    """SVDFs ``first`` to ``last`` of keyword_scrambled_8bit (with the layers between them)."""
    model = shared_model("keyword_scrambled_8bit")
    svdfs = [n for n in model.nodes if isinstance(n.op, Svdf)]
    assert len(svdfs) == 7
    part = submodel(model, svdfs[first].inputs[0], OutletId(svdfs[last].id, 0))
    if zero_bias:
        for node in part.nodes:
            if isinstance(node.op, Svdf):
                bias = part.nodes[node.inputs[3].node]
                bias.op = Const(np.zeros_like(bias.op.value))
        part.refresh_facts()
    return part, svdfs[first:last + 1]


@pytest.mark.parametrize("index", [0, 4, 6])
def test_keyword_scrambled_svdf(index, compile_cache, tmp_path):
    """One SVDF of keyword_scrambled_8bit over 40 invocations (memories of 8 and 32 frames wrap).
    The model's scrambled biases span the int32 range and saturate every output, so they are
    zeroed here (the next test keeps them)."""
    part, _ = keyword_svdfs(index, index, zero_bias=True)
    rng = np.random.default_rng(index)
    inputs = [[random_input(part.input_facts[0], rng)] for _ in range(40)]
    state = part.state()
    assert len(np.unique([state.run(x)[0] for x in inputs])) > 50  # outputs that tell kernels apart
    cm = check_against_interpreter(part, compile_cache, inputs=inputs, stateful=True, name=f"keyword_svdf{index}")
    assert_builds_without_warnings(cm.source, tmp_path)


def test_keyword_scrambled_svdf_chain(compile_cache):
    """The last three SVDFs of keyword_scrambled_8bit, chained, with their own biases."""
    part, svdfs = keyword_svdfs(4, 6, zero_bias=False)
    cm = check_against_interpreter(part, compile_cache, runs=40, stateful=True, name="keyword_svdf_chain")
    assert cm.report["state_bytes"] >= sum(n.op.initial_state.size for n in svdfs)


# 16-bit fixed-point functions -----------------------------------------------------------------
FIXED16_PROBE = """
#include "tl_recurrent.h"
void probe(int kind, int integer_bits, int16_t *out) {
  int32_t a;
  for (a = -32768; a < 32768; ++a)
    out[a + 32768] = (int16_t)(kind ? tl_tanh16(a, integer_bits) : tl_logistic16(a, integer_bits));
}
"""


def test_fixed16_logistic_and_tanh_on_every_int16(tmp_path):
    """tl_logistic16 / tl_tanh16 equal the interpreter's FixedPoint(16) on all 65,536 inputs."""
    import ctypes
    import shutil
    import subprocess

    from tractile.compile import kernel_header
    from tractile.ops.quantized.functions import int16_table

    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler (install gcc)")
    for header in ("tl_common.h", "tl_recurrent.h"):
        (tmp_path / header).write_text(kernel_header(header))
    (tmp_path / "probe.c").write_text(FIXED16_PROBE)
    subprocess.run([compiler, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fPIC", "-shared",
                    "probe.c", "-o", "probe.so"], cwd=tmp_path, check=True)
    probe = ctypes.CDLL(str(tmp_path / "probe.so")).probe
    out = np.empty(65536, np.int16)
    for function, kind, bits in [("logistic", 0, b) for b in (0, 3, 5, 7)] + [("tanh", 1, b) for b in (0, 3, 4, 6)]:
        probe(kind, bits, out.ctypes.data_as(ctypes.POINTER(ctypes.c_int16)))
        expected = int16_table(function, bits)
        differ = np.flatnonzero(out != expected)
        assert differ.size == 0, (f"{function} Q{bits}: {differ.size} differ, first at input {differ[0] - 32768}: "
                                  f"C {out[differ[0]]}, interpreter {expected[differ[0]]}")


# LSTM -------------------------------------------------------------------------------------------
def float_lstm_model(batch=2, steps=5, depth=3, units=4, cifg=False, peepholes=False, projection=0,
                     time_major=False, cell_clip=0.0, proj_clip=0.0, activation="TANH", seed=0) -> TypedModel:
    rng = np.random.default_rng(seed)
    outputs = projection or units
    rand = lambda *shape: (rng.standard_normal(shape) * 0.5).astype(np.float32)  # noqa: E731
    values = {1: rand(units, depth), 2: rand(units, depth), 3: rand(units, depth), 4: rand(units, depth),
              5: rand(units, outputs), 6: rand(units, outputs), 7: rand(units, outputs), 8: rand(units, outputs),
              12: rand(units), 13: rand(units), 14: rand(units), 15: rand(units)}
    if cifg:
        for slot in (1, 5, 12):
            del values[slot]
    if peepholes:
        values.update({10: rand(units), 11: rand(units)} | ({} if cifg else {9: rand(units)}))
    if projection:
        values.update({16: rand(projection, units), 17: rand(projection)})
    slots = (0, *sorted(values))
    shape = (steps, batch, depth) if time_major else (batch, steps, depth)
    op = ProjectedLstm(slots=slots, activation=activation, cell_clip=cell_clip, proj_clip=proj_clip,
                                    time_major=time_major,
                                    initial_states=(rand(batch, outputs), rand(batch, units)))
    return single_op_model(op, [TypedFact(DatumType.F32, shape)] + [values[s] for s in slots[1:]], "lstm")


FLOAT_VARIANTS = {
    "plain": {}, "cifg": {"cifg": True}, "time_major": {"time_major": True, "batch": 3},
    "peepholes_projection_clips": {"peepholes": True, "projection": 3, "cell_clip": 0.8, "proj_clip": 0.5},
    "cifg_peepholes_relu": {"cifg": True, "peepholes": True, "activation": "RELU"},
}


@pytest.mark.parametrize("variant", sorted(FLOAT_VARIANTS))
def test_float_lstm(variant, compile_cache, tmp_path):
    model = float_lstm_model(**FLOAT_VARIANTS[variant])
    check_against_interpreter(model, compile_cache, runs=6, stateful=True, name=f"lstm_{variant}")
    assert_builds_without_warnings(generate(model, name="lstm"), tmp_path)


def mnist_lstm(kind: str, upto: str = "Softmax") -> TypedModel:
    """mnist_lstm_{kind} up to the input of its first ``upto`` node (SOFTMAX is lowered elsewhere)."""
    model = shared_model(f"mnist_lstm_{kind}")
    found = [n for n in model.nodes if n.op.name == upto]
    assert len(found) == 1
    model.outputs = [found[0].inputs[0]]
    return model.compact()


@pytest.mark.parametrize("upto", ["Reshape", "Softmax"])
def test_mnist_lstm_float(upto, compile_cache, tmp_path):
    """The LSTM's sequence output within 1e-5 (relative; 1e-6 absolute), and the logits after the
    560-input dense layer within 1e-5 of their magnitude (~12: cancellation in the sums)."""
    model = mnist_lstm("float", upto)
    rng = np.random.default_rng(7)
    inputs = [[rng.random((1, 28, 28), dtype=np.float32)] for _ in range(50)]
    atol = 1e-6 if upto == "Reshape" else 1.2e-4
    cm = check_against_interpreter(model, compile_cache, inputs=inputs, stateful=True, atol=atol,
                                   name=f"mnist_lstm_float_{upto}")
    assert cm.report["state_bytes"] == 2 * 20 * 4
    assert_builds_without_warnings(cm.source, tmp_path)


def int8_lstm_model(batch=2, steps=5, depth=3, units=4, cifg=False, peepholes=False, projection=0,
                    time_major=False, cell_clip=0.0, proj_clip=0.0, seed=0, cell_scale=2.0 ** -11) -> TypedModel:
    rng = np.random.default_rng(seed)
    outputs = projection or units
    weights = lambda *shape: rng.integers(-127, 128, shape).astype(np.int8)  # noqa: E731
    values = {slot: weights(units, depth) for slot in (1, 2, 3, 4)}
    values.update({slot: weights(units, outputs) for slot in (5, 6, 7, 8)})
    values.update({slot: rng.integers(-20000, 20000, units).astype(np.int32) for slot in (12, 13, 14, 15)})
    scales = {slot: q(0.004 + 0.001 * slot) for slot in values}
    if cifg:
        for slot in (1, 5, 12):
            del values[slot]
    if peepholes:
        for slot in (9, 10, 11) if not cifg else (10, 11):
            values[slot] = rng.integers(-3000, 3000, units).astype(np.int16)
            scales[slot] = q(0.0002 * slot)
    if projection:
        values[16] = weights(projection, units)
        values[17] = rng.integers(-500, 500, projection).astype(np.int32)
        scales.update({16: q(0.01), 17: q(0.0001)})
    slots = (0, *sorted(values))
    x_q, h_q, c_q, hidden_q = q(0.03, -5), q(0.008, 3), q(cell_scale), q(0.007, -2)
    shape = (steps, batch, depth) if time_major else (batch, steps, depth)
    initial = (rng.integers(-128, 128, (batch, outputs)).astype(np.int8),
               rng.integers(-8000, 8000, (batch, units)).astype(np.int16))
    op = ProjectedLstm(slots=slots, cell_clip=cell_clip, proj_clip=proj_clip, time_major=time_major,
                       initial_states=initial, state_q=(h_q, c_q), hidden_q=hidden_q, quant=h_q)
    return single_op_model(op, [TypedFact(DatumType.I8, shape, qparams=x_q)] +
                           [(values[s], scales[s]) for s in slots[1:]], "lstm")


INT8_VARIANTS = {
    "plain": {}, "cifg": {"cifg": True}, "time_major": {"time_major": True, "batch": 3},
    "peepholes_projection_clips": {"peepholes": True, "projection": 3, "cell_clip": 1.5, "proj_clip": 0.4},
    "cifg_peepholes": {"cifg": True, "peepholes": True, "units": 7, "depth": 9},
}


@pytest.mark.parametrize("tables", [True, False])
@pytest.mark.parametrize("variant", sorted(INT8_VARIANTS))
def test_int8_lstm(variant, tables, compile_cache, tmp_path, monkeypatch):
    """Gate functions looked up in tables (the host's default) and computed (microcontrollers')."""
    monkeypatch.setattr(recurrent_emitters, "HOST_TABLES", tables)
    model = int8_lstm_model(**INT8_VARIANTS[variant])
    state = model.state()
    rng = np.random.default_rng(1)
    inputs = [[random_input(model.input_facts[0], rng)] for _ in range(30)]
    assert len(np.unique([state.run(x)[0] for x in inputs])) > 20  # outputs that tell kernels apart
    check_against_interpreter(model, compile_cache, inputs=inputs, stateful=True,
                              name=f"lstm_s8_{variant}_{'tables' if tables else 'computed'}")
    assert_builds_without_warnings(generate(model, name="lstm"), tmp_path)


def test_mnist_lstm_int8(compile_cache, tmp_path, monkeypatch):
    """mnist_lstm_int8 up to its logits with the gate functions computed (as on microcontrollers:
    the whole model with tables is in test_shared_models), 50 invocations with the states carried
    over; its arena within TFLite Micro's 1,536 bytes, its constants small."""
    monkeypatch.setattr(recurrent_emitters, "HOST_TABLES", False)
    model = mnist_lstm("int8")
    rng = np.random.default_rng(3)
    inputs = [[rng.integers(-128, 128, (1, 28, 28)).astype(np.int8)] for _ in range(50)]
    cm = check_against_interpreter(model, compile_cache, inputs=inputs, stateful=True, name="mnist_lstm_int8")
    cm.reset()
    fresh = model.state()
    for x in inputs[:3]:
        np.testing.assert_array_equal(cm.run(x)[0], fresh.run(x)[0])
    assert cm.report["arena_bytes"] <= 1536
    assert cm.report["state_bytes"] == 20 + 2 * 20
    assert cm.report["constants_bytes"] < 16_000
    assert_builds_without_warnings(cm.source, tmp_path)


@pytest.mark.parametrize("target", ["avr", "cortex-m4"])
def test_recurrent_ops_on_microcontrollers(target, tmp_path):
    """int8 SVDF (int16 memory) and LSTM (peepholes, projection) bit-exact on an emulated device
    (16-bit int on AVR), one context carrying the state over 20 runs."""
    from tractile.compile.targets import board_for
    from tractile.compile.targets.firmware import toolchain_available
    from tractile.compile.targets.verify import verify

    missing = toolchain_available(board_for(target, None))
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    for index, model in enumerate([svdf_model("i8", memory=DatumType.I16, rank=2),
                                   int8_lstm_model(peepholes=True, projection=3, cell_clip=1.5, proj_clip=0.4)]):
        report = verify(model, target, runs=20, folder=tmp_path / str(index))
        assert report["verified"], report["first_difference"]
        assert report["ram_bytes"]["state"] > 0


def test_unsupported_recurrent_configurations_are_named():
    from tractile.errors import UnsupportedOpError

    with pytest.raises(UnsupportedOpError, match=r'"lstm".*cell state scale of 2\^-1'):
        generate(int8_lstm_model(cell_scale=0.5), name="lstm")
