"""Recurrent ops whose state is TFLite's variable tensor: the core Svdf (``tl_svdf.h``) and
ProjectedLstm (``tl_lstm.h``; TFLite Micro's 16x8 LSTM: ``tl_lstm16.h``). The state lives in the context, persists
across invocations as TFLite's variable tensors do, and ``NAME_reset`` restores its
initial value.
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.lstm_projected import SLOTS, ProjectedLstm
from ...ops.quantized.common import integer_limits, recipe_of, zero_of
from ...ops.quantized.fixedpoint import wrap32
from ...ops.quantized.functions import int16_table
from ...ops.quantized.lstm import prepare_integer
from ...ops.svdf import Svdf
from ..emit import Emit
from ..registry import Unsupported, emitter
from .fused import finish_tflite_activation, tflite_float_activation

INT32 = 1 << 31
#: integer LSTMs on the host look their gate functions up in tables (tests turn it off)
HOST_TABLES = True


def fits_int32(bound: int, what: str) -> None:
    """Refuse an accumulator whose worst case leaves int32 (the interpreter computes in int64)."""
    if bound >= INT32:
        raise Unsupported(f"{what} may leave the int32 range (bound {bound})")


def requant_pair(requantizer) -> tuple[int, int]:
    return int(requantizer.multipliers[0]), int(requantizer.shifts[0])


@emitter(Svdf)
def svdf(e: Emit) -> None:
    op: Svdf = e.op
    x, y = e.input(0), e.output(0)
    features = e.const_input(1, "the feature weights")
    times = e.const_input(2, "the time weights")
    bias = e.const_input(3, "the bias") if op.has_bias else None
    batches, depth = x.shape
    filters, frames = times.shape
    units = filters // op.rank
    initial = np.asarray(op.initial_state).reshape(-1)
    e.use("tl_fully_connected.h")
    e.use("tl_svdf.h")
    if x.dtype == DatumType.F32 and features.dtype == np.int8:
        from .hybrid import hybrid_svdf

        hybrid_svdf(e, x, y, features, times, bias, initial)
        return
    if x.dtype == DatumType.F32:
        low, high = tflite_float_activation(e, op.activation, y)
        memory = e.state("memory", DatumType.F32, initial.size, initial.astype(np.float32))
        bias_name = e.constant("bias", bias.reshape(-1).astype(np.float32)) if bias is not None else "NULL"
        e.call("tl_svdf_f32", x, e.constant("features", features.astype(np.float32)),
               e.constant("times", times.astype(np.float32)), bias_name, memory, y, batches, depth, filters,
               frames, op.rank, np.float32(low), np.float32(high))
        finish_tflite_activation(e, op.activation, y)
        return
    if x.dtype != DatumType.I8 or y.dtype != DatumType.I8:
        raise Unsupported(f"integer SVDF from {x.dtype} to {y.dtype} (int8 only)")
    memory_dtype = DatumType.from_numpy(initial.dtype)
    if memory_dtype not in (DatumType.I8, DatumType.I16):
        raise Unsupported(f"an SVDF memory of {memory_dtype} (int8 or int16)")
    recipe = recipe_of(op)
    x_zero, m_zero = recipe.x_zero, recipe.state_zero
    features = features.astype(np.int64)
    times = times.astype(np.int64)
    times_dtype = DatumType.I8 if memory_dtype == DatumType.I8 else DatumType.I16
    t_low, t_high = integer_limits(times_dtype)
    if times.min(initial=0) < t_low or times.max(initial=0) > t_high:
        raise Unsupported(f"time weights beyond {times_dtype} with an {memory_dtype} memory")
    # TFLite's int32 sums wrap: the folded constants are taken modulo 2^32, as the C sums are
    fbias = wrap32(-x_zero * features.sum(axis=1))
    ubias = wrap32((bias.astype(np.int64) if bias is not None else np.zeros(units, np.int64))
                   - m_zero * times.sum(axis=1).reshape(units, op.rank).sum(axis=1))
    first, second = requant_pair(recipe.first), requant_pair(recipe.second)
    low, high = integer_limits(y.dtype)
    memory = e.state("memory", memory_dtype, initial.size, initial)
    kernel = "tl_svdf_s8" if memory_dtype == DatumType.I8 else "tl_svdf_s8_s16"
    e.call(kernel, x, e.constant("features", features, DatumType.I8), e.constant("fbias", fbias, DatumType.I32),
           e.constant("times", times, times_dtype), e.constant("ubias", ubias, DatumType.I32), memory, y,
           batches, depth, filters, frames, op.rank, *first, m_zero, *second, recipe.output_zero, low, high)


# UNIDIRECTIONAL_SEQUENCE_LSTM ---------------------------------------------------------------------
ACTIVATION_CODES = {"NONE": 0, "RELU": 1, "RELU6": 2, "RELU_N1_TO_1": 3, "TANH": 4}


def lstm_weights(e: Emit, op: ProjectedLstm, slot: int) -> np.ndarray | None:
    index = op._index(slot)
    return None if index is None else e.const_input(index, SLOTS[slot])


@emitter(ProjectedLstm)
def lstm(e: Emit) -> None:
    op: ProjectedLstm = e.op
    if op.layer_norm:
        raise Unsupported(f"{op.name}: layer-normalised gates have no C lowering")
    x = e.input(0)
    if op.activation not in ACTIVATION_CODES:
        raise Unsupported(f"the LSTM activation {op.activation}")
    weights = {slot: lstm_weights(e, op, slot) for slot in range(1, 18)}
    offsets = [offset for offset in range(4) if weights[1 + offset] is not None]
    if offsets not in ([0, 1, 2, 3], [1, 2, 3]) or any(weights[5 + o] is None for o in offsets):
        raise Unsupported("an LSTM without the forget, cell and output gates' weights")
    recurrent, feed = weights[5 + offsets[0]], weights[1 + offsets[0]]
    assert recurrent is not None and feed is not None  # checked above
    units, depth = recurrent.shape[0], feed.shape[1]
    outputs = recurrent.shape[1]
    steps, batches = (x.shape[0], x.shape[1]) if op.time_major else (x.shape[1], x.shape[0])
    shape = dict(batches=batches, steps=steps, depth=depth, units=units, outputs=outputs)
    e.use("tl_fully_connected.h")
    e.use("tl_recurrent.h")
    e.use("tl_lstm.h")
    if x.dtype == DatumType.F32 and feed.dtype == np.int8:
        from .hybrid import hybrid_lstm

        hybrid_lstm(e, op, weights, offsets, shape)
    elif x.dtype == DatumType.F32:
        lstm_float(e, op, weights, offsets, shape)
    elif x.dtype == DatumType.I8:
        if op.flavour != "reference":
            raise Unsupported("TFLite Micro's integer LSTM arithmetic (the C kernel follows TFLite's reference)")
        lstm_integer(e, op, weights, offsets, shape)
    elif x.dtype == DatumType.I16:
        lstm_16x8(e, op, weights, shape)
    else:
        raise Unsupported(f"an LSTM on {x.dtype} (float32, int8 and int16)")


def lstm_float(e: Emit, op, weights: dict, offsets: list[int], shape: dict) -> None:
    e.uses_math()
    units, outputs = shape["units"], shape["outputs"]
    wx = np.ascontiguousarray(np.concatenate([weights[1 + o] for o in offsets]).astype(np.float32).T)
    wh = np.ascontiguousarray(np.concatenate([weights[5 + o] for o in offsets]).astype(np.float32).T)
    bias = np.concatenate([weights[12 + o] if weights[12 + o] is not None else np.zeros(units, np.float32)
                           for o in offsets]).astype(np.float32)
    peepholes = [e.constant(f"peephole_{gate}", weights[slot].astype(np.float32))
                 if weights[slot] is not None else "NULL" for gate, slot in (("input", 9), ("forget", 10),
                                                                             ("output", 11))]
    proj = e.constant("projection", weights[16].astype(np.float32)) if weights[16] is not None else "NULL"
    proj_bias = e.constant("projection_bias", weights[17].astype(np.float32)) if weights[17] is not None else "NULL"
    h = e.state("h", DatumType.F32, shape["batches"] * outputs, np.asarray(op.initial_states[0], np.float32))
    c = e.state("c", DatumType.F32, shape["batches"] * units, np.asarray(op.initial_states[1], np.float32))
    gates = e.scratch("gates", DatumType.F32, len(offsets) * units)
    e.call("tl_lstm_f32", e.input(0), e.output(0), h, c, gates, e.constant("wx", wx), e.constant("wh", wh),
           e.constant("bias", bias), *peepholes, proj, proj_bias, shape["batches"], shape["steps"], shape["depth"],
           units, outputs, op.time_major, len(offsets) == 3, ACTIVATION_CODES[op.activation],
           np.float32(op.cell_clip), np.float32(op.proj_clip))


def lstm_integer(e: Emit, op, weights: dict, offsets: list[int], shape: dict) -> None:
    """TFLite's 8x8_16 kernel, its constants prepared by the interpreter's own code."""
    if e.output(0).dtype != DatumType.I8:
        raise Unsupported(f"an integer LSTM with {e.output(0).dtype} output (int8 only)")
    units, outputs, depth = shape["units"], shape["outputs"], shape["depth"]
    recipe = recipe_of(op)
    params = recipe.params
    cell_scale = params["cell_scale"]
    if not -15 <= cell_scale <= -3:
        raise Unsupported(f"a cell state scale of 2^{cell_scale} (2^-15 to 2^-3)")
    inputs = [None] * len(op.slots)
    for slot, value in weights.items():
        if value is not None:
            inputs[op._index(slot)] = value
    prepared = prepare_integer(op, recipe, inputs)
    gate_count = len(prepared["gates"])
    wx, wh = np.rint(prepared["wx"].T), np.rint(prepared["wh"].T)
    if np.abs(wx).max() > 127 or np.abs(wh).max() > 127 or wx.min() < -128 or wh.min() < -128:
        raise Unsupported("LSTM weights outside int8")
    fits_int32(128 * 128 * max(depth, outputs) + int(max(np.abs(prepared["bx"]).max(), np.abs(prepared["bh"]).max())),
               "a gate's accumulator")
    rq = []
    for gate in range(gate_count):
        column = gate * units
        rq += [prepared["rx"].multipliers[column], prepared["rx"].shifts[column],
               prepared["rh"].multipliers[column], prepared["rh"].shifts[column]]
    peepholes, prq = [], []
    for gate_name in ("input", "forget", "output"):
        found = prepared["peepholes"].get(gate_name)
        if found is None:
            peepholes.append("NULL")
            prq += [0, 0]
            continue
        _, values, requantizer = found
        if np.abs(values).max() > 32767:
            raise Unsupported(f"the {gate_name} peephole weights leave int16")
        peepholes.append(e.constant(f"peephole_{gate_name}", values, DatumType.I16))
        prq += list(requant_pair(requantizer))
    h = e.state("h", DatumType.I8, shape["batches"] * outputs, np.asarray(op.initial_states[0], np.int8))
    c = e.state("c", DatumType.I16, shape["batches"] * units, np.asarray(op.initial_states[1], np.int16))
    gates = e.scratch("gates", DatumType.I16, gate_count * units)
    hidden_m, hidden_s = requant_pair(params["hidden"])
    if "projection" in prepared:
        hidden = e.scratch("hidden", DatumType.I8, units)
        projection, bias = prepared["projection"]
        fits_int32(int(np.abs(bias).max(initial=0)) + units * 128 * 128, "the projection's accumulator")
        proj = e.constant("projection", np.rint(projection.T), DatumType.I8)
        pb = e.constant("projection_bias", bias, DatumType.I32)
        proj_m, proj_s = requant_pair(params["projection"])
    else:
        hidden, proj, pb, proj_m, proj_s = "NULL", "NULL", "NULL", 0, 0
    e.call("tl_lstm_s8", e.input(0), e.output(0), h, c, gates, hidden, e.constant("wx", wx, DatumType.I8),
           e.constant("bx", prepared["bx"], DatumType.I32), e.constant("wh", wh, DatumType.I8),
           e.constant("bh", prepared["bh"], DatumType.I32), e.constant("requant", np.asarray(rq), DatumType.I32),
           *peepholes, e.constant("peephole_requant", np.asarray(prq), DatumType.I32), proj, pb, shape["batches"],
           shape["steps"], depth, units, outputs, op.time_major, gate_count == 3, 15 + cell_scale, 30 + cell_scale,
           params["cell_clip"], hidden_m, hidden_s, zero_of(op.hidden_q), proj_m, proj_s, zero_of(op.state_q[0]),
           params["proj_clip"], *lstm_tables(e, cell_scale))


def lstm_16x8(e: Emit, op, weights: dict, shape: dict) -> None:
    """TFLite Micro's 16x8 kernel (``ops.quantized.lstm_micro``), its constants prepared by the
    interpreter's own code."""
    from ...ops.quantized.lstm_micro import SIGMOID_TABLE, micro_parameters

    units, depth = shape["units"], shape["depth"]
    recipe = recipe_of(op)
    tanh_shift = 15 + recipe.params["cell_scale"] - 3
    if not -15 <= tanh_shift <= 12:
        raise Unsupported(f"a cell state scale of 2^{recipe.params['cell_scale']} (2^-27 to 2^0)")
    inputs = [None] * len(op.slots)
    for slot, value in weights.items():
        if value is not None:
            inputs[op._index(slot)] = value
    prepared = prepare_integer(op, recipe, inputs)
    micro = micro_parameters(op, recipe, prepared)
    wx, wh = np.rint(prepared["wx"].T), np.rint(prepared["wh"].T)
    if min(wx.min(), wh.min()) < -128 or max(wx.max(), wh.max()) > 127:
        raise Unsupported("LSTM weights outside int8")
    rq = []
    for gate in range(4):
        column = gate * units
        rq += [micro["rx"].multipliers[column], micro["rx"].shifts[column],
               micro["rh"].multipliers[column], micro["rh"].shifts[column]]
    e.use("tl_lstm16.h")
    h = e.state("h", DatumType.I16, shape["batches"] * units, np.asarray(op.initial_states[0], np.int16))
    c = e.state("c", DatumType.I16, shape["batches"] * units, np.asarray(op.initial_states[1], np.int16))
    e.call("tl_lstm_s16", e.input(0), e.output(0), h, c, e.scratch("gates", DatumType.I16, 4 * units),
           e.constant("wx", wx, DatumType.I8), e.constant("bx", prepared["bx"], DatumType.I64),
           e.constant("wh", wh, DatumType.I8), e.constant("bh", prepared["bh"], DatumType.I64),
           e.constant("requant", np.asarray(rq), DatumType.I32), e.constant("sigmoid_table", SIGMOID_TABLE,
                                                                              DatumType.I32),
           shape["batches"], shape["steps"], depth, units, op.time_major, *requant_pair(micro["forget_cell"]),
           *requant_pair(micro["input_cell"]), *requant_pair(micro["hidden"]), zero_of(op.state_q[0]),
           tanh_shift, micro["cell_clip"])


def lstm_tables(e: Emit, cell_scale: int) -> list[str]:
    """The gate functions as tables of every int16 input on the host (128 KiB each, a lookup 3x
    faster than the arithmetic); computed on microcontrollers (NULL)."""
    if e.target.name != "host" or not HOST_TABLES:
        return ["NULL"] * 3
    return [e.constant(role, int16_table(function, bits), DatumType.I16)
            for role, function, bits in (("sigmoid", "logistic", 3), ("tanh", "tanh", 3),
                                         ("cell_tanh", "tanh", 15 + cell_scale))]
