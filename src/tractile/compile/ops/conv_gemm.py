"""int8 convolutions of any shape, pointwise and dense layers on targets with the Armv7E-M DSP
instructions (Cortex-M4/M7), as blocked products of widened input columns by int8 weights
(kernels in ``tl_conv_gemm.h``): the weights repacked on the host in the order the columns
hold the inputs, the input offset folded into the bias."""
from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np

from ...datum import DatumType
from ..emit import Emit, call_text
from .conv_dsp import WIDE_DEPTHS, doubled_requant, pairs, widened_rows

HEADER = "tl_conv_gemm.h"
#: the most weights of a shallow 1x1 layer stored widened (tl_pointwise_s8_shallow): 2 bytes each
SHALLOW_WEIGHTS = 4096
#: the most weights of a 1x1 layer through tl_pointwise_s8_cols (stored widened: 2 bytes each)
COLS_WEIGHTS = 8192


@dataclass
class _Columns:
    """During a lowering by :func:`lower_within_arena`: the nodes told to read their inputs in
    place, and the scratch tensors (C names) of the nodes that could."""

    in_place: frozenset = frozenset()
    optional: dict[str, int] = field(default_factory=dict)


_COLUMNS: ContextVar[_Columns | None] = ContextVar("tractile_conv_columns", default=None)


def lower_within_arena(lower: Callable, alignment: int):
    """``lower()``'s program and its memory plan, the columns of the convolutions that can do
    without them (depth a multiple of 4: tl_conv_nhwc_s8_direct) dropped where they would make
    the arena bigger than it is without any: those layers read their inputs in place (slower),
    the others keep their columns (scratch beside the arena's peak). Layer by layer, greedily:
    one more lowering per such layer when some must go without."""
    from ..memory import plan_memory

    def attempt(in_place: frozenset):
        columns = _Columns(in_place)
        token = _COLUMNS.set(columns)
        try:
            program = lower()
        finally:
            _COLUMNS.reset(token)
        return program, plan_memory(program, alignment), columns.optional

    program, plan, optional = attempt(frozenset())
    if not optional:
        return program, plan
    lean, lean_plan, _ = attempt(frozenset(optional.values()))
    if lean_plan.arena_bytes >= plan.arena_bytes:
        return program, plan
    best, best_plan, keep = lean, lean_plan, set[int]()
    for node in sorted(set(optional.values())):  # each layer keeps its columns if the arena allows
        trial, trial_plan, _ = attempt(frozenset(optional.values()) - keep - {node})
        if trial_plan.arena_bytes <= lean_plan.arena_bytes:
            best, best_plan = trial, trial_plan
            keep.add(node)
    return best, best_plan


def swap_middle(j: np.ndarray) -> np.ndarray:
    """0, 2, 1, 3 within each group of four (self-inverse)."""
    return (j & ~3) + ((j & 1) << 1) + ((j >> 1) & 1)


def column_slots(segments: int, length: int) -> np.ndarray:
    """The halfword of the column each input of a window lands in (tl_widen_segment): the
    window read as ``segments`` runs of ``length`` contiguous inputs, each word of four inputs
    x0..x3 as [x0 | x2], [x1 | x3], the last ``length % 4`` of a run in order."""
    j = np.arange(length)
    within = np.where(j < (length & ~3), swap_middle(j), j)
    return (np.arange(segments)[:, None] * length + within[None, :]).reshape(-1)


def repack(rows: np.ndarray, segments: int, length: int) -> np.ndarray:
    """[filters][k] weights (k = segments * length, inputs in window order) as [filters][k4]
    int8 bytes: the weight of the input in column halfword s at byte swap_middle(s), where
    SXTB16 and its rotated form bring it against that halfword; zeros beyond k."""
    filters, k = rows.shape
    k4 = (k + 3) & ~3
    out = np.zeros((filters, k4), np.int64)
    out[:, swap_middle(column_slots(segments, length))] = rows
    return out


