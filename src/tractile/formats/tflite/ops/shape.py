"""Translations of the shape and layout operators onto core Reshape, Squeeze, Unsqueeze,
Transpose, Concat, Split, Shape, Expand (both directions).

PACK is an Unsqueeze of each input and a Concat, UNPACK a Split and a Squeeze of each part.
"""
from __future__ import annotations

import math

import numpy as np

from ....errors import ModelFormatError
from ....ops.array import Concat, Split, Transpose
from ....ops.axes import resolve_axis
from ....ops.layout import Expand
from ....ops.relabel import SetQuantization
from ....ops.shape import BroadcastShapes, ConstantOfShape, Flatten, Reshape, Shape, Squeeze, Unsqueeze
from ..registry import OpSpec, TflNode, Translated, tflite_op, tflite_writer


def _i64(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int64).reshape(-1)


def unit_axes_moved(before: tuple, after: tuple) -> tuple[list[int], list[int]] | None:
    """(axes of ``before`` removed, axes of ``after`` added) when reshaping ``before`` to
    ``after`` only removes and adds size-1 axes (None otherwise; fewest axes moved)."""
    kept_in = [i for i, d in enumerate(before) if d != 1]
    kept_out = [j for j, d in enumerate(after) if d != 1]
    if [before[i] for i in kept_in] != [after[j] for j in kept_out]:
        return None
    removed, added = [], []
    previous_in = previous_out = -1
    for anchor_in, anchor_out in zip([*kept_in, len(before)], [*kept_out, len(after)]):
        run_in, run_out = anchor_in - previous_in - 1, anchor_out - previous_out - 1
        removed += range(previous_in + 1, previous_in + 1 + max(run_in - run_out, 0))
        added += range(previous_out + 1, previous_out + 1 + max(run_out - run_in, 0))
        previous_in, previous_out = anchor_in, anchor_out
    return removed, added


def _as_written(fact, written: tuple) -> bool:
    """Whether ``fact`` has the file's dims but where a symbol overrides them."""
    return fact.has_rank and fact.rank == len(written) and all(
        not isinstance(dim, int) or dim == file_dim for dim, file_dim in zip(fact.shape, written))


def _constant_reshape(node: TflNode, target: np.ndarray) -> Translated:
    """A RESHAPE to a constant shape. One that only removes and adds size-1 axes becomes a
    Squeeze and an Unsqueeze, which keep the other dims whatever they become: an input fact
    overriding the file's time axis with a symbol (``-i 1,T,6``) flows through the reshapes
    Keras Conv1D wraps its CONV_2D in."""
    before = tuple(int(d) for d in node.tensor(0).shape)
    dims = [int(d) for d in target.tolist()]
    if dims.count(-1) == 1 and all(d > 0 for d in before):
        known = math.prod(d for d in dims if d != -1)
        if known > 0 and math.prod(before) % known == 0:
            dims[dims.index(-1)] = math.prod(before) // known
    moved = unit_axes_moved(before, tuple(dims)) if min(dims, default=0) >= 1 and before != tuple(dims) else None
    if moved is None or node.model is None or not _as_written(node.fact(0), before):
        return Translated(Reshape(allowzero=True), [0, target])
    removed, added = moved
    if not added:
        return Translated(Squeeze(), [0, _i64(removed)])
    source = node.wire("squeezed", Squeeze(), [0, _i64(removed)])[0] if removed else 0
    return Translated(Unsqueeze(), [source, _i64(added)])


@tflite_op("RESHAPE")
def reshape(node: TflNode):
    shape = node.const(1)
    if shape is not None:
        return _constant_reshape(node, _i64(shape))
    options = node.options("ReshapeOptions")
    if options is not None and not options.NewShapeIsNone():
        return _constant_reshape(node, _i64(options.NewShapeAsNumpy()))
    if node.present(1):
        return Translated(Reshape(allowzero=True), [0, 1])
    return Translated(Reshape(allowzero=True), [0, _i64([max(d, -1) for d in node.output().shape])])


