"""Data movement described by copy blocks, found by tracing the interpreter's own ``eval``.

An op that only moves elements (Transpose, Slice, Concat, Pad, Tile...) is run once on the
host with *positions* instead of values: each data input holds ``K + global index``, so every
output element tells where it came from (values below ``K`` were filled, e.g. padding).
That map is then cut into boxes whose source offsets are affine in the output coordinates,
each one row of ``tl_copy_blocks``. No index arithmetic is written twice: the op's ``eval``
is the specification, the blocks are its compression.
"""
from __future__ import annotations

import numpy as np

from ..registry import Unsupported

#: traced positions start here, far above any fill value an op could produce
BASE = 1 << 40
#: beyond this many blocks, a per-element index table is smaller and simpler
MAX_BLOCKS = 256


def trace(op, data_slots: list[int], inputs: list, sizes: list[int]) -> list[np.ndarray]:
    """Run ``op`` on positions: data input ``slot`` holds ``BASE + offset + index``; other
    inputs keep the values given. Returns each output's map (int64)."""
    traced = list(inputs)
    offset = 0
    for slot, size in zip(data_slots, sizes):
        shape = inputs[slot].shape
        traced[slot] = (BASE + offset + np.arange(size, dtype=np.int64)).reshape(shape)
        offset += size
    try:
        outputs = op.eval(traced)
    except Exception as error:
        raise Unsupported(f"cannot trace {op.name} as data movement ({type(error).__name__}: {error})") from None
    return [np.asarray(out) for out in outputs]


def _merge_dims(dims, dst, src):
    """Merge adjacent dims that are contiguous on both sides; drop dims of size 1."""
    kept = [(d, a, b) for d, a, b in zip(dims, dst, src) if d != 1] or [(1, 1, 1)]
    merged = [kept[0]]
    for d, a, b in kept[1:]:
        pd, pa, pb = merged[-1]
        if pa == a * d and pb == b * d:
            merged[-1] = (pd * d, a, b)
        else:
            merged.append((d, a, b))
    return merged


def _affine(region: np.ndarray):
    """(base, strides) if ``region``'s values are base + sum(coord * stride), else None."""
    base = int(region.flat[0])
    strides = []
    for axis, size in enumerate(region.shape):
        if size == 1:
            strides.append(0)
            continue
        index = [0] * region.ndim
        index[axis] = 1
        strides.append(int(region[tuple(index)]) - base)
    predicted = base + sum(np.arange(size, dtype=np.int64).reshape([-1 if a == axis else 1
                                                                     for a in range(region.ndim)]) * stride
                           for axis, (size, stride) in enumerate(zip(region.shape, strides)))
    if np.array_equal(np.broadcast_to(predicted, region.shape), region):
        return base, strides
    return None


def copy_blocks(positions: np.ndarray, starts: list[int]) -> list[tuple] | None:
    """Blocks ``(dst_offset, source, src_offset, dims, dst_strides, src_strides)`` covering the
    output map ``positions`` (``starts[i]``: the first global position of source i), or None if
    more than MAX_BLOCKS are needed."""
    shape = positions.shape if positions.ndim else (1,)
    positions = positions.reshape(shape)
    source_of = np.full(shape, -1, dtype=np.int64)
    local = np.zeros(shape, dtype=np.int64)
    moved = positions >= BASE
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else None
        mine = moved & (positions >= BASE + start) & ((positions < BASE + end) if end is not None else True)
        source_of[mine] = index
        local[mine] = positions[mine] - BASE - start
    dst_strides_full = [int(np.prod(shape[axis + 1:], dtype=np.int64)) for axis in range(len(shape))]
    blocks: list[tuple] = []
    pending = [tuple(slice(0, s) for s in shape)]
    while pending:
        region = pending.pop()
        sources = source_of[region]
        first = int(sources.flat[0])
        if not np.all(sources == first):
            axis, cuts = _cut_points(sources)
            pending.extend(_split(region, axis, cuts))
            continue
        values = local[region] if first >= 0 else np.zeros(sources.shape, np.int64)
        fit = _affine(values)
        if fit is None:
            axis = next(a for a, s in enumerate(values.shape) if s > 1)
            size = values.shape[axis]
            pending.extend(_split(region, axis, [size // 2]))
            if len(blocks) + len(pending) > MAX_BLOCKS:
                return None
            continue
        base, src_strides = fit
        dst_offset = sum(r.start * stride for r, stride in zip(region, dst_strides_full))
        dims = [r.stop - r.start for r in region]
        merged = _merge_dims(dims, dst_strides_full, src_strides)
        blocks.append((dst_offset, first, base if first >= 0 else 0, *zip(*merged)))
        if len(blocks) > MAX_BLOCKS:
            return None
    blocks.sort(key=lambda b: b[0])
    return blocks


def _cut_points(sources: np.ndarray) -> tuple[int, list[int]]:
    """The first axis along which the source changes, and where it changes."""
    for axis in range(sources.ndim):
        moved = np.moveaxis(sources, axis, 0)
        changes = [i for i in range(1, moved.shape[0]) if not np.array_equal(moved[i], moved[i - 1])]
        if changes:
            return axis, changes
    raise AssertionError("sources differ but no axis changes")


def _split(region: tuple, axis: int, cuts: list[int]) -> list[tuple]:
    start = region[axis].start
    edges = [0, *cuts, region[axis].stop - start]
    parts = []
    for low, high in zip(edges, edges[1:]):
        if high > low:
            part = list(region)
            part[axis] = slice(start + low, start + high)
            parts.append(tuple(part))
    return parts


def block_table(blocks: list[tuple]) -> tuple[np.ndarray, int]:
    """The int32 table of ``tl_copy_blocks`` and its rank (all blocks padded to the largest)."""
    rank = max(len(b[3]) for b in blocks)
    rows = []
    for dst_offset, source, src_offset, dims, dst_strides, src_strides in blocks:
        pad = rank - len(dims)
        rows.append([dst_offset, source, src_offset, *([1] * pad), *dims, *([0] * pad), *dst_strides,
                     *([0] * pad), *src_strides])
    table = np.asarray(rows, dtype=np.int64)
    if table.size and (table.max() >= 1 << 31 or table.min() < -(1 << 31)):
        raise Unsupported("a tensor too large for 32-bit offsets")
    return table.astype(np.int32), rank
