"""Translations of RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (both directions)."""
from __future__ import annotations

import numpy as np

from ....errors import ModelFormatError
from ....ops.tfl.resize import Resize
from ..registry import (
    OpSpec,
    TflNode,
    Translated,
    tflite_op,
    tflite_writer,
)

_RESIZE = {"RESIZE_BILINEAR": ("bilinear", "ResizeBilinearOptions"),
           "RESIZE_NEAREST_NEIGHBOR": ("nearest", "ResizeNearestNeighborOptions")}


@tflite_op(*_RESIZE)
def resize(node: TflNode):
    kind, table = _RESIZE[node.opcode]
    size = node.require_const(1, "the output size").reshape(-1)
    if size.size != 2:
        raise ModelFormatError(f"{node.where}: the output size must hold 2 values, got {size.size}")
    options = node.options(table)
    align = bool(options.AlignCorners()) if options is not None else False
    half = bool(options.HalfPixelCenters()) if options is not None else False
    return Translated(Resize(kind=kind, size=(int(size[0]), int(size[1])), align_corners=align,
                             half_pixel_centers=half), [0])


@tflite_writer(Resize)
def write_resize(op: Resize, ctx) -> OpSpec:
    name = {kind: builtin for builtin, (kind, _) in _RESIZE.items()}[op.kind]
    size = ctx.const(np.asarray(op.size, dtype=np.int32), "size")
    fields = {"AlignCorners": op.align_corners, "HalfPixelCenters": op.half_pixel_centers}
    return OpSpec(name, (_RESIZE[name][1], fields), [0, size])
