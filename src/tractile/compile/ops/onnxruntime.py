"""The onnxruntime flavour of the quantized core ops in C (``tl_ort.h``): convolutions, dense
layers, QLinearAdd / QLinearMul, average pools and QLinearConcat as onnxruntime computes them
(float32 requantization, halves to even), bit for bit with the interpreter's recipes
(``ops.quantized.onnxruntime``). Each family's emitter hands its ``flavour="onnxruntime"`` ops
here; the unary ops' tables need nothing special (they are the prepared op's own results)."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.conv_nhwc import is_depthwise, to_ohwi
from ...ops.pool_nhwc import covers_input, tap_counts
from ...ops.quantized.common import integer_limits, recipe_of, scale_of, zero_of
from ...ops.quantized.conv import ConvQuant
from ...ops.quantized.dense import IntegerDense
from ...ops.quantized.fixedpoint import wrap32
from ...ops.quantized.onnxruntime import AveragePoolRecipe, BinaryRecipe
from ...ops.quantized.onnxruntime import ConcatRecipe as OrtConcat
from ..emit import Emit
from ..registry import Unsupported
from .conv import geometry, window_args
from .elementwise import C_TYPES, broadcast_loop

HEADER = "tl_ort.h"
SUFFIX = {DatumType.I8: "s8", DatumType.U8: "u8"}


def use_header(e: Emit) -> None:
    """Include ``tl_ort.h`` and the headers it builds on."""
    for header in ("tl_conv.h", "tl_fully_connected.h", HEADER):
        e.use(header)


def _suffix(dtype: DatumType) -> str:
    if dtype not in SUFFIX:
        raise Unsupported(f"onnxruntime's quantized kernels on {dtype} (int8 and uint8 are compiled)")
    return SUFFIX[dtype]


def _scales(e: Emit, scales: np.ndarray, channels: int, as_bits: bool = False) -> tuple[str, int]:
    """The float32 scales (one, or one per channel) as a constant; the channel stride."""
    values = np.asarray(scales, dtype=np.float32).reshape(-1)
    if values.size > 1 and np.all(values == values[0]):
        values = values[:1]
    if values.size != 1:
        values = np.broadcast_to(values, (channels,))
    if as_bits:
        return e.constant("scale_bits", values.view(np.int32), DatumType.I32), int(values.size > 1)
    return e.constant("scale", values, DatumType.F32), int(values.size > 1)


def _offset_weights(w: np.ndarray, zero: int) -> np.ndarray:
    offset = w.astype(np.int64) - zero
    if offset.min(initial=0) < -128 or offset.max(initial=0) > 127:
        raise Unsupported("weights whose zero point leaves them outside int8 once offset")
    return offset


def conv(e: Emit) -> None:
    """An NHWC quantized Conv (dense or depthwise kernel)."""
    op = e.op
    x, y = e.input(0), e.output(0)
    recipe: ConvQuant = recipe_of(op)
    suffix = _suffix(x.dtype)
    batches, in_h, in_w, in_c = x.shape
    bias = e.const_input(2, "the bias").reshape(-1).astype(np.int64) if len(e.node.inputs) > 2 else None
    w = e.const_input(1, "the weights")
    depthwise = op.kernel_format == "HWIO" and is_depthwise(op, int(in_c), w.shape)
    if not depthwise and op.group != 1:
        raise Unsupported("grouped integer convolutions (groups of several channels)")
    if depthwise:
        k_h, k_w, _, filters = w.shape
        weights = _offset_weights(w.reshape(k_h, k_w, filters), recipe.w_zero)
    else:
        weights = _offset_weights(np.ascontiguousarray(to_ohwi(w, op.kernel_format)), recipe.w_zero)
        filters, k_h, k_w, _ = weights.shape
    window, out_h, out_w, top, left = geometry(op, x.shape, k_h, k_w)
    raw_bias = np.zeros(filters, np.int64) if bias is None else bias
    assert recipe.scales is not None  # the onnxruntime flavour's recipe
    scales, per_channel = _scales(e, recipe.scales, filters, as_bits=True)
    use_header(e)
    common = (-recipe.x_zero, scales, scales, per_channel, recipe.zero, recipe.low, recipe.high)
    if depthwise:
        e.call(f"tl_dwconv_nhwc_{suffix}_ort", x, e.constant("weights", weights, DatumType.I8),
               e.constant("bias", raw_bias, DatumType.I32), y, e.scratch("acc", DatumType.I32, filters), batches,
               in_h, in_w, in_c, out_h, out_w, filters // int(in_c), *window_args(window, top, left), *common)
    else:
        e.call(f"tl_conv_nhwc_{suffix}_ort", x, e.constant("weights", weights, DatumType.I8),
               e.constant("bias", raw_bias, DatumType.I32), y, batches, in_h, in_w, in_c, out_h, out_w, filters,
               *window_args(window, top, left), weights.shape[-1] if not depthwise else 1, *common)


def dense(e: Emit, kernel: IntegerDense, units: int, depth: int, batches: int) -> None:
    """A dense layer (weights (units, depth) offset by their zero point, the input's folded into the bias)."""
    x, y = e.input(0), e.output(0)
    suffix = _suffix(x.dtype)
    offset = np.rint(kernel.weights_t.T).astype(np.int64)
    weight_type = DatumType.I8 if x.dtype == DatumType.I8 else DatumType.I16
    if weight_type == DatumType.I8:
        _offset_weights(offset, 0)
    scales, per_channel = _scales(e, kernel.rescale.scale, units)
    use_header(e)
    e.call(f"tl_fc_{suffix}_ort", x, e.constant("weights", np.ascontiguousarray(offset), weight_type),
           e.constant("bias", wrap32(np.asarray(kernel.bias, dtype=np.int64)), DatumType.I32), y, batches, depth,
           units, scales, per_channel, kernel.zero, kernel.low, kernel.high)


def binary(e: Emit, recipe: BinaryRecipe) -> None:
    """QLinearAdd / QLinearMul, element by element with broadcasting."""
    a, b, y = e.input(0), e.input(1), e.output(0)
    _suffix(a.dtype)
    use_header(e)
    za, zb, zo = zero_of(recipe.a_q), zero_of(recipe.b_q), zero_of(recipe.quant)
    sa, sb, so = (np.float32(scale_of(q)) for q in (recipe.a_q, recipe.b_q, recipe.quant))
    offsets = f"va - ({za}), vb - ({zb})"
    if recipe.kind == "add":
        value = f"tl_ort_add({offsets}, {e.arg(sa)}, {e.arg(sb)}, {e.arg(so)}, {zo}, {recipe.low}, {recipe.high})"
    else:
        ratio = np.float32(np.float32(sa * sb) / so)
        value = f"tl_ort_mul({offsets}, {e.arg(ratio)}, {zo}, {recipe.low}, {recipe.high})"
    broadcast_loop(e, a, b, y, f"({C_TYPES[y.dtype]}){value}")


def average_pool(e: Emit) -> None:
    """QLinearAveragePool (NHWC); over the whole plane without padding, QLinearGlobalAveragePool."""
    op = e.op
    x, y = e.input(0), e.output(0)
    recipe: AveragePoolRecipe = recipe_of(op)
    suffix = _suffix(x.dtype)
    batches, in_h, in_w, channels = (int(d) for d in x.shape)
    if any(d != 1 for d in op.window.dilations):
        raise Unsupported("a dilated average pool")
    use_header(e)
    if covers_input(op.window, (in_h, in_w)):
        requant = recipe.global_requant(in_h * in_w)
        e.call(f"tl_gap_nhwc_{suffix}_ort", x, y, batches, in_h * in_w, channels, zero_of(recipe.x_q),
               np.float32(requant.scales[0]), requant.zero, requant.low, requant.high)
        return
    begins, _, (out_h, out_w) = op.window.concrete_pads((in_h, in_w))
    counts = tap_counts(op, (in_h, in_w)).reshape(-1).astype(np.float32)
    e.call(f"tl_avg_pool_nhwc_{suffix}_ort", x, y, batches, in_h, in_w, channels, out_h, out_w, *op.window.kernel,
           *op.window.strides, begins[0], begins[1], e.constant("counts", counts, DatumType.F32),
           zero_of(recipe.x_q), np.float32(scale_of(recipe.x_q)), np.float32(scale_of(recipe.quant)),
           zero_of(recipe.quant), recipe.low, recipe.high)


def concat(e: Emit) -> None:
    """QLinearConcat: each input copied, or mapped through its table, into its slice of the output."""
    op = e.op
    recipe: OrtConcat = recipe_of(op)
    y = e.output(0)
    _suffix(y.dtype)
    shape = [int(d) for d in y.shape]
    axis = op.axis % len(shape)
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    row = int(np.prod(shape[axis:], dtype=np.int64))
    offset = 0
    read = "TL_READ_S8" if y.dtype == DatumType.I8 else "TL_READ_U8"
    base = integer_limits(y.dtype)[0]
    for index, table in enumerate(recipe.tables):
        x = e.input(index)
        inner = int(np.prod([int(d) for d in x.shape][axis:], dtype=np.int64))
        at = f"{y.var}[o * {row} + {offset} + i]"
        if table is None:
            value = f"{x.var}[o * {inner} + i]"
        else:
            name = e.constant(f"table{index}", table.table, y.dtype)
            value = f"{read}({name} + ({x.var}[o * {inner} + i] - ({base})))"
        e.line(f"for (int32_t o = 0; o < {outer}; ++o)\n  for (int32_t i = 0; i < {inner}; ++i) {at} = {value};")
        x.used = True
        offset += inner
    y.used = True
    e.set_kernel("(tables)")
