"""TFLite's quantized DIV on int8 and uint8 (``tl_divide.h``): the reciprocal of every divisor
magnitude an 8-bit pair can give, and its shift, tabulated on the host by the interpreter's
own GetReciprocal; the rest follows the interpreter's recipe (``ops.quantized.binary``)."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.quantized.binary import BinaryRecipe
from ...ops.quantized.functions import get_reciprocal
from ..emit import Emit
from ..registry import Unsupported
from .elementwise import C_TYPES, broadcast_loop


def quantized_div(e: Emit, p: BinaryRecipe) -> None:
    a, b, y = e.input(0), e.input(1), e.output(0)
    if a.dtype not in (DatumType.I8, DatumType.U8):
        raise Unsupported(f"quantized DIV on {a.dtype} (int8 and uint8 are compiled)")
    magnitudes = np.arange(256, dtype=np.int64)
    reciprocals, shifts = get_reciprocal(np.maximum(magnitudes, 1), 31)
    e.use("tl_divide.h")
    recips = e.constant("reciprocals", reciprocals, DatumType.I32)
    recip_shifts = e.constant("reciprocal_shifts", shifts, DatumType.I32)
    body = (f"({C_TYPES[y.dtype]})tl_quantized_div(va - ({p.z1}), vb - ({p.z2}), {recips}, {recip_shifts}, "
            f"{p.multiplier}, {p.shift}, {p.zo}, {p.low}, {p.high})")
    broadcast_loop(e, a, b, y, body)
