"""Translations of concatenation, padding, slicing and gathering (both directions)."""
from __future__ import annotations

import numpy as np

from ....errors import ModelFormatError
from ....ops.tfl.array import Concatenation, Gather, Pad, Slice, StridedSlice
from ..registry import OpSpec, TflNode, Translated, activation_code, activation_name, tflite_op, tflite_writer


def _ints(node: TflNode, slot: int, what: str) -> tuple:
    return tuple(int(v) for v in node.require_const(slot, what).reshape(-1))


@tflite_op("CONCATENATION")
def concatenation(node: TflNode):
    options = node.options("ConcatenationOptions")
    if options is None:
        raise ModelFormatError(f"{node.where}: missing ConcatenationOptions")
    return Concatenation(axis=options.Axis(), activation=activation_name(options.FusedActivationFunction()))


@tflite_writer(Concatenation)
def write_concatenation(op: Concatenation, ctx) -> OpSpec:
    fields = {"Axis": op.axis, "FusedActivationFunction": activation_code(op.activation)}
    return OpSpec("CONCATENATION", ("ConcatenationOptions", fields))


@tflite_op("PAD", "PADV2")
def pad(node: TflNode):
    pads = node.require_const(1, "the paddings")
    if pads.ndim != 2 or pads.shape[1] != 2:
        raise ModelFormatError(f"{node.where}: paddings must be (rank, 2), got shape {list(pads.shape)}")
    pairs = tuple((int(a), int(b)) for a, b in pads.tolist())
    if node.opcode == "PADV2" and node.present(2):
        return Translated(Pad(pads=pairs, has_value=True), [0, 2])
    return Translated(Pad(pads=pairs), [0])


@tflite_writer(Pad)
def write_pad(op: Pad, ctx) -> OpSpec:
    pads = ctx.const(np.asarray(op.pads, dtype=np.int32).reshape(-1, 2), "paddings")
    if op.has_value:
        return OpSpec("PADV2", ("PadV2Options", {}), [0, pads, 1])
    return OpSpec("PAD", ("PadOptions", {}), [0, pads])


_STRIDED_FIELDS = ("BeginMask", "EndMask", "EllipsisMask", "NewAxisMask", "ShrinkAxisMask")


@tflite_op("STRIDED_SLICE")
def strided_slice(node: TflNode):
    options = node.options("StridedSliceOptions")
    masks = [getattr(options, name)() if options is not None else 0 for name in _STRIDED_FIELDS]
    offset = bool(options.Offset()) if options is not None else False
    op = StridedSlice(begin=_ints(node, 1, "begin"), end=_ints(node, 2, "end"), strides=_ints(node, 3, "strides"),
                      begin_mask=masks[0], end_mask=masks[1], ellipsis_mask=masks[2], new_axis_mask=masks[3],
                      shrink_axis_mask=masks[4], offset=offset)
    return Translated(op, [0])


@tflite_writer(StridedSlice)
def write_strided_slice(op: StridedSlice, ctx) -> OpSpec:
    constants = [ctx.const(np.asarray(values, dtype=np.int32), name)
                 for values, name in ((op.begin, "begin"), (op.end, "end"), (op.strides, "strides"))]
    masks = (op.begin_mask, op.end_mask, op.ellipsis_mask, op.new_axis_mask, op.shrink_axis_mask)
    fields = dict(zip(_STRIDED_FIELDS, masks))
    fields["Offset"] = op.offset
    return OpSpec("STRIDED_SLICE", ("StridedSliceOptions", fields), [0, *constants])


@tflite_op("SLICE")
def slice_(node: TflNode):
    return Translated(Slice(begin=_ints(node, 1, "begin"), size=_ints(node, 2, "size")), [0])


@tflite_writer(Slice)
def write_slice(op: Slice, ctx) -> OpSpec:
    begin = ctx.const(np.asarray(op.begin, dtype=np.int32), "begin")
    size = ctx.const(np.asarray(op.size, dtype=np.int32), "size")
    return OpSpec("SLICE", ("SliceOptions", {}), [0, begin, size])


@tflite_op("GATHER")
def gather(node: TflNode):
    options = node.options("GatherOptions")
    return Gather(axis=options.Axis() if options is not None else 0,
                  batch_dims=options.BatchDims() if options is not None else 0)


@tflite_writer(Gather)
def write_gather(op: Gather, ctx) -> OpSpec:
    return OpSpec("GATHER", ("GatherOptions", {"Axis": op.axis, "BatchDims": op.batch_dims}))


@tflite_op("REVERSE_V2")
def reverse_v2(node: TflNode):
    """A reversal along constant axes, as a strided slice stepping back over those axes (Keras
    Bidirectional layers convert to two LSTMs and REVERSE_V2)."""
    rank = len(node.tensor(0).shape)
    axes = {a + rank if a < 0 else a for a in _ints(node, 1, "the axes")}
    if any(not 0 <= a < rank for a in axes):
        raise ModelFormatError(f"{node.where}: axes {sorted(axes)} out of range for rank {rank}")
    every = (1 << rank) - 1
    op = StridedSlice(begin=(0,) * rank, end=(0,) * rank, strides=tuple(-1 if a in axes else 1 for a in range(rank)),
                      begin_mask=every, end_mask=every, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0)
    return Translated(op, [0])
