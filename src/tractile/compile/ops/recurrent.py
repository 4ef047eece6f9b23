"""Ops with memory across invocations: TFLite SVDF (float, int8 with an int8 or int16 memory)
and UNIDIRECTIONAL_SEQUENCE_LSTM (float, int8 8x8_16). Their memories and states live in the
context (``NAME_reset`` restores their initial values), as TFLite's variable tensors do;
kernels in ``tl_svdf.h`` and ``tl_lstm.h``."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.tfl.common import integer_limits, zero_of
from ...ops.tfl.fixedpoint_functions import int16_table
from ...ops.tfl.lstm import GATES, SLOTS, UnidirectionalSequenceLstm
from ...ops.tfl.svdf import Svdf
from ..emit import Emit
from ..registry import Unsupported, emitter
from .fused import TFLITE_CLAMPS

HEADER = "tl_svdf.h"
LSTM_HEADER = "tl_lstm.h"


@emitter(Svdf)
def svdf(e: Emit) -> None:
    op: Svdf = e.op
    x, y = e.input(0), e.output(0)
    features = e.const_input(1, "the feature weights")
    times = e.const_input(2, "the time weights")
    bias = e.const_input(3, "the bias").reshape(-1) if op.has_bias else None
    batches, depth = x.shape
    filters, memory_size = times.shape
    initial = np.asarray(op.initial_state)
    e.use(HEADER)
    if x.dtype == DatumType.F32:
        if op.activation not in TFLITE_CLAMPS:
            raise Unsupported(f"SVDF with the fused activation {op.activation}")
        memory = e.state("memory", DatumType.F32, initial.size, initial.reshape(-1).astype(np.float32))
        low, high = (np.float32(v) for v in TFLITE_CLAMPS[op.activation])
        e.call("tl_svdf_f32", x, e.constant("features", features.astype(np.float32)),
               e.constant("times", times.astype(np.float32)),
               e.constant("bias", bias.astype(np.float32)) if bias is not None else "NULL", memory, y, batches, depth,
               filters, memory_size, op.rank, low, high)
        return
    state_dtype = DatumType.from_numpy(initial.dtype)
    if x.dtype != DatumType.I8 or state_dtype not in (DatumType.I8, DatumType.I16) or y.dtype != DatumType.I8:
        raise Unsupported(f"SVDF on {x.dtype} with a {state_dtype} memory (int8 with int8 or int16 memory)")
    first, second = op._scales
    low, high = integer_limits(y.dtype)
    memory = e.state("memory", state_dtype, initial.size, initial.reshape(-1))
    e.call("tl_svdf_s8" if state_dtype == DatumType.I8 else "tl_svdf_s16", x,
           e.constant("features", features, DatumType.I8), e.constant("times", times, DatumType.I8),
           e.constant("bias", bias.astype(np.int64), DatumType.I32) if bias is not None else "NULL", memory, y,
           batches, depth, filters, memory_size, op.rank, zero_of(op.iq(0)), zero_of(op.state_q),
           int(first.multipliers[0]), int(first.shifts[0]), int(second.multipliers[0]), int(second.shifts[0]),
           zero_of(op.oq(0)), low, high)


@emitter(UnidirectionalSequenceLstm)
def lstm(e: Emit) -> None:
    op: UnidirectionalSequenceLstm = e.op
    x, y = e.input(0), e.output(0)
    if any(slot in op.slots for slot in (9, 10, 11, 16, 17)):
        raise Unsupported("an LSTM with peepholes or a projection")
    if op.activation != "TANH":
        raise Unsupported(f"an LSTM with the {op.activation} activation")
    values = {slot: e.const_input(index, SLOTS[slot]) for index, slot in enumerate(op.slots) if index > 0}
    gates = [offset for offset in range(4) if 1 + offset in values]
    cifg = int(0 not in gates)
    units = values[5 + gates[0]].shape[0]
    depth = values[1 + gates[0]].shape[1]
    steps, batches = (x.shape[0], x.shape[1]) if op.time_major else (x.shape[1], x.shape[0])
    h0, c0 = (np.asarray(s) for s in op.initial_states)
    e.use(LSTM_HEADER)
    e.uses_math()
    wx = np.concatenate([values[1 + g] for g in gates])  # (gates * units, depth)
    wh = np.concatenate([values[5 + g] for g in gates])  # (gates * units, units)
    if x.dtype == DatumType.F32:
        bias = np.concatenate([values.get(12 + g, np.zeros(units)) for g in gates]).astype(np.float32)
        h = e.state("h", DatumType.F32, h0.size, h0.reshape(-1).astype(np.float32))
        c = e.state("c", DatumType.F32, c0.size, c0.reshape(-1).astype(np.float32))
        e.call("tl_lstm_f32", x, e.constant("wx", np.ascontiguousarray(wx.T.astype(np.float32))),
               e.constant("bias", bias), e.constant("wh", np.ascontiguousarray(wh.T.astype(np.float32))), h, c, y,
               e.scratch("gates", DatumType.F32, len(gates) * units), steps, batches, depth, units, cifg,
               int(op.time_major), np.float32(op.cell_clip))
        return
    if x.dtype != DatumType.I8:
        raise Unsupported(f"an LSTM on {x.dtype}")
    params = op._integer
    x_zero, h_zero = zero_of(op.iq(0)), zero_of(op.state_q[0])
    names = [GATES[g] for g in gates]
    bx = np.concatenate([values.get(12 + g, np.zeros(units, np.int64)).astype(np.int64)
                         - x_zero * values[1 + g].astype(np.int64).sum(axis=1) for g in gates])
    bh = np.concatenate([-h_zero * values[5 + g].astype(np.int64).sum(axis=1) for g in gates])
    if max(np.abs(bx).max(initial=0), np.abs(bh).max(initial=0)) >= 1 << 31:
        raise Unsupported("the folded LSTM biases leave the int32 range")
    requant = {side: [params[f"{side}_{name}"] for name in names] for side in ("x", "h")}
    h = e.state("h", DatumType.I8, h0.size, h0.reshape(-1))
    c = e.state("c", DatumType.I16, c0.size, c0.reshape(-1))
    hidden = params["hidden"]
    e.call("tl_lstm_s8", x, e.constant("wx", wx, DatumType.I8), e.constant("bx", bx, DatumType.I32),
           e.constant("wh", wh, DatumType.I8), e.constant("bh", bh, DatumType.I32),
           *(e.constant(f"{side}_{what}", np.array([getattr(r, what)[0] for r in requant[side]]), DatumType.I32)
             for side in ("x", "h") for what in ("multipliers", "shifts")),
           h, c, y, e.scratch("gates", DatumType.I16, len(gates) * units),
           e.constant("sigmoid", int16_table("logistic", 3), DatumType.I16),
           e.constant("tanh", int16_table("tanh", 3), DatumType.I16),
           e.constant("cell_tanh", int16_table("tanh", 15 + params["cell_scale"]), DatumType.I16),
           steps, batches, depth, units, cifg, int(op.time_major), 30 + params["cell_scale"], params["cell_clip"],
           int(hidden.multipliers[0]), int(hidden.shifts[0]), zero_of(op.hidden_q))
