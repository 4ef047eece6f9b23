"""The host's convolutions and dense layers as GEMM micro-kernels (``tl_gemm.h``, with
``tl_gemm_x86.h`` and ``tl_gemm_neon.h`` chosen by the C compiler's target macros): weights packed
here in the micro-kernels' order, blocks of 16 output channels, the input zero point folded into
the bias. Taken on the host target only (the library is built by the machine that runs it, with
``-march=native``); microcontroller targets keep their kernels. Integer results equal the portable
kernels' bit for bit: the same int32 sums modulo 2^32 and the same requantization.
"""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...graph import OutletId
from ...ops.binary import Add
from ...ops.quantized.fixedpoint import wrap32
from ..emit import Emit
from ..program import ARENA, CTensor, Overlap

HEADERS = ("tl_conv.h", "tl_threads.h", "tl_gemm.h", "tl_gemm_x86.h", "tl_gemm_neon.h", "tl_gemm_s16.h",
           "tl_gemm_direct.h", "tl_conv_few_x86.h", "tl_dw_pairs_x86.h")
#: multiply-adds from which a layer may be split across threads (tl_threads.h's TL_THREADS_MIN_WORK):
#: its output gets memory of its own, not overlapping its input, so that rows can be computed out of order
THREAD_WORK = 1 << 22
#: bytes of scratch a thread other than the caller has for its rows (tl_threads.h's TL_THREAD_COL_BYTES)
TL_THREAD_COL_BYTES = 256 * 1024
#: the context's threads (count and pool), the GEMM kernels' last argument (tl_threads.h splits rows by it)
THREADS = "&ctx->threads"
#: output channels per packed block (one zmm of int32 or float; tl_gemm.h's TL_GEMM_NR)
NR = 16
#: int8 rows copied (im2col'ed) at a time (tl_gemm.h's TL_GEMM_BLOCK)
BLOCK = 8
#: int8 pixels copied as int16 at a time where the AVX2 pair kernel runs (tl_gemm_s16.h's
#: TL_GEMM_S16_ROWS: one 6-row tile), and the most bytes of its int16 weights (a second copy of
#: the layer's weights, in the constants) for which a layer takes it
S16_ROWS = 6
S16_WIDE_BYTES = 1 << 20
#: the most filters of an int8 convolution read in place over int16 pairs (tl_conv_few_x86.h: one
#: ymm of 8 filters x 2 taps), and the most bytes of the input rows it widens to int16 at a time
FEW_FILTERS = 8
#: the most taps of a depthwise window taken in pairs over channels in lanes (tl_dw_pairs_x86.h)
DW_PAIRS_TAPS = 64
FEW_BAND_BYTES = 64 * 1024
#: the longest int8 rows of a dense layer copied through the stack rather than the arena (TL_GEMM_LOCAL)
LOCAL = 64
#: bytes of im2col'ed float rows a convolution copies at a time (they stay in L2 while every block of
#: 16 outputs runs over them), and the bounds of that count of rows (multiples of the AVX2 tile's 6
#: rows and NEON's 4)
F32_CHUNK_BYTES = 96 * 1024
F32_CHUNK_ROWS = (12, 96)


