"""int8 convolutions on targets with the Armv7E-M DSP instructions (Cortex-M4/M7): the weights
repacked on the host as int16 pairs of two taps (or depths) of one output, so that each SMLAD
adds two products to one accumulator (kernels in ``tl_conv_dsp.h``), the input offset folded
into the bias, and weights and bias doubled for a requantization by one SMMLAR. Which layers
take them: 3x3 depthwise with one filter per channel or one input channel, and 1x1
convolutions of depth 4 to 16 (deeper ones already reach two MACs per SMLAD through
``tl_fc_s8``)."""
from __future__ import annotations

import functools

import numpy as np

from ...datum import DatumType
from ..emit import Emit

HEADER = "tl_conv_dsp.h"
#: depths of the 1x1 convolutions whose weights are stored widened
WIDE_DEPTHS = (4, 8, 12, 16)
#: points of an output's steps checked at once by _fitted before its candidates are narrowed
_FIT_POINTS = 16


def pairs(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """int32 words holding ``low`` in their bottom halfword and ``high`` in their top one."""
    low, high = np.asarray(low, np.int64), np.asarray(high, np.int64)
    return ((high << 16) | (low & 0xFFFF)).astype(np.int32)


def depthwise_pairs(taps: np.ndarray) -> np.ndarray:
    """``taps`` [9][channels] (a multiple of 4 of them kept) as 18 words per group of four
    channels: per tap pair (0,1), (2,3), (4,5), (6,7) one word per channel, then tap 8 as
    [c0 | c2], [c1 | c3]."""
    groups = taps.shape[1] // 4
    words: list[np.int32] = []
    for g in range(groups):
        c = 4 * g
        for p in range(4):
            words.extend(pairs(taps[2 * p, c:c + 4], taps[2 * p + 1, c:c + 4]))
        words.extend(pairs(taps[8, [c, c + 1]], taps[8, [c + 2, c + 3]]))
    return np.array(words, np.int32)


def row_pairs(taps: np.ndarray, bias: np.ndarray | None = None, rq: np.ndarray | None = None) -> np.ndarray:
    """``taps`` [9][channels] (4 or more) as 24 words per group of four channels: per window row,
    per pass (channels c and c + 2, then c + 1 and c + 3) [w0 | w1] of its two channels, then
    [w1 | w2] of both (tl_dwconv3x3_s8_rows reads each pair by one LDRD); when the channels are not
    a multiple of 4, a last group of the last four channels. With ``bias`` and ``rq`` (stride 2),
    each group's words are followed by the biases of its channels in the order of the passes (c,
    c + 2, c + 1, c + 3), which the first row of a pass reads by one LDRD, then per pass the
    requantization words {m, K} of its two channels and their two r (tl_requant_doubled's; read
    from the weights' pointer, no other)."""
    rows = taps.reshape(3, 3, -1)
    channels = rows.shape[2]
    starts = list(range(0, channels - 3, 4)) + ([channels - 4] if channels % 4 else [])
    words = []
    for c in starts:
        for ky in range(3):
            for odd in (0, 1):
                pass_channels = (c + odd, c + odd + 2)
                words += [pairs(rows[ky, 0, ch], rows[ky, 1, ch]) for ch in pass_channels]
                words += [pairs(rows[ky, 1, ch], rows[ky, 2, ch]) for ch in pass_channels]
        if bias is not None and rq is not None:
            order = (c, c + 2, c + 1, c + 3)
            words += [np.int32(bias[ch]) for ch in order]
            for pair in (order[:2], order[2:]):  # m and K of both channels of a pass, then both r
                words += [np.int32(rq[3 * ch + k]) for ch in pair for k in (0, 1)]
                words += [np.int32(rq[3 * ch + 2]) for ch in pair]
    return np.array(words, np.int32)


def single_input_pairs(taps: np.ndarray) -> np.ndarray:
    """``taps`` [9][filters] as five words per filter: [w0 | w1] .. [w6 | w7], [w8 | 0]."""
    padded = np.concatenate([taps, np.zeros((1, taps.shape[1]), taps.dtype)])
    return pairs(padded[0::2], padded[1::2]).T.reshape(-1)


def widened_rows(w: np.ndarray) -> np.ndarray:
    """[units][depth] weights as depth / 2 words per unit: per 4 depths [d0 | d2], [d1 | d3]."""
    units, depth = w.shape
    blocks = w.reshape(units, depth // 4, 4)
    words = np.stack([pairs(blocks[..., 0], blocks[..., 2]), pairs(blocks[..., 1], blocks[..., 3])], axis=-1)
    return words.reshape(-1)


def doubled_bias(raw_bias: np.ndarray, x_offset: int, weights: np.ndarray) -> np.ndarray | None:
    """2 (bias + x_offset * the sum of the weights) per output (``weights`` [taps][outputs]), or
    None when an accumulator could reach 2^30 in magnitude (its double would leave the int32 range)."""
    total = raw_bias.astype(np.int64) + int(x_offset) * weights.sum(axis=0).astype(np.int64)
    bound = np.abs(total) + 128 * np.abs(weights).sum(axis=0).astype(np.int64)
    return 2 * total if bound.max(initial=0) < 1 << 30 else None


def doubled_requant(multipliers, shifts, zero: int, channels: int) -> tuple[np.ndarray, int]:
    """tl_requant_doubled's words per channel, {multiplier, K, r} with r = -shift and
    K = 2^(r-1) + zero * 2^r, and whether some channel takes TFLite's recipe instead,
    {multiplier, shift, -1}: a shift above -1, |K| >= 2^30, or a negative multiplier (the kernels drop
    the sign term when the output's lower bound is at least its zero point, exact for m >= 0 only)."""
    m = np.broadcast_to(np.atleast_1d(np.asarray(multipliers, np.int64)), (channels,))
    shift = np.broadcast_to(np.atleast_1d(np.asarray(shifts, np.int64)), (channels,))
    r = np.clip(-shift, 1, 31)
    k = (np.int64(1) << (r - 1)) + int(zero) * (np.int64(1) << r)
    fused = (-shift >= 1) & (-shift <= 31) & (np.abs(k) < 1 << 30) & (m >= 0)
    words = np.stack([m, np.where(fused, k, shift), np.where(fused, r, -1)], axis=1)
    return words.reshape(-1).astype(np.int32), int(not fused.all())


def shared_shift(rq: np.ndarray, mixed: int, zero: int, low: int, raw_bias: np.ndarray, x_offset: int,
                 taps: np.ndarray, high: int = 127) -> tuple[int, np.ndarray, np.ndarray] | None:
    """_shared_shift, remembered for the last layers asked about (a RAM budget's search lowers
    each layer many times); the arrays returned are read-only."""
    arrays = tuple((a.dtype.str, a.shape, a.tobytes()) for a in (np.asarray(rq), np.asarray(raw_bias),
                                                                  np.asarray(taps)))
    return _remembered_shift(arrays, int(mixed), int(zero), int(low), int(x_offset), int(high))


@functools.lru_cache(maxsize=64)
def _remembered_shift(arrays: tuple, mixed: int, zero: int, low: int, x_offset: int,
                      high: int) -> tuple[int, np.ndarray, np.ndarray] | None:
    rq, raw_bias, taps = (np.frombuffer(data, np.dtype(kind)).reshape(shape) for kind, shape, data in arrays)
    found = _shared_shift(rq, mixed, zero, low, raw_bias, x_offset, taps, high)
    if found is not None:
        for array in found[1:]:
            array.setflags(write=False)
    return found


def _shared_shift(rq: np.ndarray, mixed: int, zero: int, low: int, raw_bias: np.ndarray, x_offset: int,
                  taps: np.ndarray, high: int = 127) -> tuple[int, np.ndarray, np.ndarray] | None:
    """One shift R for every channel of tl_dwconv3x3_s8_rows (its argument ``shared``): R = the
    largest shift + 1, d = R - r per channel, (R, each channel's scale 2^(1+d) of its weights and
    bias in place of 2, the requantization words {m, K 2^d + 2^(d-1), 1 + d}); when the shifts
    differ too much for that (a scaled weight past int16), a smaller R with the channels whose
    shift reaches it pre-shifted (see _pre_shifted). None when some channel takes TFLite's recipe,
    the output's lower bound is below its zero point (the form has no sign term), or a scaled
    weight, accumulator or K would leave its range."""
    if mixed or low < zero:
        return None
    m, k, r = rq.astype(np.int64).reshape(-1, 3).T
    big = int(r.max(initial=0)) + 1
    magnitude = np.abs(taps).astype(np.int64)
    reach = (np.abs(raw_bias.astype(np.int64)) + (abs(int(x_offset)) + 128) * magnitude.sum(axis=0))
    for shift in range(big, 0, -1):
        d = np.maximum(shift - r, 0)
        scale = np.int64(1) << (1 + d)
        words = np.stack([m, k * (np.int64(1) << d) + np.where(d > 0, np.int64(1) << np.maximum(d - 1, 0), 0), 1 + d],
                         axis=1)
        if shift > 31 or (magnitude.max(axis=0, initial=0) * scale).max(initial=0) > 32767 or \
                (reach * scale).max(initial=0) >= 1 << 31 or np.abs(words[:, 1]).max(initial=0) >= 1 << 30:
            continue
        if shift == big:
            return big, scale, words.reshape(-1).astype(np.int32)
        found = _pre_shifted(words, r, shift, zero, low, high, raw_bias, x_offset, taps)
        if found is not None:
            return shift, scale, found.reshape(-1).astype(np.int32)
    return None


def _tflite_out(x: np.ndarray, m: int, r: int, zero: int, low: int, high: int) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier(x, m, -r) + zero, clamped to [low, high]."""
    y = (x * m + (1 << 30)) >> 31
    mask = (1 << r) - 1
    y = (y >> r) + ((y & mask) > (mask >> 1) + (y < 0))
    return np.clip(y + zero, low, high)


def _pre_shifted(words: np.ndarray, r: np.ndarray, shift: int, zero: int, low: int, high: int,
                 raw_bias: np.ndarray, x_offset: int, taps: np.ndarray) -> np.ndarray | None:
    """``words`` with each channel whose shift r is at least ``shift`` requantized as
    floor((2x M + K 2^32) / 2^(32 + shift)) (its accumulator stays 2x): M next to m 2^(shift - r)
    and K such that the steps of the output fall on TFLite's (_fitted), kept only when they give
    TFLite's output for every accumulator x the channel can reach (bias plus each weight times an
    input from -128 to 127 less the zero point, padding taps zero: all of them checked); None when
    some channel has no such M and K."""
    if shift > 24:  # keeps _fitted's products and bounds (at most 2^(38 + shift)) inside int64
        return None
    words = words.copy()
    for ch in np.flatnonzero(r >= shift):
        w = taps[:, ch].astype(np.int64)
        base = int(raw_bias[ch]) + int(x_offset) * int(w.sum())
        x = np.arange(base + int(np.minimum(w * -128, w * 127).sum()),
                      base + int(np.maximum(w * -128, w * 127).sum()) + 1, dtype=np.int64)
        want = _tflite_out(x, int(words[ch, 0]), int(r[ch]), zero, low, high)
        fit = _fitted(x, want, int(words[ch, 0]) / 2.0 ** (int(r[ch]) - shift), shift, low, high)
        if fit is None or not (0 <= fit[0] < 1 << 31 and -(1 << 31) <= fit[1] < 1 << 31):  # int32 words
            return None
        if not np.array_equal(np.clip((2 * x * fit[0] + (fit[1] << 32)) >> (32 + shift), low, high), want):
            return None
        words[ch] = (fit[0], fit[1], 1)
    return words


def _fitted(x: np.ndarray, want: np.ndarray, exact: float, shift: int, low: int, high: int) -> tuple[int, int] | None:
    """(M, K), M >= 0 the nearest to ``exact`` with some K, such that
    clamp(floor((x M + K 2^31) / 2^(31 + shift))) is ``want`` at both ends of each of its steps
    and of x's range (then everywhere between, both being monotonic); None when none within 2^16."""
    edges = np.flatnonzero(np.diff(want)) if want.size > 1 else np.zeros(0, np.int64)
    at = np.unique(np.concatenate([[0, want.size - 1], edges, edges + 1]))
    m = np.arange(max(0, int(exact) - (1 << 16)), int(exact) + (1 << 16) + 1, dtype=np.int64)
    m = m[m < 1 << 31]
    unit = np.int64(1) << (31 + shift)
    k_low = np.full(m.size, np.int64(-1) << 62)
    k_high = np.full(m.size, np.int64(1) << 62)
    for start in range(0, at.size, _FIT_POINTS):  # the candidates left after each group of points
        xs = x[at[start:start + _FIT_POINTS]][:, None]
        ys = want[at[start:start + _FIT_POINTS]][:, None].astype(np.int64)
        lower = np.where(ys <= low, np.int64(-1) << 60, ys * unit) - xs * m[None, :]  # K 2^31 at least this
        upper = np.where(ys >= high, np.int64(1) << 60, (ys + 1) * unit - 1) - xs * m[None, :]  # at most this
        k_low = np.maximum(k_low, -((-lower.max(axis=0)) >> 31))
        k_high = np.minimum(k_high, upper.min(axis=0) >> 31)
        keep = k_low <= k_high
        if not keep.any():
            return None
        m, k_low, k_high = m[keep], k_low[keep], k_high[keep]
    best = int(np.argmin(np.abs(m - exact)))
    return int(m[best]), int(k_low[best])


def _usable(e: Emit, dtype: DatumType) -> bool:
    return e.target.dsp and not e.target.progmem and dtype == DatumType.I8


def emit_depthwise(e: Emit, x, y, offset: np.ndarray, raw_bias: np.ndarray, numbers: tuple, shape_args: tuple) -> bool:
    """A 3x3 int8 depthwise layer with one filter per channel (4 channels or more) or one input
    channel, on a DSP target; False (nothing emitted) for any other. ``offset``: [3][3][channels]
    weights without their zero point; ``numbers``: (multipliers, shifts, x_offset, zero, low,
    high); ``shape_args``: tl_dwconv_nhwc_s8's from batches to pad_left."""
    in_c, multiplier, k_h, k_w = shape_args[3], shape_args[6], shape_args[7], shape_args[8]
    if not _usable(e, x.dtype) or (k_h, k_w) != (3, 3) or not (multiplier == 1 and in_c >= 4 or in_c == 1):
        return False
    multipliers, shifts, x_offset, zero, low, high = numbers
    taps = offset.reshape(9, -1).astype(np.int64)
    total = doubled_bias(raw_bias, x_offset, taps)
    if total is None:
        return False
    rq, mixed = doubled_requant(multipliers, shifts, zero, taps.shape[1])
    e.use("tl_conv.h")
    e.use(HEADER)
    kinds = border_kinds(*shape_args[1:3], *shape_args[4:6], *shape_args[9:15])
    if in_c > 1 and shape_args[10] in (1, 2) and shape_args[12] == 1 and kinds is not None:
        if _emit_rows(e, x, y, taps, raw_bias, rq, mixed, numbers, shape_args, kinds):
            return True
    plain = e.constant("weights", offset, DatumType.I8) if in_c % 4 and in_c > 1 else "NULL"
    bias = e.constant("bias", total, DatumType.I32)
    requant = e.constant("requant", rq, DatumType.I32)
    if in_c == 1:
        e.call("tl_dwconv3x3_s8_single", x, e.constant("weights_pairs", single_input_pairs(2 * taps), DatumType.I32),
               bias, y, "NULL", *shape_args, x_offset, requant, mixed, zero, low, high)
        return True
    zeros = e.constant("zero_points", np.full(in_c, -x_offset, np.int64), DatumType.I8)
    e.call("tl_dwconv3x3_s8_packed", x, e.constant("weights_pairs", depthwise_pairs(2 * taps), DatumType.I32),
           bias, y, plain, *shape_args, x_offset, requant, mixed, zero, low, high, zeros)
    return True


def _emit_rows(e: Emit, x, y, taps: np.ndarray, raw_bias: np.ndarray, rq: np.ndarray, mixed: int, numbers: tuple,
               shape_args: tuple, kinds) -> bool:
    """tl_dwconv3x3_s8_rows (stride 1 or 2 along the rows, no dilation there), with one shift
    for all channels where shared_shift finds one; False (nothing emitted) when a bias of some
    kind of border window cannot be doubled."""
    _, _, x_offset, zero, low, high = numbers
    in_c = taps.shape[1]
    row_kind, col_kind, windows = kinds
    kind_bias = [doubled_bias(raw_bias, x_offset, taps.reshape(3, 3, -1)[r0:r1, c0:c1].reshape(-1, in_c))
                 for (r0, r1), (c0, c1) in windows]
    total = doubled_bias(raw_bias, x_offset, taps)
    found = [b for b in kind_bias if b is not None]
    if total is None or len(found) != len(kind_bias):
        return False
    shared = shared_shift(rq, mixed, zero, low, raw_bias, x_offset, taps, high)
    shift, scale = 0, np.full(in_c, 2, np.int64)
    if shared is not None:
        shift, scale, rq = shared
    halves = scale // 2
    grouped = (total * halves, rq) if shape_args[10] == 2 else (None, None)
    e.call("tl_dwconv3x3_s8_rows", x,
           e.constant("weights_pairs", row_pairs(scale * taps, *grouped), DatumType.I32),
           e.constant("bias", total * halves, DatumType.I32), y, "NULL", *shape_args, x_offset,
           e.constant("requant", rq, DatumType.I32), mixed, zero, low, high,
           e.constant("border_bias", np.concatenate([b * halves for b in found]), DatumType.I32),
           e.constant("row_kinds", row_kind, DatumType.I32), e.constant("col_kinds", col_kind, DatumType.I32),
           len({c for _, c in windows}), shift)
    return True


def valid_taps(start: int, dilation: int, size: int) -> tuple[int, int]:
    """The first and one-past-last of 3 taps from ``start`` (step ``dilation``) inside [0, size),
    as tl_valid_taps finds them (also where none is)."""
    low, high = 0, 3
    while low < 3 and start + low * dilation < 0:
        low += 1
    while high > low and start + (high - 1) * dilation >= size:
        high -= 1
    return low, high


def border_kinds(in_h: int, in_w: int, out_h: int, out_w: int, stride_h: int, stride_w: int, dil_h: int,
                 dil_w: int, pad_top: int, pad_left: int):
    """(the kind of each range of valid rows [ky0, ky1) at ky0 * 4 + ky1, the same for columns,
    the (rows, columns) of valid taps of each kind, row kinds major) of a 3x3 window, or None when
    some output has fewer than two valid columns (tl_dwconv3x3_s8_rows computes its borders over
    pairs of columns). Bands of rows (bands.py) see the same kinds: a band holds every input row
    its outputs read but the padding."""
    row_kinds = sorted({valid_taps(oy * stride_h - pad_top, dil_h, in_h) for oy in range(out_h)})
    # (0, 3) always: tl_dwconv3x3_s8_rows's passes over rows at the top or bottom start from it
    col_kinds = sorted({valid_taps(ox * stride_w - pad_left, dil_w, in_w) for ox in range(out_w)} | {(0, 3)})
    if any(c1 - c0 < 2 for c0, c1 in col_kinds):
        return None
    row_kind, col_kind = np.zeros(16, np.int64), np.zeros(16, np.int64)
    for index, (k0, k1) in enumerate(row_kinds):
        row_kind[k0 * 4 + k1] = index
    for index, (k0, k1) in enumerate(col_kinds):
        col_kind[k0 * 4 + k1] = index
    return row_kind, col_kind, [(r, c) for r in row_kinds for c in col_kinds]


def emit_pointwise(e: Emit, x, y, offset: np.ndarray, raw_bias: np.ndarray, numbers: tuple, depth: int) -> bool:
    """A 1x1 stride-1 int8 convolution of depth 4 to 16 on a DSP target, with widened weights;
    False (nothing emitted) for any other. ``offset``: [filters][1][1][depth]."""
    if not _usable(e, x.dtype) or depth not in WIDE_DEPTHS:
        return False
    multipliers, shifts, x_offset, zero, low, high = numbers
    filters = offset.shape[0]
    rows = offset.reshape(filters, depth).astype(np.int64)
    total = doubled_bias(raw_bias, x_offset, rows.T)
    if total is None:
        return False
    rq, mixed = doubled_requant(multipliers, shifts, zero, filters)
    bias = e.constant("bias", total, DatumType.I32)
    pixels = int(np.prod(x.shape[:-1]))
    e.use("tl_conv.h")
    e.use(HEADER)
    weights = e.constant("weights_wide", widened_rows(2 * rows), DatumType.I32)
    requant = e.constant("requant", rq, DatumType.I32)
    e.call("tl_pointwise_s8_wide", x, weights, bias, y, pixels, depth, filters, requant, mixed, zero, low, high)
    return True
