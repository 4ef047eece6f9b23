"""STRIDED_SLICE, SLICE and REVERSE_V2 as core Slice (then Squeeze / Unsqueeze), both directions.

The slice spec (begin, end, strides and the five masks) is read when loading; each spec
entry is a sliced input axis, an inserted axis (``new_axis_mask``), an index that drops its
axis (``shrink_axis_mask``) or the ellipsis (the input axes no other entry names). TFLite's
``offset`` makes each end relative to its begin. Writing, a core Slice becomes SLICE when
every step is 1 and STRIDED_SLICE otherwise, with its bounds resolved on the known dims.
"""
from __future__ import annotations

import numpy as np

from ....errors import ModelFormatError
from ....ops.array import Slice
from ....ops.shape import Squeeze, Unsqueeze
from ..registry import OpSpec, TflNode, tflite_op, tflite_writer

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
_MASK_FIELDS = ("BeginMask", "EndMask", "EllipsisMask", "NewAxisMask", "ShrinkAxisMask")


def _bit(mask: int, index: int) -> bool:
    return bool(mask >> index & 1)


def _i64(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def strided_slice_ops(node, x, begin, end, strides, masks: dict, offset: bool = False) -> list:
    """Wire the core ops of a strided slice of ``x`` (an input of ``node``); return the output."""
    entries = len(begin)
    if not len(end) == len(strides) == entries:
        raise ModelFormatError(f"{node.where}: begin, end and strides have {len(begin)}, {len(end)} and "
                               f"{len(strides)} entries")
    if offset:
        end = [b + e for b, e in zip(begin, end)]
    ellipsis = [i for i in range(entries) if _bit(masks.get("ellipsis_mask", 0), i)]
    new_axes = masks.get("new_axis_mask", 0)
    named = sum(1 for i in range(entries) if not _bit(new_axes, i) and i not in ellipsis)
    covered = node.fact(x).rank - named if ellipsis else 0
    starts, ends, axes, steps, shrink, inserted = [], [], [], [], [], []
    axis = out = 0
    for i in range(entries):
        if i in ellipsis[:1]:
            axis += covered
            out += covered
            continue
        if _bit(new_axes, i):
            inserted.append(out)
            out += 1
            continue
        step = strides[i]
        if step == 0:
            raise ModelFormatError(f"{node.where}: stride {i} is 0")
        if _bit(masks.get("shrink_axis_mask", 0), i):
            starts.append(begin[i])
            ends.append(INT64_MAX if begin[i] == -1 else begin[i] + 1)
            steps.append(1)
            axes.append(axis)
            shrink.append(axis)
            axis += 1
            continue
        low, high = (0, INT64_MAX) if step > 0 else (INT64_MAX, INT64_MIN)
        starts.append(low if _bit(masks.get("begin_mask", 0), i) else begin[i])
        ends.append(high if _bit(masks.get("end_mask", 0), i) else end[i])
        steps.append(step)
        axes.append(axis)
        axis += 1
        out += 1
    current = [node.outlet(x)]
    stages = [("slice", Slice(), [_i64(starts), _i64(ends), _i64(axes), _i64(steps)]) if axes else None,
              ("squeeze", Squeeze(), [_i64(shrink)]) if shrink else None,
              ("unsqueeze", Unsqueeze(), [_i64(inserted)]) if inserted else None]
    stages = [stage for stage in stages if stage is not None]
    for index, (suffix, op, extra) in enumerate(stages):
        current = node.wire(None if index == len(stages) - 1 else suffix, op, current + extra)
    return current


def _ints(node: TflNode, slot: int, what: str) -> list:
    return [int(v) for v in node.require_const(slot, what).reshape(-1)]


@tflite_op("STRIDED_SLICE")
def strided_slice(node: TflNode):
    options = node.options("StridedSliceOptions")
    masks = {name: getattr(options, field)() if options is not None else 0 for name, field in zip(MASKS, _MASK_FIELDS)}
    offset = bool(options.Offset()) if options is not None else False
    return strided_slice_ops(node, 0, _ints(node, 1, "begin"), _ints(node, 2, "end"), _ints(node, 3, "strides"),
                             masks, offset)


def slice_ops(node, x, begin, size) -> list:
    """A SLICE of ``x``: ``begin`` and ``size`` (-1: to the end) per axis."""
    if len(begin) != len(size) or any(b < 0 for b in begin) or any(s < -1 for s in size):
        raise ModelFormatError(f"{node.where}: begin {list(begin)} and size {list(size)} do not describe a slice")
    ends = [INT64_MAX if s == -1 else b + s for b, s in zip(begin, size)]
    return node.wire(None, Slice(), [x, _i64(begin), _i64(ends), _i64(range(len(begin)))])


@tflite_op("SLICE")
def slice_(node: TflNode):
    return slice_ops(node, 0, _ints(node, 1, "begin"), _ints(node, 2, "size"))


def reverse_ops(node, x, axes) -> list:
    """REVERSE_V2 of ``x`` along ``axes``: a slice stepping back over them."""
    rank = node.fact(x).rank
    axes = sorted({a + rank if a < 0 else a for a in axes})
    if any(not 0 <= a < rank for a in axes):
        raise ModelFormatError(f"{node.where}: axes {axes} out of range for rank {rank}")
    if not axes:
        return [node.outlet(x)]
    count = len(axes)
    return node.wire(None, Slice(), [x, np.full(count, -1, np.int64), np.full(count, INT64_MIN, np.int64),
                                     _i64(axes), np.full(count, -1, np.int64)])


@tflite_op("REVERSE_V2")
def reverse_v2(node: TflNode):
    return reverse_ops(node, 0, _ints(node, 1, "the axes"))


@tflite_writer(Slice)
def write_slice(op: Slice, ctx) -> OpSpec:
    """SLICE when every step is 1, else STRIDED_SLICE, with bounds resolved on the input's dims."""
    fact = ctx.input_fact(0)
    params = [ctx.input_fact(slot).konst for slot in range(1, ctx.input_count())]
    if any(p is None for p in params) or not all(isinstance(d, int) for d in fact.shape):
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite needs a slice with constant bounds on known dims")
    starts, ends = params[0].reshape(-1).tolist(), params[1].reshape(-1).tolist()
    axes = params[2].reshape(-1).tolist() if len(params) > 2 else list(range(len(starts)))
    steps = params[3].reshape(-1).tolist() if len(params) > 3 else [1] * len(starts)
    begin, end, strides, end_mask = [0] * fact.rank, list(fact.shape), [1] * fact.rank, 0
    for start, stop, axis, step in zip(starts, ends, axes, steps):
        axis = axis + fact.rank if axis < 0 else axis
        first, last, step = slice(int(start), int(stop), int(step)).indices(fact.shape[axis])
        begin[axis], end[axis], strides[axis] = first, last, step
        if step < 0 and last < 0:
            end_mask |= 1 << axis
    if all(s == 1 for s in strides):
        sizes = [max(e - b, 0) for b, e in zip(begin, end)]
        return OpSpec("SLICE", ("SliceOptions", {}), [0, ctx.const(np.asarray(begin, np.int32), "begin"),
                                                      ctx.const(np.asarray(sizes, np.int32), "size")])
    fields = dict(zip(_MASK_FIELDS, (0, end_mask, 0, 0, 0)))
    fields["Offset"] = False
    constants = [ctx.const(np.asarray(values, np.int32), name)
                 for values, name in ((begin, "begin"), (end, "end"), (strides, "strides"))]
    return OpSpec("STRIDED_SLICE", ("StridedSliceOptions", fields), [0, *constants])