def row_words(packed: np.ndarray) -> np.ndarray:
    """[units][k4] int8 weights as the little-endian words tl_fc_s8_row reads: the channels in
    groups of four, then two, then one, each group's rows interleaved word by word."""
    units, k4 = packed.shape
    words = np.ascontiguousarray(packed.astype(np.int8)).view("<i4").reshape(units, k4 // 4)
    groups, f = [], 0
    while units - f >= 4:
        groups.append(words[f:f + 4].T.reshape(-1))
        f += 4
    for size in (2, 1):
        if units - f >= size:
            groups.append(words[f:f + size].T.reshape(-1))
            f += size
    return np.concatenate(groups).astype(np.int64) if groups else np.zeros(0, np.int64)


def usable(e: Emit, dtype: DatumType) -> bool:
    """Whether the target runs these kernels: a DSP core without program-memory constants."""
    return bool(e.target.dsp) and not e.target.progmem and dtype == DatumType.I8


def folded_bias(raw_bias: np.ndarray, x_offset: int, rows: np.ndarray) -> np.ndarray | None:
    """bias + x_offset * the sum of each filter's weights, or None when it leaves int32."""
    total = raw_bias.astype(np.int64) + int(x_offset) * rows.sum(axis=1)
    return total if np.abs(total).max(initial=0) < 1 << 31 else None


def requant_words(total: np.ndarray, rows: np.ndarray, multipliers, shifts, zero: int) -> tuple[np.ndarray, int]:
    """The kernels' requantization words, three per output channel, and their mode
    (tl_conv_gemm.h; the bias is doubled for modes 0 and 1): 0 or 1 for tl_conv_dsp.h's doubled
    accumulators (1 when some channel takes TFLite's recipe) when every accumulator stays below
    2^30 in magnitude (the inputs are int8), else 2, {multiplier, shift, 0} for TFLite Micro's
    recipe."""
    channels = rows.shape[0]
    bound = np.abs(total.astype(np.int64)) + 128 * np.abs(rows).sum(axis=1)
    if bound.max(initial=0) < 1 << 30:
        return doubled_requant(multipliers, shifts, zero, channels)
    m = np.broadcast_to(np.atleast_1d(np.asarray(multipliers, np.int64)), (channels,))
    shift = np.broadcast_to(np.atleast_1d(np.asarray(shifts, np.int64)), (channels,))
    return np.stack([m, shift, np.zeros(channels, np.int64)], axis=1).reshape(-1).astype(np.int32), 2


def _use(e: Emit) -> None:
    e.use("tl_conv.h")
    e.use("tl_conv_dsp.h")
    e.use("tl_fully_connected.h")
    e.use(HEADER)


def layer_call(e: Emit, kernel: str, args: list, params: dict[int, str]) -> None:
    """``kernel(args...)`` through a function of the layer's own (file scope, never inlined):
    ``params`` (argument index -> C type) are its parameters (x, y and col, in order), the other
    arguments its constants, so that the compiler specialises the kernel to this layer in a
    function of its own rather than in the middle of the model's (where the registers it gets
    vary). Chains in bands record the kernel call itself."""
    from ..bands import BandEmit

    if isinstance(e, BandEmit):
        e.call(kernel, *args)
        return
    names = {i: ("x", "y", "col")[n] for n, i in enumerate(sorted(params))}
    rendered = [names[i] if i in params else e.arg(a) for i, a in enumerate(args)]
    signature = ", ".join(f"{ctype}{names[i]}" for i, ctype in params.items())

    def text(name: str) -> str:
        return (f"static TL_NOINLINE void {name}({signature}) {{\n"
                + "\n".join("  " + line for line in call_text(kernel, rendered).splitlines()) + "\n}")

    name = e.definition("layer", text)
    e.call(name, *[args[i] for i in params])
    e.set_kernel(kernel)


def emit_conv(e: Emit, x, y, offset: np.ndarray, raw_bias: np.ndarray, numbers: tuple,
              geometry: tuple) -> int | None:
    """An int8 NHWC convolution (one group) on a DSP target; None (nothing emitted) elsewhere,
    else how many pixels ahead of its last input pixel still read it writes (0 with columns; 1
    in place, a pair of pixels each output channel at a time: output p + 1 is written while
    input p is read again). ``offset``: OHWI weights without their zero point; ``numbers``:
    (multipliers, shifts, x_offset, zero, low, high) as quantized_numbers gives them;
    ``geometry``: tl_conv_nhwc_s8's arguments from batches to depth."""
    if not usable(e, x.dtype):
        return None
    multipliers, shifts, x_offset, zero, low, high = numbers
    batches, in_h, in_w, in_c, out_h, out_w, filters, k_h, k_w, _, _, _, dil_w, _, _, depth = geometry
    if depth != in_c:
        return None
    rows = offset.reshape(filters, -1).astype(np.int64)
    total = folded_bias(raw_bias, x_offset, rows)
    if total is None:
        return None
    if k_h == k_w == 1 and in_c in WIDE_DEPTHS and _shallow(e, x, y, rows, total, numbers, geometry):
        return 0
    columns = _COLUMNS.get()
    in_place = in_c % 4 == 0 and columns is not None and e.node.id in columns.in_place
    if in_place and k_h == k_w == 1 and geometry[9:11] == (1, 1) and in_c in WIDE_DEPTHS:
        return None  # conv_dsp's pointwise kernel does shallow layers in place faster
    words, mode = requant_words(total, rows, multipliers, shifts, zero)
    col = _cols(e, x, y, rows, total, words, numbers, geometry) if not in_place and k_h == k_w == 1 and mode == 0 \
        else None
    if col is not None:
        if in_c % 4 == 0 and columns is not None:
            columns.optional[col] = e.node.id
        return 0
    total = total if mode == 2 else 2 * total
    _use(e)
    if in_place:  # inputs read in place
        args = [x, e.constant("weights", rows, DatumType.I8), e.constant("bias", total, DatumType.I32), y, *geometry,
                x_offset, e.constant("requant", words, DatumType.I32), mode, zero, low, high]
        layer_call(e, "tl_conv_nhwc_s8_direct", args, {0: "const int8_t *", 3: "int8_t *"})
        return 1
    segments, length = (k_h, k_w * in_c) if dil_w == 1 else (k_h * k_w, in_c)
    k4 = (rows.shape[1] + 3) & ~3
    args = [x, e.constant("weights_packed", repack(rows, segments, length), DatumType.I8),
            e.constant("bias", total, DatumType.I32), y, *geometry, x_offset,
            e.constant("requant", words, DatumType.I32), mode, zero, low, high, e.scratch("col", DatumType.I32, k4)]
    if in_c % 4 == 0 and columns is not None:
        columns.optional[args[-1]] = e.node.id
    layer_call(e, "tl_conv_nhwc_s8_gemm", args, {0: "const int8_t *", 3: "int8_t *", len(args) - 1: "int32_t *"})
    return 0


def _shallow(e: Emit, x, y, rows: np.ndarray, total: np.ndarray, numbers: tuple, geometry: tuple) -> bool:
    """A 1x1 convolution of depth 4 to 16 without padding through tl_pointwise_s8_shallow (its
    weights stored doubled and widened, beside each channel's bias and requantization words:
    twice the flash of int8 weights, so only for small layers); False when it does not apply."""
    multipliers, shifts, _, zero, low, high = numbers
    batches, in_h, in_w, in_c, out_h, out_w, filters, _, _, stride_h, stride_w, _, _, top, left, _ = geometry
    from ..bands import BandEmit

    strided = (stride_h, stride_w) != (1, 1)
    if top or left or rows.size > SHALLOW_WEIGHTS or (strided and (batches > 1 or isinstance(e, BandEmit))):
        return False  # (bands give a 1x1 kernel its count of pixels only)
    words, mode = requant_words(total, rows, multipliers, shifts, zero)
    if mode != 0:
        return False
    words = words.reshape(filters, 3).astype(np.int64)
    scale, shift = common_shift(total, rows, words, zero, low)
    if shift:
        words = np.stack([words[:, 0], (scale >> 2) + (1 << (shift - 1)) + zero * (1 << shift), 0 * scale], axis=1)
    records = np.concatenate([scale[:, None] * total[:, None],
                              widened_rows(scale[:, None] * rows).reshape(filters, in_c // 2).astype(np.int64), words],
                             axis=1)
    if not strided:
        shape = (1, batches * in_h * in_w, 0, in_c)
    else:
        shape = (out_h, out_w, stride_h * in_w * in_c, stride_w * in_c)
    _use(e)
    args = [x, e.constant("records", records.reshape(-1), DatumType.I32), y, *shape, in_c, filters, zero, low, high,
            shift]
    layer_call(e, "tl_pointwise_s8_shallow", args, {0: "const int8_t *", 2: "int8_t *"})
    return True


def cols_records(scaled: np.ndarray, bias: np.ndarray, words: np.ndarray, shift: int) -> np.ndarray:
    """tl_pointwise_s8_cols's records of [units][depth] weights (already scaled, int16), their
    biases and requantization words ([units][3]): per pair of channels their biases, per word of
    four inputs each channel's two widened weight words in the columns' order (column_slots), m
    and K of each and, without the common ``shift``, r of each; a last odd channel {bias, 0, its
    words, m, K (r, 0)}."""
    units, depth = scaled.shape
    k4 = (depth + 3) & ~3
    slots = np.zeros((units, k4), np.int64)
    slots[:, column_slots(1, depth)] = scaled
    wide = pairs(slots[:, 0::2], slots[:, 1::2]).astype(np.int64).reshape(units, k4 // 4, 2)
    parts: list = []
    for f in range(0, units - 1, 2):
        parts += [bias[f:f + 2], wide[f:f + 2].transpose(1, 0, 2).reshape(-1), words[f:f + 2, :2].reshape(-1)]
        parts += [] if shift else [words[f:f + 2, 2]]
    if units % 2:
        f = units - 1
        parts += [[bias[f], 0], wide[f].reshape(-1), words[f, :2]] + ([] if shift else [[words[f, 2], 0]])
    return np.concatenate([np.asarray(part, np.int64) for part in parts])


def _cols(e: Emit, x, y, rows: np.ndarray, total: np.ndarray, words: np.ndarray, numbers: tuple,
          geometry: tuple) -> str | None:
    """A 1x1 convolution of at most COLS_WEIGHTS weights without padding through
    tl_pointwise_s8_cols (its weights widened and scaled beside its biases and requantization
    words, twice their int8 flash; the common shift where it applies); the name of its columns'
    scratch (k4 words, as tl_conv_nhwc_s8_gemm's), or None (nothing emitted) when it does not
    apply."""
    _, _, _, zero, low, high = numbers
    batches, in_h, in_w, in_c, out_h, out_w, filters, _, _, stride_h, stride_w, _, _, top, left, _ = geometry
    from ..bands import BandEmit

    strided = (stride_h, stride_w) != (1, 1)
    if top or left or rows.size > COLS_WEIGHTS or isinstance(e, BandEmit) or (strided and batches > 1):
        return None
    words = words.reshape(filters, 3).astype(np.int64)
    scale, shift = common_shift(total, rows, words, zero, low)
    if shift:
        words = np.stack([words[:, 0], (scale >> 2) + (1 << (shift - 1)) + zero * (1 << shift), 0 * scale], axis=1)
    scaled = scale[:, None] * rows
    if np.abs(scaled).max(initial=0) >= 1 << 15:
        return None
    shape = (out_h, out_w, stride_h * in_w * in_c, stride_w * in_c) if strided else (1, batches * in_h * in_w, 0, in_c)
    _use(e)
    k4 = (in_c + 3) & ~3
    col = e.scratch("col", DatumType.I32, k4)
    args = [x, e.constant("records", cols_records(scaled, scale * total, words, shift), DatumType.I32), y, *shape,
            in_c, filters, zero, low, high, shift, col]
    layer_call(e, "tl_pointwise_s8_cols", args, {0: "const int8_t *", 2: "int8_t *", 13: "int32_t *"})
    return col


def common_shift(total: np.ndarray, rows: np.ndarray, words: np.ndarray, zero: int, low: int) -> tuple[np.ndarray, int]:
    """tl_pointwise_s8_shallow's scale of each channel's weights and bias and the layer's common
    shift R (tl_pw_out): 2^(d+1) with d = R - r, R one more than the largest r, when the output's
    lower bound is at least its zero point and the scaled weights stay int16 and the accumulators
    int32; else 2 and 0 (each channel its own shift)."""
    r = words[:, 2]
    shift = int(r.max(initial=0)) + 1
    scale = np.int64(1) << (shift - r + 1)
    bound = (np.abs(total) + 128 * np.abs(rows).sum(axis=1)) * scale
    widest = np.abs(rows).max(axis=1, initial=0) * scale
    if low < zero or shift > 31 or bound.max(initial=0) >= 1 << 31 or widest.max(initial=0) >= 1 << 15 or \
            abs(zero) * (1 << shift) + (1 << shift) >= 1 << 31:
        return np.full(len(r), 2, np.int64), 0
    return scale, shift


def emit_dense(e: Emit, x, y, rows: np.ndarray, total: np.ndarray, count: int, numbers: tuple) -> bool:
    """``count`` rows of int8 inputs by [units][depth] weights (their zero point removed) with
    the folded bias ``total`` (int32, wrapped as TFLite's accumulators wrap) on a DSP target;
    False (nothing emitted) elsewhere. ``numbers``: (multipliers, shifts, zero, low, high)."""
    if not usable(e, x.dtype):
        return False
    multipliers, shifts, zero, low, high = numbers
    rows = rows.astype(np.int64)
    units, depth = rows.shape
    words, mode = requant_words(total, rows, multipliers, shifts, zero)
    k4 = (depth + 3) & ~3
    _use(e)
    if count == 1 and mode == 0 and _row_wide(e, x, y, rows, total, words, zero, low, high):
        return True
    total = total if mode == 2 else 2 * total
    if count == 1:
        uniform = bool(np.all(words.reshape(-1, 3) == words[:3]))
        args = [x, e.constant("weights_words", row_words(repack(rows, 1, depth)), DatumType.I32),
                e.constant("bias", total, DatumType.I32), y, depth, units,
                e.constant("requant", words[:3] if uniform else words, DatumType.I32), mode, zero, low, high,
                0 if uniform else 3]
        layer_call(e, "tl_fc_s8_row", args, {0: "const int8_t *", 3: "int8_t *"})
        return True
    args = [x, e.constant("weights_packed", repack(rows, 1, depth), DatumType.I8),
            e.constant("bias", total, DatumType.I32), y, count, depth, units,
            e.constant("requant", words, DatumType.I32), mode, zero, low, high,
            e.scratch("col", DatumType.I32, k4) if count > 1 else "NULL"]
    params = {0: "const int8_t *", 3: "int8_t *"}
    layer_call(e, "tl_fc_s8_gemm", args, {**params, len(args) - 1: "int32_t *"} if count > 1 else params)
    return True


def wide_records(rows: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """tl_fc_s8_row_wide's records of [units][depth] weights (already scaled, int16) and their
    biases: per four channels (then two) their biases, then per word of four inputs each
    channel's [w0 | w2], [w1 | w3] (the last depth % 4 in order, zero-padded); per last channel
    its bias and words."""
    units, depth = rows.shape
    k4 = (depth + 3) & ~3
    slots = np.zeros((units, k4), np.int64)
    slots[:, column_slots(1, depth)] = rows
    wide = pairs(slots[:, 0::2], slots[:, 1::2]).astype(np.int64).reshape(units, k4 // 4, 2)
    parts, f = [], 0
    for size in (4,) * (units // 4) + (2,) * (units % 4 // 2):
        parts += [bias[f:f + size], wide[f:f + size].transpose(1, 0, 2).reshape(-1)]
        f += size
    for unit in range(f, units):
        parts += [bias[unit:unit + 1], wide[unit].reshape(-1)]
    return np.concatenate(parts).astype(np.int64)


def _row_wide(e: Emit, x, y, rows: np.ndarray, total: np.ndarray, words: np.ndarray, zero: int, low: int,
              high: int) -> bool:
    """A dense row of at most SHALLOW_WEIGHTS weights (requantization mode 0) through
    tl_fc_s8_row_wide, its weights widened and scaled (twice their int8 flash) and with the
    common shift where it applies; False (nothing emitted) otherwise."""
    units, depth = rows.shape
    if rows.size > SHALLOW_WEIGHTS:
        return False
    words = words.reshape(units, 3).astype(np.int64)
    scale, shift = common_shift(total, rows, words, zero, low)
    if shift:
        words = np.stack([words[:, 0], (scale >> 2) + (1 << (shift - 1)) + zero * (1 << shift), 0 * scale], axis=1)
    scaled = scale[:, None] * rows
    if np.abs(scaled).max(initial=0) >= 1 << 15:
        return False
    uniform = bool(np.all(words == words[0]))
    _use(e)
    args = [x, e.constant("records", wide_records(scaled, scale * total), DatumType.I32), y, depth, units,
            e.constant("requant", (words[:1] if uniform else words).reshape(-1), DatumType.I32), 0 if uniform else 3,
            shift, zero, low, high]
    layer_call(e, "tl_fc_s8_row_wide", args, {0: "const int8_t *", 2: "int8_t *"})
    return True
