"""ONNX image ops: Resize, Upsample, GridSample, AffineGrid, RoiAlign, NonMaxSuppression, Col2Im, DeformConv."""
from __future__ import annotations

import numpy as np

from ....errors import AnalysisError
from ....ops.col2im import Col2Im, DeformConv
from ....ops.grid import AffineGrid, GridSample
from ....ops.image import Resize
from ....ops.image_decoder import PIXEL_FORMATS, ImageDecoder, pillow_available
from ....ops.roi import NonMaxSuppression, RoiAlign
from ....ops.window import Window
from ..registry import OnnxNode, Translated, onnx_op

_NO_FLOATS = np.zeros(0, dtype=np.float32)
_NO_INTS = np.zeros(0, dtype=np.int64)


def _checked(node: OnnxNode, op):
    try:
        op.check_attributes()
    except AnalysisError as error:
        raise node.error(error.message) from None
    return op


def _legacy_mode(node: OnnxNode) -> str:
    mode = node.string("mode", "nearest").lower()
    return "linear" if mode in ("bilinear", "trilinear") else mode


def _legacy_resize(node: OnnxNode) -> Resize:
    """Upsample and Resize-10: asymmetric coordinates, nearest rounds down (up when shrinking)."""
    return _checked(node, Resize(_legacy_mode(node), "asymmetric", "simple"))


@onnx_op("Upsample", since=7)
def upsample_v7(node: OnnxNode):
    scales = np.asarray(node.floats("scales"), dtype=np.float32)
    return Translated(_legacy_resize(node), [0, _NO_FLOATS, scales, _NO_INTS])


@onnx_op("Upsample", since=9)
def upsample(node: OnnxNode):
    return Translated(_legacy_resize(node), [0, _NO_FLOATS, 1, _NO_INTS])


@onnx_op("Resize", since=10)
def resize_v10(node: OnnxNode):
    return Translated(_legacy_resize(node), [0, _NO_FLOATS, 1, _NO_INTS])


@onnx_op("Resize", since=11)
def resize(node: OnnxNode):
    axes = node.ints("axes", None)
    op = Resize(
        mode=node.string("mode", "nearest"),
        coordinate_mode=node.string("coordinate_transformation_mode", "half_pixel"),
        nearest_mode=node.string("nearest_mode", "round_prefer_floor"),
        cubic_coeff_a=node.float("cubic_coeff_a", -0.75),
        exclude_outside=bool(node.int("exclude_outside", 0)),
        extrapolation_value=node.float("extrapolation_value", 0.0),
        antialias=bool(node.int("antialias", 0)),
        axes=None if axes is None else tuple(axes),
        keep_aspect_ratio_policy=node.string("keep_aspect_ratio_policy", "stretch"),
    )
    if op.coordinate_mode == "tf_half_pixel_for_nn" and node.opset >= 13:
        raise node.error("coordinate_transformation_mode tf_half_pixel_for_nn was removed in opset 13")
    inputs = [0] + [index if node.present(index) else empty
                    for index, empty in ((1, _NO_FLOATS), (2, _NO_FLOATS), (3, _NO_INTS))]
    return Translated(_checked(node, op), inputs)


_GRID_MODE_NAMES = {"bilinear": "linear", "bicubic": "cubic"}


@onnx_op("GridSample", since=16)
def grid_sample(node: OnnxNode):
    mode = node.string("mode", "bilinear" if node.opset < 20 else "linear")
    op = GridSample(_GRID_MODE_NAMES.get(mode, mode), node.string("padding_mode", "zeros"),
                    bool(node.int("align_corners", 0)))
    return _checked(node, op)


onnx_op("AffineGrid", since=20)(lambda node: AffineGrid(bool(node.int("align_corners", 0))))


def _roi_align(node: OnnxNode, half_pixel: bool):
    op = RoiAlign(node.string("mode", "avg"), node.int("output_height", 1), node.int("output_width", 1),
                  node.int("sampling_ratio", 0), node.float("spatial_scale", 1.0), half_pixel)
    return _checked(node, op)


onnx_op("RoiAlign", since=10)(lambda node: _roi_align(node, half_pixel=False))


@onnx_op("RoiAlign", since=16)
def roi_align(node: OnnxNode):
    mode = node.string("coordinate_transformation_mode", "half_pixel")
    if mode not in ("half_pixel", "output_half_pixel"):
        raise node.error(f"coordinate_transformation_mode {mode!r} is not one of half_pixel, output_half_pixel")
    return _roi_align(node, half_pixel=mode == "half_pixel")


@onnx_op("NonMaxSuppression", since=10)
def non_max_suppression(node: OnnxNode):
    inputs: list = [0, 1]
    defaults = (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.float32))
    last = max(i for i in range(node.input_count) if node.present(i))
    for index in range(2, last + 1):
        inputs.append(index if node.present(index) else defaults[index - 2])
    return Translated(NonMaxSuppression(bool(node.int("center_point_box", 0))), inputs)


@onnx_op("Col2Im", since=18)
def col2im(node: OnnxNode):
    return Col2Im(node.ints("dilations", None), node.ints("pads", None), node.ints("strides", None))


@onnx_op("DeformConv", since=19)
def deform_conv(node: OnnxNode):
    window = Window.make(node.ints("kernel_shape", ()), node.ints("strides", None), node.ints("dilations", None),
                         node.ints("pads", None))
    inputs: list = [0, 1, 2]
    if node.present(3):
        inputs.append(3)
    if node.present(4):
        if not node.present(3):
            inputs.append(_NO_FLOATS)
        inputs.append(4)
    return Translated(DeformConv(window, node.int("group", 1), node.int("offset_group", 1)), inputs)


@onnx_op("ImageDecoder", since=20)
def image_decoder(node: OnnxNode):
    if not pillow_available():
        raise node.error("ImageDecoder needs Pillow: pip install 'tractile[image]'")
    pixel_format = node.string("pixel_format", "RGB")
    if pixel_format not in PIXEL_FORMATS:
        raise node.error(f"pixel_format {pixel_format!r} is not one of {', '.join(PIXEL_FORMATS)}")
    return ImageDecoder(pixel_format)
