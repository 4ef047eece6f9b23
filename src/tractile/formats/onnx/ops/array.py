"""ONNX shape and array ops (Reshape, Slice, Gather, Pad...) and Identity."""
from __future__ import annotations

import numpy as np

from ....ops.array import Concat, Gather, Pad, Slice, Transpose
from ....ops.cast import Identity
from ....ops.shape import ConstantOfShape, Flatten, Reshape, Shape, Squeeze, Unsqueeze
from ..registry import OnnxNode, Translated, onnx_op

INT64_MAX = np.iinfo(np.int64).max


onnx_op("Identity", since=1)(lambda node: Identity())
onnx_op("Shape", since=1)(lambda node: Shape(node.int("start", 0), node.int("end", None)))
onnx_op("Flatten", since=1)(lambda node: Flatten(node.int("axis", 1)))
onnx_op("Transpose", since=1)(lambda node: Transpose(node.ints("perm", None)))
onnx_op("Concat", since=1)(lambda node: Concat(node.int("axis", 1 if node.opset < 4 else 0)))
onnx_op("Gather", since=1)(lambda node: Gather(node.int("axis", 0)))


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
            raise node.error("Pad with axes but no constant_value is not supported")
        inputs.append(3)
    return Translated(Pad(node.string("mode", "constant")), inputs)
