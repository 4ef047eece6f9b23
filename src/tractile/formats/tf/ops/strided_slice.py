"""TensorFlow StridedSlice (every mask) as core Slice, Squeeze and Unsqueeze.

The slice spec (begin, end, strides with their masks) is read when loading; each spec entry
is a sliced input axis, an inserted axis (``new_axis_mask``), an index that drops its axis
(``shrink_axis_mask``) or the ellipsis (the input axes no other entry names).
"""
from __future__ import annotations

import numpy as np

from ....ops.array import Slice
from ....ops.shape import Squeeze, Unsqueeze
from ..registry import TfNode

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def _bit(mask: int, index: int) -> bool:
    return bool(mask >> index & 1)


def translate_strided_slice(node: TfNode):
    begin = node.const_ints(1, "begin")
    end = node.const_ints(2, "end")
    strides = node.const_ints(3, "strides")
    if not len(begin) == len(end) == len(strides):
        raise node.error(f"begin, end and strides have {len(begin)}, {len(end)} and {len(strides)} entries")
    masks = {name: node.int(name, 0) for name in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                                  "shrink_axis_mask")}
    entries = len(begin)
    ellipsis = [i for i in range(entries) if _bit(masks["ellipsis_mask"], i)]
    if len(ellipsis) > 1:
        raise node.error("more than one ellipsis in ellipsis_mask")
    named = sum(1 for i in range(entries) if not _bit(masks["new_axis_mask"], i) and i not in ellipsis)
    covered = 0
    if ellipsis and ellipsis[0] != entries - 1:
        rank = node.input_fact(0).rank
        if rank is None:
            raise node.error("an ellipsis before other entries needs the input's rank when loading")
        covered = rank - named
    starts, ends, axes, steps, shrink, inserted = [], [], [], [], [], []
    axis = out = 0
    for i in range(entries):
        if i in ellipsis:
            axis += covered
            out += covered
            continue
        if _bit(masks["new_axis_mask"], i):
            inserted.append(out)
            out += 1
            continue
        step = strides[i]
        if step == 0:
            raise node.error(f"stride {i} is 0")
        if _bit(masks["shrink_axis_mask"], i):
            start = begin[i]
            starts.append(start)
            ends.append(INT64_MAX if start == -1 else start + 1)
            steps.append(1)
            axes.append(axis)
            shrink.append(axis)
            axis += 1
            continue
        low, high = (0, INT64_MAX) if step > 0 else (INT64_MAX, INT64_MIN)
        starts.append(low if _bit(masks["begin_mask"], i) else begin[i])
        ends.append(high if _bit(masks["end_mask"], i) else end[i])
        steps.append(step)
        axes.append(axis)
        axis += 1
        out += 1
    current = [node.input(0)]
    if axes:
        as_array = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
        current = node.wire("slice", Slice(), current + [as_array(starts), as_array(ends), as_array(axes),
                                                         as_array(steps)])
    if shrink:
        current = node.wire("squeeze", Squeeze(), current + [np.asarray(shrink, np.int64)])
    if inserted:
        current = node.wire("unsqueeze", Unsqueeze(), current + [np.asarray(inserted, np.int64)])
    return current
