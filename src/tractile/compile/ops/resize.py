"""TFLite's bilinear Resize (RESIZE_BILINEAR: the core Resize with ``arithmetic="tflite"`` and
mode "linear") lowered to ``tl_resize.h``: the source rows and columns of every output row and
column come from the interpreter's own functions (``ops.image_tflite``), so the C reads the
taps and fractions the interpreter uses; nearest-neighbour resizes move values
(``compile/ops/array.py``)."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...ops.image import Resize
from ...ops.image_tflite import bilinear_float_taps, bilinear_integer_taps
from ..emit import Emit
from ..registry import Unsupported

KERNELS = {DatumType.F32: "tl_resize_bilinear_f32", DatumType.U8: "tl_resize_bilinear_u8",
           DatumType.I8: "tl_resize_bilinear_i8", DatumType.I16: "tl_resize_bilinear_i16"}


def _pairs(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    return np.stack([lower, upper], axis=1).reshape(-1)


def tflite_bilinear(e: Emit) -> None:
    op: Resize = e.op
    x, y = e.input(0), e.output(0)
    if op.arithmetic != "tflite" or x.dtype not in KERNELS:
        raise Unsupported(f"{op.mode} resizing of {x.dtype} outside TFLite's RESIZE_BILINEAR")
    batches, in_h, in_w, channels = (int(d) for d in x.shape)
    _, out_h, out_w, _ = (int(d) for d in y.shape)
    modes = (op.coordinate_mode == "align_corners", op.coordinate_mode == "half_pixel")
    tables = []
    for role, size, out in (("row", in_h, out_h), ("col", in_w, out_w)):
        if x.dtype in (DatumType.I8, DatumType.I16):
            source, lower, upper = bilinear_integer_taps(size, out, *modes)
            fraction = e.constant(f"d{role}", source - (lower << 10), DatumType.I32)
        else:
            source, lower, upper = bilinear_float_taps(size, out, *modes)
            fraction = e.constant(f"d{role}", (source - lower.astype(np.float32)).astype(np.float32))
        tables += [e.constant(f"{role}s", _pairs(lower, upper), DatumType.I32), fraction]
    e.use("tl_resize.h")
    e.call(KERNELS[x.dtype], x, y, batches, in_h, in_w, channels, out_h, out_w, *tables)
