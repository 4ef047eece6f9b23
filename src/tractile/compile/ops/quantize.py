"""Quantize (float to integers, integer requantization) and Dequantize, per tensor, as loops
written into the node's code from their recipes (bit for bit with the interpreter)."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.quant import Dequantize, DequantizeLinear, Quantize, QuantizeLinear
from ...ops.quantized.common import integer_limits, recipe_of, scale_of, zero_of
from ...ops.quantized.quantize import QuantizeRecipe, RequantizeRecipe
from ..ctext import literal
from ..emit import Emit
from ..registry import Unsupported, emitter
from .elementwise import C_TYPES


def per_tensor(q, what: str):
    if q is None or len(q.scale) != 1:
        raise Unsupported(f"{what} quantized per channel (per tensor is compiled)")
    return q


@emitter(Quantize)
def quantize(e: Emit) -> None:
    x, y = e.input(0), e.output(0)
    recipe = recipe_of(e.op)
    if y.dtype not in C_TYPES or y.dtype == DatumType.F32:
        raise Unsupported(f"Quantize to {y.dtype}")
    low, high = integer_limits(y.dtype)
    cast = C_TYPES[y.dtype]
    e.use("tl_common.h")
    if isinstance(recipe, QuantizeRecipe) and x.dtype == DatumType.F32:
        out_q = per_tensor(recipe.quant, "an output")
        scale = literal(float(np.float32(scale_of(out_q))), DatumType.F32)
        e.line(f"for (int32_t i = 0; i < {x.count}; ++i) {{\n"
               f"  const int64_t v = tl_round_half_away((double)({x.var}[i] / {scale})) + ({zero_of(out_q)});\n"
               f"  {y.var}[i] = ({cast})(v < {low} ? {low} : (v > {high} ? {high} : v));\n}}")
    elif isinstance(recipe, RequantizeRecipe) and x.dtype in C_TYPES:
        requant = recipe.requant
        e.line(f"for (int32_t i = 0; i < {x.count}; ++i)\n"
               f"  {y.var}[i] = ({cast})tl_clamp_i32(tl_mbqm((int32_t){x.var}[i] - ({recipe.zi}), "
               f"{int(requant.multipliers[0])}, {int(requant.shifts[0])}) + ({recipe.zo}), {low}, {high});")
    else:
        raise Unsupported(f"Quantize from {x.dtype}")
    x.used = y.used = True
    e.set_kernel("(loop)")


@emitter(Dequantize)
def dequantize(e: Emit) -> None:
    x, y = e.input(0), e.output(0)
    if x.dtype not in C_TYPES or x.dtype == DatumType.F32:
        raise Unsupported(f"Dequantize from {x.dtype}")
    q = per_tensor(recipe_of(e.op).quant, "an input")
    scale = literal(float(np.float64(np.float32(scale_of(q)))), DatumType.F64)
    e.line(f"for (int32_t i = 0; i < {x.count}; ++i)\n"
           f"  {y.var}[i] = (float)({scale} * (double)((int32_t){x.var}[i] - ({zero_of(q)})));")
    x.used = y.used = True
    e.set_kernel("(loop)")


def _linear_params(e: Emit) -> tuple[float, int]:
    """The constant per-tensor scale and zero point of a QuantizeLinear / DequantizeLinear."""
    scale = e.const_value(1)
    zero = e.const_value(2) if len(e.node.inputs) > 2 else np.zeros((), np.int64)
    if scale is None or zero is None or scale.size != 1 or zero.size != 1 or e.op.block_size:
        raise Unsupported(f"{e.op.name} with run-time or per-channel parameters (constant per-tensor ones compile)")
    return float(np.float32(scale.reshape(-1)[0])), int(zero.reshape(-1)[0])


@emitter(QuantizeLinear)
def quantize_linear(e: Emit) -> None:
    """ONNX's QuantizeLinear, float32 to int8 / uint8: ``rint(x / scale) + zero``, saturated (halves
    to even, as the interpreter and onnxruntime round)."""
    x, y = e.input(0), e.output(0)
    if x.dtype != DatumType.F32 or y.dtype not in (DatumType.I8, DatumType.U8) or e.op.precision is not None:
        raise Unsupported(f"QuantizeLinear from {x.dtype} to {y.dtype} (float32 to int8 and uint8 compile)")
    scale, zero = _linear_params(e)
    low, high = integer_limits(y.dtype)
    from .onnxruntime import use_header

    use_header(e)
    e.line(f"for (int32_t i = 0; i < {x.count}; ++i)\n"
           f"  {y.var}[i] = ({C_TYPES[y.dtype]})tl_ort_quantize({x.var}[i], {literal(scale, DatumType.F32)}, "
           f"{zero}, {low}, {high});")
    x.used = y.used = True
    e.set_kernel("(loop)")


@emitter(DequantizeLinear)
def dequantize_linear(e: Emit) -> None:
    """ONNX's DequantizeLinear, int8 / uint8 to float32: ``float(x - zero) * scale``."""
    x, y = e.input(0), e.output(0)
    if x.dtype not in (DatumType.I8, DatumType.U8) or y.dtype != DatumType.F32:
        raise Unsupported(f"DequantizeLinear from {x.dtype} to {y.dtype} (int8 and uint8 to float32 compile)")
    scale, zero = _linear_params(e)
    e.line(f"for (int32_t i = 0; i < {x.count}; ++i) {{\n"
           f"  const float v = (float)((int32_t){x.var}[i] - ({zero}));\n"
           f"  {y.var}[i] = v * {literal(scale, DatumType.F32)};\n}}")
    x.used = y.used = True
    e.set_kernel("(loop)")