def f32_chunk_rows(taps: int) -> int:
    """Rows of a float convolution im2col'ed at a time (tl_conv_gemm_f32's ``chunk``)."""
    low, high = F32_CHUNK_ROWS
    return max(low, min(high, F32_CHUNK_BYTES // (4 * taps) // low * low))


def applies(e: Emit) -> bool:
    """Whether the node is built for the host, where these kernels are used (not for a host
    target standing in for a DSP one: those keep their repacked kernels)."""
    return e.target.name == "host" and not e.target.dsp


def use_gemm(e: Emit) -> None:
    """Include the host GEMM's headers (and tl_threads.h's split) in the node's program."""
    for header in HEADERS:
        e.use(header)
    e.uses_threads()


def padded_depth(depth: int) -> int:
    """The depth of an int8 row in the micro-kernels: a multiple of 4 (one 32-bit group)."""
    return -(-depth // 4) * 4


def pack_s8(w: np.ndarray) -> np.ndarray:
    """[units][depth] int8 weights as blocks of 16 outputs: 16 int32 words (128 * each output's
    weight sum, little-endian bytes), then per group of 4 depths 64 bytes, output j's 4 weights
    in bytes 4j .. 4j + 3; units and depth zero-padded."""
    units, depth = w.shape
    kp, blocks = padded_depth(depth), -(-units // NR)
    padded = np.zeros((blocks * NR, kp), np.int64)
    padded[:units, :depth] = w
    sums = wrap32(128 * padded.sum(axis=1)).astype("<i4").reshape(blocks, NR)
    groups = padded.reshape(blocks, NR, kp // 4, 4).transpose(0, 2, 1, 3).reshape(blocks, -1)
    return np.concatenate([sums.view(np.int8).reshape(blocks, -1), groups.astype(np.int8)], axis=1).reshape(-1)


def pack_s16(w: np.ndarray) -> np.ndarray:
    """[units][depth] int8 weights as int16 pairs for AVX2's ``vpmaddwd`` (tl_gemm_s16.h): blocks
    of 16 outputs, per pair of depths q, output j's weights 2q and 2q + 1; units and depth (to
    a multiple of 4) zero-padded."""
    units, depth = w.shape
    kp, blocks = padded_depth(depth), -(-units // NR)
    padded = np.zeros((blocks * NR, kp), np.int16)
    padded[:units, :depth] = w
    return np.ascontiguousarray(padded.reshape(blocks, NR, kp // 2, 2).transpose(0, 2, 1, 3)).reshape(-1)


def pack_few(w: np.ndarray) -> np.ndarray:
    """OHWI int8 weights (at most 8 filters) for tl_conv_few_x86.h: per window row, per pair q of
    its ``k_w * in_c`` taps, 8 filters x taps 2q and 2q + 1 as int16; filters and the last pair
    zero-padded."""
    filters, k_h, k_w, in_c = w.shape
    row = k_w * in_c
    pairs = -(-row // 2)
    padded = np.zeros((k_h, 2 * pairs, FEW_FILTERS), np.int16)
    padded[:, :row, :filters] = w.reshape(filters, k_h, row).transpose(1, 2, 0)
    return np.ascontiguousarray(padded.reshape(k_h, pairs, 2, FEW_FILTERS).transpose(0, 1, 3, 2)).reshape(-1)


def pack_dw_pairs(taps: np.ndarray) -> np.ndarray:
    """[kh][kw][channels] int8 depthwise weights for tl_dw_pairs_x86.h: per pair p of the window's
    taps, per channel c, taps 2p and 2p + 1 as int16; channels to a multiple of 16 and the last
    pair zero-padded."""
    k_h, k_w, channels = taps.shape
    count, padded = -(-(k_h * k_w) // 2), -(-channels // NR) * NR
    out = np.zeros((2 * count, padded), np.int16)
    out[:k_h * k_w, :channels] = taps.reshape(k_h * k_w, channels)
    return np.ascontiguousarray(out.reshape(count, 2, padded).transpose(0, 2, 1)).reshape(-1)


def few_width(in_w: int, in_c: int, out_w: int, k_h: int, k_w: int, stride_w: int, left: int) -> int | None:
    """The padded input's width (pixels) for tl_conv_few_s8, or None when its band of ``k_h``
    int16 rows would not fit a thread's scratch (or the padding is negative)."""
    image_w = max(left + in_w, (out_w - 1) * stride_w + k_w)
    if left < 0 or few_band_bytes(image_w, in_c, k_h) > FEW_BAND_BYTES:
        return None
    return image_w


def few_band_bytes(image_w: int, in_c: int, k_h: int) -> int:
    """Bytes of tl_conv_few_s8's scratch: ``k_h`` padded input rows as int16, and 2 more values."""
    return 2 * (k_h * image_w * in_c + 2)


def pack_f32(w: np.ndarray) -> np.ndarray:
    """[units][depth] float weights as blocks of 16 outputs, each [depth][16]; units zero-padded."""
    units, depth = w.shape
    blocks = -(-units // NR)
    padded = np.zeros((blocks * NR, depth), np.float32)
    padded[:units] = w
    return np.ascontiguousarray(padded.reshape(blocks, NR, depth).transpose(0, 2, 1)).reshape(-1)


def conv2d(e: Emit, x, y, w: np.ndarray, bias: np.ndarray | None, window, out_h: int, out_w: int, top: int,
           left: int) -> bool:
    """An NHWC convolution of one group (``w`` OHWI) on float32 or int8: emitted when on the host
    (with its overlap hints, as the portable kernels'); False when not taken."""
    op = e.op
    filters, k_h, k_w, depth = w.shape
    batches, in_h, in_w, in_c = x.shape
    if not applies(e) or depth != in_c or x.dtype not in (DatumType.F32, DatumType.I8) or not filters:
        return False
    if x.dtype == DatumType.I8 and (op.quant is None or op.flavour == "onnxruntime"):
        return False
    from .conv import _overlap_nhwc, offset_weights, pixel_lag, quantized_args, window_args
    from .fused import finish_activation, fused_float_activation

    use_gemm(e)
    geometry = (batches, in_h, in_w, in_c, out_h, out_w, filters, *window_args(window, top, left))
    taps = k_h * k_w * depth
    pointwise = (k_h == k_w == 1 and window.strides == (1, 1) and top == left == 0 and (out_h, out_w) == (in_h, in_w))
    if x.dtype == DatumType.F32:
        low, high = fused_float_activation(e, op.activation, y)
        bias_name = e.constant("bias", bias.astype(np.float32)) if bias is not None else "NULL"
        packed_f32 = e.constant("weights", pack_f32(w.reshape(filters, taps)))
        residual = residual_add(e, x, y)
        into = 0 if residual is not None else concat_slice(e, y)
        added: list = []
        if residual is not None:
            r, low, high = residual
            added = [r]
        kind = "_residual" if added else "_pitched" if into else ""
        pitch = [into] if into else []
        if pointwise:
            # the pixels are the GEMM's rows, read in place: no overlap of the output with the input
            e.call(f"tl_dense_gemm_f32{kind}", x, packed_f32, bias_name, y, *added, batches * in_h * in_w, depth,
                   filters, *pitch, np.float32(low), np.float32(high), THREADS)
            finish_activation(e, op.activation, y)
            return True
        chunk = f32_chunk_rows(taps)
        e.call(f"tl_conv_gemm_f32{kind}", x, packed_f32, bias_name, y, *added,
               e.scratch("col", DatumType.F32, chunk * taps), *geometry, np.float32(low), np.float32(high), chunk,
               *pitch, THREADS)
        finish_activation(e, op.activation, y)
        if into:
            return True
    else:
        offset = offset_weights(e, w).reshape(filters, taps)
        multiplier, shift, per_channel, x_offset, zero, low, high = quantized_args(e, x.dtype, filters)
        raw_bias = np.zeros(filters, np.int64) if bias is None else bias.astype(np.int64)
        folded = e.constant("bias", wrap32(raw_bias + x_offset * offset.sum(axis=1)), DatumType.I32)
        packed = e.constant("weights", pack_s8(offset), DatumType.I8)
        kp = padded_depth(taps)
        image_w = None
        if not pointwise and filters <= FEW_FILTERS and window.dilations[1] == 1:
            image_w = few_width(in_w, in_c, out_w, k_h, k_w, window.strides[1], left)
        if image_w is not None:
            band = few_band_bytes(image_w, in_c, k_h)
            few = e.constant("few", pack_few(offset.reshape(w.shape)), DatumType.I16)
            e.call("tl_conv_few_s8", x, packed, folded, y, e.scratch("col", DatumType.I8, max(BLOCK * kp, band)),
                   *geometry, -x_offset, kp, multiplier, shift, per_channel, zero, low, high, few, image_w, THREADS)
        else:
            wide_bytes = -(-filters // NR) * NR * kp * 2
            wide = (wide_bytes <= S16_WIDE_BYTES and S16_ROWS * kp * 2 <= TL_THREAD_COL_BYTES
                    and batches * out_h * out_w >= S16_ROWS)
            col = e.scratch("col", DatumType.I8, max(BLOCK, 2 * S16_ROWS if wide else 0) * kp)
            wide_name = e.constant("wide", pack_s16(offset), DatumType.I16) if wide else "NULL"
            if pointwise:
                e.call("tl_dense_gemm_s8", x, packed, folded, y, col, batches * in_h * in_w, depth, kp, filters,
                       multiplier, shift, "NULL", per_channel, zero, low, high, wide_name, THREADS)
            else:
                e.call("tl_conv_gemm_s8", x, packed, folded, y, col, *geometry, -x_offset, kp, multiplier, shift,
                       per_channel, zero, low, high, wide_name, THREADS)
    if batches * out_h * out_w * taps * filters >= THREAD_WORK:
        return True
    if pointwise and batches * in_h * in_w > 0:
        item = np.dtype(x.dtype.np).itemsize
        e.overlap(0, 0, pixel_lag(batches * in_h * in_w, in_c * item, filters * item))
    elif not pointwise:
        _overlap_nhwc(e, x, y, in_h, out_h, in_w * in_c, out_w * filters, window.strides[0], top, batches)
    return True


def residual_add(e: Emit, x: CTensor, y: CTensor) -> tuple[CTensor, float, float] | None:
    """A residual Add fused into a float convolution without activation: when the Add alone reads
    the node's output ``y`` and adds a tensor ``r`` of y's shape computed before the node, the
    kernel writes the Add's result into y (clamped by the Add's activation, which must be a clamp)
    and the Add becomes an alias of y (:func:`added_by_producer`). The convolution reads r (which
    then dies at it, unless read later) and may write y over it, element for element. (r, the
    clamp's bounds), or None when not fused."""
    from .fused import clamp_bounds

    lowering, node = e.lowering, e.node
    if e.op.activation is not None or len(node.outputs) != 1 or y.dtype != DatumType.F32:
        return None
    outlet = OutletId(node.id, 0)
    readers = lowering.model.outlet_successors(outlet)
    banded = lowering._banded
    if (len(readers) != 1 or outlet in lowering._output_ports or outlet in lowering.bound or node.id in banded
            or y.view is not None):
        return None
    add = lowering.model.nodes[readers[0].node]
    if (not isinstance(add.op, Add) or add.op.quant is not None or add.id in banded or len(add.inputs) != 2
            or add.inputs[0] == add.inputs[1] or OutletId(add.id, 0) in lowering.bound):
        return None
    bounds = clamp_bounds(add.op.activation)
    r = lowering.tensors.get(add.inputs[1 - readers[0].slot])
    if (bounds is None or r is None or r.dtype != DatumType.F32 or tuple(r.shape) != tuple(y.shape)
            or tuple(int(d) for d in add.outputs[0].fact.shape) != tuple(y.shape) or r.view is not None):
        return None
    y.residual = r
    e.code.inputs.append(r)
    if r is not x and r.storage == ARENA:
        e.code.overlaps.append(Overlap(y, r, 0))
    return r, *bounds


def added_by_producer(e: Emit) -> bool:
    """An Add whose sum the producer of one input wrote (:func:`residual_add`): its output is an
    alias of that input, and it reads the other no more; False for any other Add."""
    for slot in (0, 1):
        summed, other = e.input(slot), e.input(1 - slot)
        if summed.residual is not None and summed.residual is other:
            e.alias(0, slot)
            e.code.inputs = [summed]
            e.line(f"/* {e.output().var}: {summed.var} + {other.var}, added by {summed.var}'s producer */")
            return True
    return False


def concat_slice(e: Emit, y) -> int:
    """The pixel stride (in floats) of the channel Concat's output a float convolution writes its
    channels into in place (``y`` becomes a view of it: :func:`.array.channel_slice`), or 0 when
    ``y`` is a tensor of its own. Only for activations the kernel clamps (no later pass over y)."""
    from .array import channel_slice
    from .fused import clamp_bounds

    found = channel_slice(e) if clamp_bounds(e.op.activation) is not None else None
    if found is None:
        return 0
    first, channels = found
    y.view = (4 * first, 4 * channels * (y.count // int(y.shape[-1])))
    return channels


def dense_f32(e: Emit, a, y, weights: np.ndarray, bias_name: str, batches: int, low: float, high: float) -> bool:
    """A float dense layer (``weights`` [depth][units]; its activation's bounds ``low``,
    ``high``) on the host; False when not taken."""
    depth, units = weights.shape
    if not applies(e) or not units or not depth:
        return False
    from .fused import finish_activation

    use_gemm(e)
    packed = e.constant("weights", pack_f32(np.asarray(weights, np.float32).T))
    e.call("tl_dense_gemm_f32", a, packed, bias_name, y, batches, depth, units, np.float32(low), np.float32(high),
           THREADS)
    finish_activation(e, e.op.activation, y)
    return True


def dense_s8(e: Emit, kernel, weight_offset: np.ndarray, batches: int, flavour: str) -> bool:
    """An int8 dense layer (TFLite's FULLY_CONNECTED: ``kernel`` the interpreter's IntegerDense,
    ``weight_offset`` [units][depth], the input zero point in its bias; requantized as
    ``flavour``'s) on the host; False when not taken."""
    from .dense import per_channel_values, requant_constants

    x, y = e.input(0), e.output(0)
    units, depth = weight_offset.shape
    if not applies(e) or x.dtype != DatumType.I8 or not units or not depth:
        return False
    use_gemm(e)
    kp = padded_depth(depth)
    col = "NULL" if kp == depth or kp <= LOCAL else e.scratch("col", DatumType.I8, BLOCK * kp)
    bias = e.constant("bias", wrap32(np.asarray(kernel.bias, np.int64)), DatumType.I32)
    if flavour == "reference":
        scale, per_channel = per_channel_values(e, "scale", kernel.rescale.scale, DatumType.F64)
        requant: tuple = ("NULL", "NULL", scale, per_channel)
    else:
        multiplier, shift, per_channel = requant_constants(e, kernel.rescale.multiplier, kernel.rescale.shift, units)
        requant = (multiplier, shift, "NULL", per_channel)
    e.call("tl_dense_gemm_s8", x, e.constant("weights", pack_s8(weight_offset), DatumType.I8), bias, y, col,
           batches, depth, kp, units, *requant, kernel.zero, kernel.low, kernel.high, "NULL", THREADS)
    return True


def depthwise(e: Emit, x, y, taps: np.ndarray, bias: np.ndarray | None, window, out_h: int, out_w: int, top: int,
              left: int) -> bool:
    """An int8 depthwise convolution with one filter per channel (``taps`` [kh][kw][channels]) on
    the host, requantized 16 channels at a time; False when not taken."""
    op = e.op
    k_h, k_w, channels = taps.shape
    batches, in_h, in_w, in_c = x.shape
    if not applies(e) or x.dtype != DatumType.I8 or op.quant is None or channels != in_c or not in_c:
        return False
    from .conv import _overlap_nhwc, offset_weights, quantized_numbers, window_args

    use_gemm(e)
    multipliers, shifts, x_offset, zero, low, high = quantized_numbers(e, x.dtype)
    padded = -(-in_c // NR) * NR

    def per_channel(values) -> np.ndarray:
        out = np.zeros(padded, np.int64)
        out[:in_c] = np.broadcast_to(np.atleast_1d(np.asarray(values, np.int64)), (in_c,))
        return out

    shift = per_channel(shifts)
    raw_bias = per_channel(0 if bias is None else bias)
    offset = offset_weights(e, taps)
    pairs: tuple = ()
    if k_h * k_w <= DW_PAIRS_TAPS:
        folded = raw_bias + x_offset * per_channel(offset.sum(axis=(0, 1)))
        pairs = (e.constant("pairs", pack_dw_pairs(offset), DatumType.I16),
                 e.constant("folded", wrap32(folded), DatumType.I32))
    e.call("tl_dwconv_pairs_s8" if pairs else "tl_dwconv_host_s8", x,
           e.constant("weights", offset, DatumType.I8), e.constant("bias", wrap32(raw_bias), DatumType.I32), y,
           e.scratch("acc", DatumType.I32, padded), batches, in_h, in_w, in_c, out_h, out_w,
           *window_args(window, top, left), x_offset, e.constant("multiplier", per_channel(multipliers), DatumType.I32),
           e.constant("left", np.maximum(shift, 0), DatumType.I32),
           e.constant("right", np.maximum(-shift, 0), DatumType.I32), zero, low, high, *pairs)
    _overlap_nhwc(e, x, y, in_h, out_h, in_w * in_c, out_w * in_c, window.strides[0], top, batches)
    return True
