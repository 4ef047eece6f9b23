"""TensorFlow shape and array ops: Identity family, Reshape, Squeeze, ExpandDims, Transpose,
ConcatV2, Pack/Unpack, Split/SplitV, Slice, Pad, Gather, Tile, Fill, Range, Shape, OneHot, Where."""
from __future__ import annotations

import numpy as np

from ....datum import DatumType
from ....ops import binary, logic
from ....ops.array import Concat, Pad, Slice, Split, Transpose
from ....ops.cast import Cast
from ....ops.generate import Range
from ....ops.indexing import Gather, GatherND, OneHot
from ....ops.layout import Expand, Tile
from ....ops.shape import Reshape, Shape, Size, Squeeze, Unsqueeze
from ....ops.sort import NonZero
from ..registry import TfNode, Translated, tf_op

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


@tf_op("Identity", "StopGradient", "Snapshot", "ReadVariableOp", "PreventGradient", "CheckNumerics",
       "EnsureShape", "IdentityN", "DebugIdentity")
def identity(node: TfNode):
    """Aliases: no node is wired, the outputs are the inputs."""
    count = len(node.inputs) if node.op_type == "IdentityN" else 1
    return [node.input(i) for i in range(count)]


tf_op("NoOp")(lambda node: [])


def as_int64(node: TfNode, index: int, what: str, suffix: str):
    """Input ``index`` as an int64 constant, or wired through a Cast when it is computed."""
    value = node.const(index)
    if value is not None:
        return np.asarray(value, dtype=np.int64)
    return node.wire(suffix, Cast(DatumType.I64), [index])[0]


def const_axis(node: TfNode, index: int, what: str = "axis") -> int:
    values = node.const_ints(index, what)
    if len(values) != 1:
        raise node.error(f"{what} should be one integer, got {list(values)}")
    return values[0]


@tf_op("Reshape")
def reshape(node: TfNode):
    return Translated(Reshape(allowzero=True), [0, as_int64(node, 1, "shape", "shape")])


@tf_op("Squeeze")
def squeeze(node: TfNode):
    axes = node.ints("squeeze_dims", ())
    return Translated(Squeeze(), [0, np.asarray(axes, np.int64)] if axes else [0])


@tf_op("ExpandDims")
def expand_dims(node: TfNode):
    return Translated(Unsqueeze(), [0, as_int64(node, 1, "axis", "axis").reshape(-1)])


@tf_op("Transpose")
def transpose(node: TfNode):
    return Translated(Transpose(node.const_ints(1, "perm")), [0])


@tf_op("ConcatV2")
def concat_v2(node: TfNode):
    count = len(node.inputs) - 1
    return Translated(Concat(const_axis(node, count)), list(range(count)))


@tf_op("Concat")
def concat(node: TfNode):
    return Translated(Concat(const_axis(node, 0)), list(range(1, len(node.inputs))))


@tf_op("Pack")
def pack(node: TfNode):
    axis = node.int("axis", 0)
    axes = np.array([axis], np.int64)
    items = [node.wire(f"item{i}", Unsqueeze(), [i, axes])[0] for i in range(len(node.inputs))]
    if len(items) == 1:
        return items
    return Translated(Concat(axis), items)


@tf_op("Unpack")
def unpack(node: TfNode):
    axis, count = node.int("axis", 0), node.int("num")
    parts = node.wire("split", Split(axis, count), [0]) if count > 1 else [node.input(0)]
    axes = np.array([axis], np.int64)
    return [node.wire(f"item{i}", Squeeze(), [part, axes])[0] for i, part in enumerate(parts)]


@tf_op("Split")
def split(node: TfNode):
    count = node.int("num_split")
    if count == 1:
        return [node.input(1)]
    return Translated(Split(const_axis(node, 0, "split_dim"), count), [1])


@tf_op("SplitV")
def split_v(node: TfNode):
    axis = const_axis(node, 2, "split_dim")
    sizes = list(node.const_ints(1, "size_splits"))
    if -1 in sizes:
        fact = node.input_fact(0)
        dim = fact.shape.dims[axis] if fact.rank is not None else None
        if not isinstance(dim, int):
            raise node.error("a size of -1 needs the split axis's length when loading")
        sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
    if len(sizes) == 1:
        return [node.input(0)]
    return Translated(Split(axis, len(sizes)), [0, np.asarray(sizes, np.int64)])


@tf_op("Slice")
def slice_(node: TfNode):
    begin, size = node.const(1), node.const(2)
    if begin is not None and size is not None:
        begin, size = np.asarray(begin, np.int64), np.asarray(size, np.int64)
        ends = np.where(size < 0, INT64_MAX, begin + size)
        return Translated(Slice(), [0, begin, ends, np.arange(len(begin), dtype=np.int64)])
    begin = as_int64(node, 1, "begin", "begin")
    size = as_int64(node, 2, "size", "size")
    ends = node.wire("ends", binary.Add(), [begin, size])  # sizes of -1 are not supported when computed
    return Translated(Slice(), [0, begin] + ends)


