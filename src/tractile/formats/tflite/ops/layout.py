"""SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND (what a Keras dilated convolution converts to) as
core Pad / Reshape / Transpose / Reshape (/ Slice), and DEPTH_TO_SPACE / SPACE_TO_DEPTH as the
core ops on NHWC, both directions.

The block shape, the paddings or crops and the non-batch dims of the input must be known
when loading; the batch may stay symbolic. Quantized tensors are padded with their zero point.
"""
from __future__ import annotations

import numpy as np

from ....errors import ModelFormatError
from ....ops.array import Slice, Transpose
from ....ops.layout import DepthToSpace, SpaceToDepth
from ....ops.shape import Reshape
from ..registry import OpSpec, TflNode, tflite_op, tflite_writer
from .array import pad_ops


def _blocks(node: TflNode, what: str) -> tuple[list[int], np.ndarray]:
    """The block shape (M values) and the [M, 2] paddings or crops."""
    block = [int(v) for v in node.require_const(1, "the block shape").reshape(-1)]
    amounts = np.asarray(node.require_const(2, what), np.int64).reshape(-1, 2)
    if len(block) != len(amounts) or any(b < 1 for b in block) or (amounts < 0).any():
        raise ModelFormatError(f"{node.where}: block shape {block} and {what} {amounts.tolist()} do not describe "
                               "the same axes")
    return block, amounts


def _known_dims(node, x) -> list[int]:
    """The dims of ``x`` after the batch, which must be known integers."""
    fact = node.fact(x)
    dims = list(fact.shape[1:])
    if not all(isinstance(d, int) for d in dims):
        raise ModelFormatError(f"{node.where}: needs the input's dims after the batch when loading, got {fact}")
    return dims


def space_to_batch_ops(node, x, block: list[int], paddings: np.ndarray) -> list:
    m = len(block)
    dims = _known_dims(node, x)
    if m > len(dims):
        raise ModelFormatError(f"{node.where}: a block shape of {m} axes for {node.fact(x)}")
    padded = [d + int(p.sum()) for d, p in zip(dims, paddings)]
    if any(size % b for size, b in zip(padded, block)):
        raise ModelFormatError(f"{node.where}: padded spatial dims {padded} are not multiples of {block}")
    current = [node.outlet(x)]
    if paddings.any():
        full = np.zeros((len(dims) + 1, 2), np.int64)
        full[1:m + 1] = paddings
        current = pad_ops(node, current[0], full, suffix="pad")
    rest = dims[m:]
    split = [-1] + [v for size, b in zip(padded, block) for v in (size // b, b)] + rest
    current = node.wire("split", Reshape(allowzero=True), current + [np.asarray(split, np.int64)])
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, len(split)))
    current = node.wire("blocks_first", Transpose(tuple(perm)), current)
    merged = [-1] + [size // b for size, b in zip(padded, block)] + rest
    return node.wire(None, Reshape(allowzero=True), current + [np.asarray(merged, np.int64)])


@tflite_op("SPACE_TO_BATCH_ND")
def space_to_batch(node: TflNode):
    block, paddings = _blocks(node, "the paddings")
    return space_to_batch_ops(node, 0, block, paddings)


def batch_to_space_ops(node, x, block: list[int], crops: np.ndarray) -> list:
    m = len(block)
    dims = _known_dims(node, x)
    spatial, rest = dims[:m], dims[m:]
    split = block + [-1] + dims
    current = node.wire("split", Reshape(allowzero=True), [x, np.asarray(split, np.int64)])
    perm = [m] + [v for i in range(m) for v in (m + 1 + i, i)] + list(range(2 * m + 1, len(split)))
    current = node.wire("interleave", Transpose(tuple(perm)), current)
    full = [size * b for size, b in zip(spatial, block)]
    last = not crops.any()
    current = node.wire(None if last else "merge", Reshape(allowzero=True),
                        current + [np.asarray([-1] + full + rest, np.int64)])
    if last:
        return current
    if any(c.sum() > size for c, size in zip(crops, full)):
        raise ModelFormatError(f"{node.where}: crops {crops.tolist()} are larger than the spatial dims {full}")
    ends = np.asarray(full, np.int64) - crops[:, 1]
    return node.wire(None, Slice(), current + [crops[:, 0].astype(np.int64), ends, np.arange(1, m + 1, dtype=np.int64)])


@tflite_op("BATCH_TO_SPACE_ND")
def batch_to_space(node: TflNode):
    block, crops = _blocks(node, "the crops")
    return batch_to_space_ops(node, 0, block, crops)


_DEPTH = {"DEPTH_TO_SPACE": (DepthToSpace, "DepthToSpaceOptions"), "SPACE_TO_DEPTH": (SpaceToDepth,
                                                                                     "SpaceToDepthOptions")}


@tflite_op(*_DEPTH)
def depth_space(node: TflNode):
    """TFLite orders the moved channels as (block row, block column, channel): ONNX's DCR."""
    op_class, table = _DEPTH[node.opcode]
    options = node.options(table)
    if options is None:
        raise ModelFormatError(f"{node.where}: missing {table}")
    return op_class(options.BlockSize(), "DCR", "NHWC")


@tflite_writer(DepthToSpace, SpaceToDepth)
def write_depth_space(op, ctx) -> OpSpec:
    if op.mode != "DCR" or op.data_format != "NHWC":
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite moves NHWC channels in DCR order only")
    name = "DEPTH_TO_SPACE" if isinstance(op, DepthToSpace) else "SPACE_TO_DEPTH"
    return OpSpec(name, (_DEPTH[name][1], {"BlockSize": op.blocksize}))