def _written_shape(ctx) -> list:
    """The output dims for a RESHAPE: known ones, one -1 for a symbolic one."""
    dims = [d if isinstance(d, int) else -1 for d in ctx.output_fact(0).shape]
    if dims.count(-1) > 1:
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite cannot reshape to {ctx.output_fact(0)}")
    return dims


@tflite_writer(Reshape, Flatten, SetQuantization)
def write_reshape(op, ctx) -> OpSpec:
    """RESHAPE (also for a change of quantization alone: TFLite's RESHAPE copies raw values)."""
    dims = _written_shape(ctx)
    shape = ctx.const(np.asarray(dims, dtype=np.int32), "shape")
    return OpSpec("RESHAPE", ("ReshapeOptions", {"NewShape": dims}), [0, shape])


@tflite_op("SQUEEZE")
def squeeze(node: TflNode):
    options = node.options("SqueezeOptions")
    axes = [int(v) for v in options.SqueezeDimsAsNumpy()] if options is not None and \
        not options.SqueezeDimsIsNone() else []
    return Translated(Squeeze(), [0, _i64(axes)] if axes else [0])


@tflite_writer(Squeeze)
def write_squeeze(op: Squeeze, ctx) -> OpSpec:
    fact = ctx.input_fact(0)
    if ctx.input_count() > 1:
        axes = [resolve_axis(a, fact.rank, "Squeeze axis") for a in ctx.input_fact(1).konst.reshape(-1).tolist()]
    else:
        axes = [i for i, d in enumerate(fact.shape) if d == 1]
    return OpSpec("SQUEEZE", ("SqueezeOptions", {"SqueezeDims": sorted(set(axes))}), [0])


@tflite_op("EXPAND_DIMS")
def expand_dims(node: TflNode):
    axis = node.require_const(1, "the axis").reshape(-1)
    if axis.size != 1:
        raise ModelFormatError(f"{node.where}: the axis must hold one value, got {axis.tolist()}")
    return Translated(Unsqueeze(), [0, _i64(axis)])


@tflite_writer(Unsqueeze)
def write_unsqueeze(op: Unsqueeze, ctx) -> OpSpec:
    axes = ctx.input_fact(1).konst
    if axes is not None and axes.size == 1:
        return OpSpec("EXPAND_DIMS", ("ExpandDimsOptions", {}),
                      [0, ctx.const(axes.reshape(1).astype(np.int32), "axis")])
    return write_reshape(op, ctx)


@tflite_op("TRANSPOSE")
def transpose(node: TflNode):
    perm = node.require_const(1, "the permutation")
    return Translated(Transpose(tuple(int(v) for v in perm.reshape(-1))), [0])


@tflite_writer(Transpose)
def write_transpose(op: Transpose, ctx) -> OpSpec:
    rank = ctx.input_fact(0).rank
    perm = op.perm if op.perm is not None else tuple(reversed(range(rank)))
    return OpSpec("TRANSPOSE", ("TransposeOptions", {}), [0, ctx.const(np.asarray(perm, np.int32), "perm")])


def pack_ops(node, items: list, axis: int) -> list:
    """PACK: each input with a new axis, concatenated along it."""
    rank = node.fact(items[0]).rank
    axis = resolve_axis(axis, rank + 1, "PACK axis")
    expanded = [node.wire(f"item{i}", Unsqueeze(), [item, _i64([axis])])[0] for i, item in enumerate(items)]
    return node.wire(None, Concat(axis), expanded)


@tflite_op("PACK")
def pack(node: TflNode):
    options = node.options("PackOptions")
    return pack_ops(node, list(range(len(node.inputs))), options.Axis() if options is not None else 0)


def unpack_ops(node, x, count: int, axis: int) -> list:
    """UNPACK: ``count`` parts along ``axis``, each without that axis."""
    rank = node.fact(x).rank
    axis = resolve_axis(axis, rank, "UNPACK axis")
    if node.fact(x).shape[axis] != count:
        raise ModelFormatError(f"{node.where}: cannot unpack {node.fact(x)} into {count} along axis {axis}")
    parts = node.wire("split", Split(axis, count), [x]) if count > 1 else [node.outlet(x)]
    return [node.wire(f"item{i}" if count > 1 else None, Squeeze(), [part, _i64([axis])])[0]
            for i, part in enumerate(parts)]