@tf_op("Pad", "PadV2", "MirrorPad")
def pad(node: TfNode):
    mode = "constant"
    if node.op_type == "MirrorPad":
        mode = node.string("mode")
        if mode == "SYMMETRIC":
            return symmetric_pad(node)
        if mode != "REFLECT":
            raise node.error(f"MirrorPad mode {mode!r} is not supported (REFLECT or SYMMETRIC)")
        mode = "reflect"
    paddings = node.const(1)
    if paddings is not None:
        pads = np.asarray(paddings, np.int64).T.reshape(-1)
    else:
        pads = node.wire("pads", Reshape(), node.wire("pads_t", Transpose((1, 0)), [node.wire(
            "pads64", Cast(DatumType.I64), [1])[0]]) + [np.array([-1], np.int64)])[0]
    inputs = [0, pads]
    if node.op_type == "PadV2":
        inputs.append(2)
    return Translated(Pad(mode), inputs)


def symmetric_pad(node: TfNode):
    """MirrorPad SYMMETRIC (the edge repeated): each padded axis is the concatenation of its
    first entries reversed, the input, and its last entries reversed."""
    paddings = node.const(1)
    if paddings is None:
        raise node.error("input 1 (paddings) must be a constant for mode SYMMETRIC")
    current = [node.input(0)]
    step = np.array([-1], np.int64)
    for axis, (begin, end) in enumerate(np.asarray(paddings, np.int64).reshape(-1, 2).tolist()):
        if begin < 0 or end < 0:
            raise node.error(f"paddings {np.asarray(paddings).tolist()} hold a negative amount")
        if not begin and not end:
            continue
        axes = np.array([axis], np.int64)
        parts = []
        if begin:
            parts += node.wire(f"front{axis}", Slice(), current + [np.array([begin - 1], np.int64),
                                                                   np.array([INT64_MIN], np.int64), axes, step])
        parts += current
        if end:
            parts += node.wire(f"back{axis}", Slice(), current + [np.array([-1], np.int64),
                                                                  np.array([-1 - end], np.int64), axes, step])
        current = node.wire(f"padded{axis}", Concat(axis), parts)
    return current


@tf_op("Gather", "ResourceGather")
def gather(node: TfNode):
    if node.int("batch_dims", 0):
        raise node.error("batch_dims other than 0 are not supported")
    return Gather(0)


@tf_op("GatherV2")
def gather_v2(node: TfNode):
    batch_dims, axis = node.int("batch_dims", 0), const_axis(node, 2)
    if not batch_dims:
        return Translated(Gather(axis), [0, 1])
    if batch_dims < 0:
        batch_dims += _known_rank(node, 1, "indices")
    if axis < 0:
        axis += _known_rank(node, 0, "params")
    if axis != batch_dims:
        raise node.error(f"batch_dims {batch_dims} with axis {axis}: only axis == batch_dims is supported")
    indices = node.wire("indices", Unsqueeze(), [1, np.array([-1], np.int64)])
    return Translated(GatherND(batch_dims), [0] + indices)


def _known_rank(node: TfNode, index: int, what: str) -> int:
    rank = node.input_fact(index).rank
    if rank is None:
        raise node.error(f"a negative axis or batch_dims needs the rank of {what} when loading")
    return rank


tf_op("GatherNd")(lambda node: GatherND(0))


@tf_op("Tile")
def tile(node: TfNode):
    return Translated(Tile(), [0, as_int64(node, 1, "multiples", "multiples")])


@tf_op("Fill")
def fill(node: TfNode):
    return Translated(Expand(), [1, as_int64(node, 0, "dims", "dims")])


@tf_op("BroadcastTo")
def broadcast_to(node: TfNode):
    return Translated(Expand(), [0, as_int64(node, 1, "shape", "shape")])


@tf_op("ZerosLike", "OnesLike")
def zeros_like(node: TfNode):
    dtype = node.type("T")
    value = np.array(0 if node.op_type == "ZerosLike" else 1, dtype=dtype.np)
    return Translated(Expand(), [value] + node.wire("shape", Shape(), [0]))


tf_op("Range")(lambda node: Range())


def _shape_type(node: TfNode, outlets):
    dtype = node.type("out_type", DatumType.I32)
    if dtype == DatumType.I64:
        return outlets
    return Translated(Cast(dtype), outlets)


@tf_op("Shape")
def shape(node: TfNode):
    return _shape_type(node, node.wire("shape", Shape(), [0]))


@tf_op("Size")
def size(node: TfNode):
    return _shape_type(node, node.wire("size", Size(), [0]))


@tf_op("Rank")
def rank(node: TfNode):
    dims = node.wire("shape", Shape(), [0])
    return Translated(Cast(DatumType.I32), node.wire("rank", Size(), dims))


@tf_op("OneHot")
def one_hot(node: TfNode):
    values = node.wire("values", Concat(0), [node.wire(f"value{i}", Unsqueeze(), [i, np.array([0], np.int64)])[0]
                                             for i in (3, 2)])
    indices = [node.input(0)]
    index_type = node.type("TI", DatumType.I64)
    if index_type.is_signed:  # TensorFlow's negative indices are all off, not counted from the end
        negative = node.wire("negative", logic.Less(), indices + [np.zeros((), index_type.np)])
        beyond = np.array(np.iinfo(index_type.np).max, index_type.np)
        indices = node.wire("indices", logic.Where(), negative + [beyond] + indices)
    return Translated(OneHot(node.int("axis", -1)), indices + [1] + values)


@tf_op("Where")
def where(node: TfNode):
    return Translated(Transpose((1, 0)), node.wire("nonzero", NonZero(), [0]))


@tf_op("StridedSlice")
def strided_slice(node: TfNode):
    from .strided_slice import translate_strided_slice

    return translate_strided_slice(node)
