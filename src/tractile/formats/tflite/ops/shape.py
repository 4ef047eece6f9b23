"""Translations of the shape and layout operators (both directions)."""
from __future__ import annotations

import numpy as np

from ....errors import ModelFormatError
from ....ops.tfl.shape import (
    ExpandDims,
    Pack,
    Reshape,
    Split,
    Squeeze,
    Transpose,
    Unpack,
    equal_split,
    normalize_axis,
    split_v_sizes,
)
from ..registry import OpSpec, TflNode, Translated, tflite_op, tflite_writer


@tflite_op("RESHAPE")
def reshape(node: TflNode):
    shape = node.const(1)
    if shape is not None:
        return Translated(Reshape(tuple(int(v) for v in shape.reshape(-1))), [0])
    options = node.options("ReshapeOptions")
    if options is not None and not options.NewShapeIsNone():
        return Translated(Reshape(tuple(int(v) for v in options.NewShapeAsNumpy())), [0])
    if node.present(1):
        return Translated(Reshape(None), [0, 1])
    return Translated(Reshape(tuple(max(d, -1) for d in node.output().shape)), [0])


@tflite_writer(Reshape)
def write_reshape(op: Reshape, ctx) -> OpSpec:
    if op.shape is None:
        return OpSpec("RESHAPE", ("ReshapeOptions", {}))
    shape = ctx.const(np.asarray(op.shape, dtype=np.int32), "shape")
    return OpSpec("RESHAPE", ("ReshapeOptions", {"NewShape": list(op.shape)}), [0, shape])


@tflite_op("SQUEEZE")
def squeeze(node: TflNode):
    options = node.options("SqueezeOptions")
    axes = tuple(int(v) for v in options.SqueezeDimsAsNumpy()) if options is not None and \
        not options.SqueezeDimsIsNone() else ()
    return Squeeze(axes)


@tflite_writer(Squeeze)
def write_squeeze(op: Squeeze, ctx) -> OpSpec:
    return OpSpec("SQUEEZE", ("SqueezeOptions", {"SqueezeDims": list(op.axes)}))


@tflite_op("EXPAND_DIMS")
def expand_dims(node: TflNode):
    axis = node.require_const(1, "the axis")
    return Translated(ExpandDims(int(axis.reshape(-1)[0])), [0])


@tflite_writer(ExpandDims)
def write_expand_dims(op: ExpandDims, ctx) -> OpSpec:
    return OpSpec("EXPAND_DIMS", ("ExpandDimsOptions", {}), [0, ctx.const(np.array([op.axis], np.int32), "axis")])


@tflite_op("TRANSPOSE")
def transpose(node: TflNode):
    perm = node.require_const(1, "the permutation")
    return Translated(Transpose(tuple(int(v) for v in perm.reshape(-1))), [0])


@tflite_writer(Transpose)
def write_transpose(op: Transpose, ctx) -> OpSpec:
    return OpSpec("TRANSPOSE", ("TransposeOptions", {}), [0, ctx.const(np.asarray(op.perm, np.int32), "perm")])


@tflite_op("PACK")
def pack(node: TflNode):
    options = node.options("PackOptions")
    return Pack(axis=options.Axis() if options is not None else 0)


@tflite_writer(Pack)
def write_pack(op: Pack, ctx) -> OpSpec:
    return OpSpec("PACK", ("PackOptions", {"ValuesCount": ctx.input_count(), "Axis": op.axis}))


@tflite_op("UNPACK")
def unpack(node: TflNode):
    options = node.options("UnpackOptions")
    axis = options.Axis() if options is not None else 0
    return Unpack(num=len(node.outputs), axis=axis)


@tflite_writer(Unpack)
def write_unpack(op: Unpack, ctx) -> OpSpec:
    return OpSpec("UNPACK", ("UnpackOptions", {"Num": op.num, "Axis": op.axis}))


@tflite_op("SPLIT")
def split(node: TflNode):
    axis = int(node.require_const(0, "the axis").reshape(-1)[0])
    data = node.tensor(1)
    axis = normalize_axis(axis, len(data.shape), "SPLIT axis")
    return Translated(Split(axis, equal_split(data.shape[axis], len(node.outputs))), [1])


@tflite_op("SPLIT_V")
def split_v(node: TflNode):
    sizes = [int(v) for v in node.require_const(1, "the sizes").reshape(-1)]
    axis = int(node.require_const(2, "the axis").reshape(-1)[0])
    data = node.tensor(0)
    axis = normalize_axis(axis, len(data.shape), "SPLIT_V axis")
    if len(sizes) != len(node.outputs):
        raise ModelFormatError(f"{node.where}: {len(sizes)} sizes for {len(node.outputs)} outputs")
    return Translated(Split(axis, split_v_sizes(data.shape[axis], sizes)), [0])


@tflite_writer(Split)
def write_split(op: Split, ctx) -> OpSpec:
    sizes = ctx.const(np.asarray(op.sizes, np.int32), "sizes")
    axis = ctx.const(np.array([op.axis], np.int32), "axis")
    return OpSpec("SPLIT_V", ("SplitVOptions", {"NumSplits": len(op.sizes)}), [0, sizes, axis])