@tflite_op("UNPACK")
def unpack(node: TflNode):
    options = node.options("UnpackOptions")
    return unpack_ops(node, 0, len(node.outputs), options.Axis() if options is not None else 0)


@tflite_op("SPLIT")
def split(node: TflNode):
    axis = int(node.require_const(0, "the axis").reshape(-1)[0])
    fact, count = node.fact(1), len(node.outputs)
    axis = resolve_axis(axis, fact.rank, "SPLIT axis")
    size = fact.shape[axis]
    if isinstance(size, int) and size % count:
        raise ModelFormatError(f"{node.where}: {size} does not split in {count} equal parts")
    return Translated(Split(axis, count), [1])


@tflite_op("SPLIT_V")
def split_v(node: TflNode):
    sizes = [int(v) for v in node.require_const(1, "the sizes").reshape(-1)]
    fact = node.fact(0)
    axis = resolve_axis(int(node.require_const(2, "the axis").reshape(-1)[0]), fact.rank, "SPLIT_V axis")
    if len(sizes) != len(node.outputs) or sizes.count(-1) > 1:
        raise ModelFormatError(f"{node.where}: sizes {sizes} for {len(node.outputs)} outputs")
    if -1 in sizes:
        if not isinstance(fact.shape[axis], int):
            raise ModelFormatError(f"{node.where}: a size of -1 needs the split axis's length when loading")
        sizes[sizes.index(-1)] = fact.shape[axis] - (sum(sizes) + 1)
    return Translated(Split(axis, len(sizes)), [0, _i64(sizes)])


@tflite_writer(Split)
def write_split(op: Split, ctx) -> OpSpec:
    facts = [ctx.output_fact(i) for i in range(op.outputs)]
    axis = np.array([op.axis], np.int32)
    sizes = [f.shape[resolve_axis(op.axis, f.rank, "Split axis")] for f in facts]
    if ctx.input_count() == 1 and len(set(sizes)) == 1:
        return OpSpec("SPLIT", ("SplitOptions", {"NumSplits": op.outputs}), [ctx.const(axis, "axis"), 0])
    if not all(isinstance(s, int) for s in sizes):
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite needs the sizes of an uneven split")
    return OpSpec("SPLIT_V", ("SplitVOptions", {"NumSplits": op.outputs}),
                  [0, ctx.const(np.asarray(sizes, np.int32), "sizes"), ctx.const(axis, "axis")])


@tflite_op("SHAPE")
def shape(node: TflNode):
    return Shape(dtype=node.output().dtype)


@tflite_writer(Shape)
def write_shape(op: Shape, ctx) -> OpSpec:
    if op.start != 0 or op.end is not None:
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite's SHAPE gives every dim")
    return OpSpec("SHAPE", ("ShapeOptions", {"OutType": ctx.tensor_type(op.dtype)}))


def zeros_like_ops(node, x) -> list:
    """Zeros of the type, quantization and shape of ``x`` (a zero broadcast to its shape)."""
    fact = node.fact(x)
    dims = node.wire("shape", Shape(), [x])
    return node.wire(None, Expand(), [(np.zeros((), fact.dtype.np), fact.qparams), *dims])


tflite_op("ZEROS_LIKE")(lambda node: zeros_like_ops(node, 0))


tflite_op("BROADCAST_ARGS")(lambda node: BroadcastShapes())
tflite_writer(BroadcastShapes)(lambda op, ctx: OpSpec("BROADCAST_ARGS"))


@tflite_writer(ConstantOfShape)
def write_constant_of_shape(op: ConstantOfShape, ctx) -> OpSpec:
    value = ctx.const(np.asarray(op.value.reshape(-1)[0]), "value")
    return OpSpec("FILL", ("FillOptions", {}), [0, value])
