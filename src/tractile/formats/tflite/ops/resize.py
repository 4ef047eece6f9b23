"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR as core Resize over the NHWC axes 1 and 2 with
TFLite's arithmetic (float32 coordinates, TFLite's integer rounding), both directions."""
from __future__ import annotations

import numpy as np

from ....errors import ModelFormatError
from ....ops.image import Resize
from ..registry import OpSpec, TflNode, Translated, tflite_op, tflite_writer

_RESIZE = {"RESIZE_BILINEAR": ("linear", "ResizeBilinearOptions", "half_pixel"),
           "RESIZE_NEAREST_NEIGHBOR": ("nearest", "ResizeNearestNeighborOptions", "tf_half_pixel_for_nn")}
_EMPTY = np.zeros(0, np.float32)


def resize_op(kind: str, align_corners: bool, half_pixel_centers: bool) -> Resize:
    """The core Resize of TFLite's ``kind`` ("linear" or "nearest") resize with these options."""
    half = next(v[2] for v in _RESIZE.values() if v[0] == kind)
    mode = "align_corners" if align_corners else half if half_pixel_centers else "asymmetric"
    return Resize(kind, mode, "floor", axes=(1, 2), arithmetic="tflite")


@tflite_op(*_RESIZE)
def resize(node: TflNode):
    kind, table, _ = _RESIZE[node.opcode]
    options = node.options(table)
    align = bool(options.AlignCorners()) if options is not None else False
    half = bool(options.HalfPixelCenters()) if options is not None else False
    if align and half:
        raise ModelFormatError(f"{node.where}: align_corners and half_pixel_centers cannot both be set")
    return Translated(resize_op(kind, align, half), [0, _EMPTY, _EMPTY, 1])


@tflite_writer(Resize)
def write_resize(op: Resize, ctx) -> OpSpec:
    if op.arithmetic != "tflite" or ctx.input_fact(2).shape[0]:
        raise ModelFormatError(f"node {ctx.node.name!r}: only TFLite's resizes (to sizes) can be written")
    name = next(n for n, v in _RESIZE.items() if v[0] == op.mode)
    fields = {"AlignCorners": op.coordinate_mode == "align_corners",
              "HalfPixelCenters": op.coordinate_mode == _RESIZE[name][2]}
    sizes = ctx.input_fact(3).konst
    size = 3 if sizes is None else ctx.const(sizes.reshape(-1).astype(np.int32), "size")
    return OpSpec(name, (_RESIZE[name][1], fields), [0, size])
