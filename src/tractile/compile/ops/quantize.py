"""TFLite QUANTIZE (float to integers, integer requantization) and DEQUANTIZE, per tensor,
as loops written into the node's code (bit for bit with the interpreter)."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.quantized.common import integer_limits, scale_of, zero_of
from ...ops.tfl.quantize import Dequantize, Quantize
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
    op: Quantize = e.op
    x, y = e.input(0), e.output(0)
    out_q = per_tensor(op.oq(0), "an output")
    if y.dtype not in C_TYPES or y.dtype == DatumType.F32:
        raise Unsupported(f"QUANTIZE to {y.dtype}")
    low, high = integer_limits(y.dtype)
    cast = C_TYPES[y.dtype]
    e.use("tl_common.h")
    if x.dtype == DatumType.F32:
        scale = literal(float(np.float32(scale_of(out_q))), DatumType.F32)
        e.line(f"for (int32_t i = 0; i < {x.count}; ++i) {{\n"
               f"  const int64_t v = tl_round_half_away((double)({x.var}[i] / {scale})) + ({zero_of(out_q)});\n"
               f"  {y.var}[i] = ({cast})(v < {low} ? {low} : (v > {high} ? {high} : v));\n}}")
    elif x.dtype in C_TYPES:
        per_tensor(op.iq(0), "an input")
        requant = op._requant
        e.line(f"for (int32_t i = 0; i < {x.count}; ++i)\n"
               f"  {y.var}[i] = ({cast})tl_clamp_i32(tl_mbqm((int32_t){x.var}[i] - ({zero_of(op.iq(0))}), "
               f"{int(requant.multipliers[0])}, {int(requant.shifts[0])}) + ({zero_of(out_q)}), {low}, {high});")
    else:
        raise Unsupported(f"QUANTIZE from {x.dtype}")
    x.used = y.used = True
    e.set_kernel("(loop)")


@emitter(Dequantize)
def dequantize(e: Emit) -> None:
    op: Dequantize = e.op
    x, y = e.input(0), e.output(0)
    if x.dtype not in C_TYPES or x.dtype == DatumType.F32:
        raise Unsupported(f"DEQUANTIZE from {x.dtype}")
    q = per_tensor(op.iq(0), "an input")
    scale = literal(float(np.float64(np.float32(scale_of(q)))), DatumType.F64)
    e.line(f"for (int32_t i = 0; i < {x.count}; ++i)\n"
           f"  {y.var}[i] = (float)({scale} * (double)((int32_t){x.var}[i] - ({zero_of(q)})));")
    x.used = y.used = True
    e.set_kernel("(loop)")
