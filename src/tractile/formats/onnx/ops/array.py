"""ONNX shape and array ops (Reshape, Slice, Pad, Split, Expand, Tile, Range...) and Identity."""
from __future__ import annotations

import numpy as np

from ....ops.array import Concat, Pad, Slice, Split, Transpose
from ....ops.cast import Identity
from ....ops.generate import EyeLike, Range
from ....ops.layout import CenterCropPad, DepthToSpace, Expand, ReverseSequence, SpaceToDepth, Tile, Trilu
from ....ops.shape import ConstantOfShape, Flatten, Reshape, Shape, Size, Squeeze, Unsqueeze
from ..registry import OnnxNode, Translated, onnx_op
from ..types import datum_type

INT64_MAX = np.iinfo(np.int64).max


onnx_op("Identity", since=1)(lambda node: Identity())
onnx_op("Shape", since=1)(lambda node: Shape(node.int("start", 0), node.int("end", None)))
onnx_op("Flatten", since=1)(lambda node: Flatten(node.int("axis", 1)))
onnx_op("Transpose", since=1)(lambda node: Transpose(node.ints("perm", None)))
onnx_op("Concat", since=1)(lambda node: Concat(node.int("axis", 1 if node.opset < 4 else 0)))
onnx_op("Size", since=1)(lambda node: Size())
onnx_op("Expand", since=8)(lambda node: Expand())
onnx_op("Tile", since=6)(lambda node: Tile())
onnx_op("Trilu", since=14)(lambda node: Trilu(bool(node.int("upper", 1))))
onnx_op("ReverseSequence", since=10)(lambda node: ReverseSequence(node.int("batch_axis", 1), node.int("time_axis", 0)))
onnx_op("CenterCropPad", since=18)(lambda node: CenterCropPad(node.ints("axes", None)))
onnx_op("DepthToSpace", since=1)(lambda node: DepthToSpace(node.int("blocksize"), node.string("mode", "DCR")))
onnx_op("SpaceToDepth", since=1)(lambda node: SpaceToDepth(node.int("blocksize"), node.string("mode", "DCR")))


@onnx_op("Reshape", since=1)
def reshape_v1(node: OnnxNode):
    return Translated(Reshape(), [0, np.asarray(node.ints("shape"), dtype=np.int64)])


@onnx_op("Reshape", since=5)
def reshape(node: OnnxNode):
    return Reshape(bool(node.int("allowzero", 0)))


@onnx_op("Squeeze", since=1)
def squeeze_v1(node: OnnxNode):
    axes = node.ints("axes", None)
    return Translated(Squeeze(), [0] if axes is None else [0, np.asarray(axes, dtype=np.int64)])


onnx_op("Squeeze", since=13)(lambda node: Squeeze())


@onnx_op("Unsqueeze", since=1)
def unsqueeze_v1(node: OnnxNode):
    return Translated(Unsqueeze(), [0, np.asarray(node.ints("axes"), dtype=np.int64)])


onnx_op("Unsqueeze", since=13)(lambda node: Unsqueeze())


@onnx_op("ConstantOfShape", since=9)
def constant_of_shape(node: OnnxNode):
    value = node.tensor("value", None)
    if value is None:
        value = np.zeros(1, dtype=np.float32)
    return ConstantOfShape(np.asarray(value).reshape(-1)[:1])


@onnx_op("Slice", since=1)
def slice_v1(node: OnnxNode):
    starts, ends = node.ints("starts"), node.ints("ends")
    axes = node.ints("axes", tuple(range(len(starts))))
    as_array = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    return Translated(Slice(), [0, as_array(starts), as_array(ends), as_array(axes)])


@onnx_op("Slice", since=10)
def slice_(node: OnnxNode):
    inputs: list = [0, 1, 2]
    if node.present(3):
        inputs.append(3)
    elif node.present(4):
        raise node.error("Slice with steps but no axes: give axes too")
    if node.present(4):
        inputs.append(4)
    return Translated(Slice(), inputs)


@onnx_op("Pad", since=1)
def pad_v1(node: OnnxNode):
    pads = node.ints("pads" if node.opset >= 2 else "paddings")
    value = np.asarray(node.float("value", 0.0), dtype=np.float32)
    return Translated(Pad(node.string("mode", "constant")), [0, np.asarray(pads, dtype=np.int64), value])


@onnx_op("Pad", since=11)
def pad(node: OnnxNode):
    inputs: list = [0, 1]
    if node.present(2):
        inputs.append(2)
    if node.present(3):
        if not node.present(2):
            inputs.append(np.zeros(0, dtype=np.float32))  # empty: the default constant
        inputs.append(3)
    return Translated(Pad(node.string("mode", "constant")), inputs)


@onnx_op("Split", since=1)
def split_v1(node: OnnxNode):
    sizes = node.ints("split", None)
    if sizes is not None:
        return Translated(Split(node.int("axis", 0), len(node.outputs)), [0, np.asarray(sizes, dtype=np.int64)])
    return Translated(Split(node.int("axis", 0), len(node.outputs)), [0, 1] if node.present(1) else [0])


@onnx_op("Split", since=13)
def split(node: OnnxNode):
    count = len(node.outputs)
    if node.has("num_outputs") and node.int("num_outputs") != count:
        raise node.error(f"num_outputs is {node.int('num_outputs')} but the node has {count} outputs")
    return Translated(Split(node.int("axis", 0), count), [0, 1] if node.present(1) else [0])


@onnx_op("Range", since=11)
def range_(node: OnnxNode):
    return Range(datum_type(node.int("stash_type", 1), repr(node)))


@onnx_op("EyeLike", since=9)
def eye_like(node: OnnxNode):
    dtype = node.int("dtype", None)
    return EyeLike(None if dtype is None else datum_type(dtype, repr(node)), node.int("k", 0))
