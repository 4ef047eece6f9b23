"""TensorFlow block rearrangements: SpaceToBatchND / BatchToSpaceND (what Keras emits around
a dilated convolution), DepthToSpace / SpaceToDepth, ReverseV2, ReverseSequence and MatrixBandPart.

SpaceToBatchND and BatchToSpaceND become Pad / Reshape / Transpose / Reshape (/ Slice): the
block shape, the paddings or crops and the non-batch dims of the input must be known when
loading; the batch may stay symbolic.
"""
from __future__ import annotations

import numpy as np

from ....datum import DatumType
from ....ops.array import Pad, Slice, Transpose
from ....ops.cast import Cast
from ....ops.layout import DepthToSpace, ReverseSequence, SpaceToDepth, Trilu
from ....ops.shape import Reshape
from ....ops.unary import Neg
from ..registry import TfNode, Translated, tf_op
from .array import as_int64
from .nn import NCHW_TO_NHWC, NHWC_TO_NCHW

INT64_MIN = np.iinfo(np.int64).min


def _blocks(node: TfNode, what: str) -> tuple[list[int], np.ndarray]:
    """The block shape (M values) and the [M, 2] paddings or crops."""
    block = list(node.const_ints(1, "block_shape"))
    amounts = node.const(2)
    if amounts is None:
        raise node.error(f"input 2 ({what}) must be a constant: tractile needs it when loading")
    amounts = np.asarray(amounts, np.int64).reshape(-1, 2) if np.asarray(amounts).size else np.zeros((0, 2), np.int64)
    if len(block) != len(amounts) or any(b < 1 for b in block) or (amounts < 0).any():
        raise node.error(f"block_shape {block} and {what} {amounts.tolist()} do not describe the same axes")
    return block, amounts


def _known_dims(node: TfNode, first: int) -> list[int]:
    """The dims of input 0 from ``first`` on, which must be known integers."""
    fact = node.input_fact(0)
    dims = list(fact.shape.dims[first:]) if fact.rank is not None else [None]
    if not all(isinstance(d, int) for d in dims):
        raise node.error(f"needs the input's dims after the batch when loading, got {fact}")
    return dims


@tf_op("SpaceToBatchND")
def space_to_batch(node: TfNode):
    block, paddings = _blocks(node, "paddings")
    m = len(block)
    dims = _known_dims(node, 1)
    padded = [d + int(p.sum()) for d, p in zip(dims, paddings)]
    if any(size % b for size, b in zip(padded, block)):
        raise node.error(f"padded spatial dims {padded} are not multiples of block_shape {block}")
    current = [node.input(0)]
    if paddings.any():
        pads = np.concatenate([[0], paddings[:, 0], [0] * (len(dims) - m), [0], paddings[:, 1],
                               [0] * (len(dims) - m)]).astype(np.int64)
        current = node.wire("pad", Pad(), current + [pads])
    rest = dims[m:]
    split = [0] + [v for size, b in zip(padded, block) for v in (size // b, b)] + rest
    current = node.wire("split", Reshape(), current + [np.asarray(split, np.int64)])
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, len(split)))
    current = node.wire("blocks_first", Transpose(tuple(perm)), current)
    merged = [-1] + [size // b for size, b in zip(padded, block)] + rest
    return Translated(Reshape(), current + [np.asarray(merged, np.int64)])


@tf_op("BatchToSpaceND")
def batch_to_space(node: TfNode):
    block, crops = _blocks(node, "crops")
    m = len(block)
    dims = _known_dims(node, 1)
    spatial, rest = dims[:m], dims[m:]
    split = block + [-1] + dims
    current = node.wire("split", Reshape(), [node.input(0), np.asarray(split, np.int64)])
    perm = [m] + [v for i in range(m) for v in (m + 1 + i, i)] + list(range(2 * m + 1, len(split)))
    current = node.wire("interleave", Transpose(tuple(perm)), current)
    full = [size * b for size, b in zip(spatial, block)]
    current = node.wire("merge", Reshape(), current + [np.asarray([-1] + full + rest, np.int64)])
    if not crops.any():
        return current
    if any(c.sum() > size for c, size in zip(crops, full)):
        raise node.error(f"crops {crops.tolist()} are larger than the spatial dims {full}")
    starts = crops[:, 0]
    ends = np.asarray(full, np.int64) - crops[:, 1]
    return Translated(Slice(), current + [starts, ends, np.arange(1, m + 1, dtype=np.int64)])


def _block_layout(node: TfNode) -> str:
    layout = node.string("data_format", "NHWC")
    if layout not in ("NHWC", "NCHW"):
        raise node.error(f"data_format {layout!r} is not supported (NHWC or NCHW)")
    return layout


@tf_op("DepthToSpace", "SpaceToDepth")
def depth_space(node: TfNode):
    """TensorFlow orders the moved channels as (block row, block column, channel): ONNX's DCR."""
    size = node.int("block_size")
    op = DepthToSpace(size, "DCR") if node.op_type == "DepthToSpace" else SpaceToDepth(size)
    if _block_layout(node) == "NCHW":
        return op
    x = node.wire("to_nchw", Transpose(NHWC_TO_NCHW), [0])
    return Translated(Transpose(NCHW_TO_NHWC), node.wire("blocks", op, x))


@tf_op("ReverseV2")
def reverse(node: TfNode):
    axes_list = node.const_ints(1, "axis")
    rank = node.input_fact(0).rank if any(a < 0 for a in axes_list) else None
    if rank is not None:
        axes_list = tuple(a + rank if a < 0 else a for a in axes_list)
    axes = np.asarray(sorted(set(axes_list)), np.int64)
    if not axes.size:
        return [node.input(0)]
    count = len(axes)
    return Translated(Slice(), [0, np.full(count, -1, np.int64), np.full(count, INT64_MIN, np.int64), axes,
                                np.full(count, -1, np.int64)])


@tf_op("ReverseSequence")
def reverse_sequence(node: TfNode):
    lengths = node.wire("lengths", Cast(DatumType.I64), [1])
    return Translated(ReverseSequence(node.int("batch_dim", 0), node.int("seq_dim")), [0] + lengths)


@tf_op("MatrixBandPart")
def band_part(node: TfNode):
    """The band of the last two axes from num_lower diagonals below to num_upper above (-1: all)."""
    current = [node.input(0)]
    for index, upper, suffix in ((1, True, "below"), (2, False, "above")):
        count = node.const(index)
        if count is not None and int(count) < 0:
            continue
        k = as_int64(node, index, "band", f"{suffix}_count")
        if upper:
            k = np.asarray(-k) if isinstance(k, np.ndarray) else node.wire("below_k", Neg(), [k])[0]
        current = node.wire(suffix, Trilu(upper), current + [k])
    return current
