"""Translations of concatenation, padding, gathering, tiling and broadcasting, scans and
arg-reductions onto core ops (both directions).

Values only move: quantized inputs keep their quantization (a uint8 CONCATENATION of inputs
quantized differently from its output rescales them, ``Concat.quant``). PAD pads quantized
tensors with the zero point (a constant input of the core Pad), PADV2 with its value input.
"""
from __future__ import annotations

import numpy as np

from ....datum import DatumType
from ....errors import ModelFormatError
from ....ops.array import Concat, Pad
from ....ops.indexing import DynamicUpdateSlice, Gather, GatherND
from ....ops.layout import Expand, Tile
from ....ops.quantized.common import QUANTIZED
from ....ops.scan import CumScan
from ....ops.sort import ArgReduce
from ..registry import OpSpec, TflNode, Translated, activation_code, tflite_op, tflite_writer


def _ints(node: TflNode, slot: int, what: str) -> tuple:
    return tuple(int(v) for v in node.require_const(slot, what).reshape(-1))


def _konst(ctx, slot: int, what: str) -> np.ndarray:
    value = ctx.input_fact(slot).konst if slot < ctx.input_count() else None
    if value is None:
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite needs {what} (input {slot}) to be a constant")
    return value


@tflite_op("CONCATENATION")
def concatenation(node: TflNode):
    options = node.options("ConcatenationOptions")
    if options is None:
        raise ModelFormatError(f"{node.where}: missing ConcatenationOptions")
    if options.FusedActivationFunction() != activation_code("NONE"):
        raise ModelFormatError(f"{node.where}: a fused activation on CONCATENATION is not supported "
                               "(TFLite's kernels ignore it)")
    return Concat(options.Axis(), quant=concat_quant(node, [node.tensor(i).quant for i in range(len(node.inputs))]))


def concat_quant(node, input_quants: list):
    """The output quantization of a concatenation that rescales its inputs (None: values are copied)."""
    out = node.output_quant()
    if out is None or all(q == out for q in input_quants):
        return None
    if node.output().dtype != DatumType.U8:
        raise ModelFormatError(f"{node.where}: {node.output().dtype} CONCATENATION inputs must be quantized as "
                               "the output (TFLite rescales uint8 inputs only)")
    return out


@tflite_writer(Concat)
def write_concatenation(op: Concat, ctx) -> OpSpec:
    fact = ctx.output_fact(0)
    if op.quant is not None and fact.dtype != DatumType.U8:
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite rescales the inputs of uint8 concatenations only")
    fields = {"Axis": op.axis, "FusedActivationFunction": activation_code("NONE")}
    return OpSpec("CONCATENATION", ("ConcatenationOptions", fields))


def pad_ops(node, x, paddings: np.ndarray, value=None, mode: str = "constant", suffix: str | None = None) -> list:
    """A pad of ``x`` by ``paddings`` ([rank, 2]); ``value`` an input of the pad value, else
    zero (the zero point on a quantized tensor)."""
    paddings = np.asarray(paddings, dtype=np.int64).reshape(-1, 2)
    if (paddings < 0).any():
        raise ModelFormatError(f"{node.where}: negative paddings {paddings.tolist()}")
    pads = np.concatenate([paddings[:, 0], paddings[:, 1]])
    inputs = [x, pads]
    fact = node.fact(x)
    if value is not None:
        inputs.append(value)
    elif mode == "constant" and fact.qparams is not None and fact.dtype in QUANTIZED:
        inputs.append((np.array(fact.qparams.zero_point[0], fact.dtype.np), fact.qparams))
    return node.wire(suffix, Pad(mode), inputs)


@tflite_op("PAD", "PADV2", "MIRROR_PAD")
def pad(node: TflNode):
    paddings = node.require_const(1, "the paddings")
    if paddings.ndim != 2 or paddings.shape[1] != 2:
        raise ModelFormatError(f"{node.where}: paddings must be (rank, 2), got shape {list(paddings.shape)}")
    if node.opcode == "MIRROR_PAD":
        options = node.options("MirrorPadOptions")
        mode = "symmetric" if options is not None and options.Mode() == 1 else "reflect"
        return pad_ops(node, 0, paddings, mode=mode)
    return pad_ops(node, 0, paddings, 2 if node.opcode == "PADV2" and node.present(2) else None)


@tflite_writer(Pad)
def write_pad(op: Pad, ctx) -> OpSpec:
    fact = ctx.input_fact(0)
    pads = _konst(ctx, 1, "the pads").reshape(-1).astype(np.int64)
    if ctx.input_count() > 3 or (pads < 0).any():
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite pads every axis by non-negative amounts")
    paddings = ctx.const(pads.reshape(2, -1).T.astype(np.int32), "paddings")
    if op.mode in ("reflect", "symmetric"):
        return OpSpec("MIRROR_PAD", ("MirrorPadOptions", {"Mode": int(op.mode == "symmetric")}), [0, paddings])
    if op.mode != "constant":
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite has no pad mode {op.mode!r}")
    quantized = fact.qparams is not None and fact.dtype in QUANTIZED
    zero = fact.qparams.zero_point[0] if quantized else 0
    value = ctx.input_fact(2).konst if ctx.input_count() > 2 else None
    if ctx.input_count() > 2 and (value is None or value.size != 1 or value.reshape(-1)[0] != zero):
        return OpSpec("PADV2", ("PadV2Options", {}), [0, paddings, 2])
    if quantized and ctx.input_count() == 2 and zero != 0:
        return OpSpec("PADV2", ("PadV2Options", {}), [0, paddings, ctx.const(np.zeros((), fact.dtype.np), "value",
                                                                             fact.qparams)])
    return OpSpec("PAD", ("PadOptions", {}), [0, paddings])


@tflite_op("GATHER")
def gather(node: TflNode):
    options = node.options("GatherOptions")
    return Gather(axis=options.Axis() if options is not None else 0,
                  batch_dims=options.BatchDims() if options is not None else 0)


@tflite_writer(Gather)
def write_gather(op: Gather, ctx) -> OpSpec:
    return OpSpec("GATHER", ("GatherOptions", {"Axis": op.axis, "BatchDims": op.batch_dims}))


tflite_op("GATHER_ND")(lambda node: GatherND(0))


@tflite_writer(GatherND)
def write_gather_nd(op: GatherND, ctx) -> OpSpec:
    if op.batch_dims:
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite's GATHER_ND has no batch dims")
    return OpSpec("GATHER_ND", ("GatherNdOptions", {}))


tflite_op("TILE")(lambda node: Tile())
tflite_writer(Tile)(lambda op, ctx: OpSpec("TILE", ("TileOptions", {})))
tflite_op("BROADCAST_TO")(lambda node: Expand())


@tflite_writer(Expand)
def write_broadcast_to(op: Expand, ctx) -> OpSpec:
    """BROADCAST_TO gives the target shape: a core Expand that broadcasts both ways is written
    with its output shape as target."""
    out, target = ctx.output_fact(0), ctx.input_fact(1).konst
    if target is not None and tuple(int(d) for d in target.reshape(-1)) == tuple(out.shape):
        return OpSpec("BROADCAST_TO", ("BroadcastToOptions", {}))
    if target is None and ctx.input_fact(1).shape[0] == out.rank and out.rank >= ctx.input_fact(0).rank and \
            all(d in (1, o) for d, o in zip(ctx.input_fact(0).shape[::-1], out.shape[::-1])):
        return OpSpec("BROADCAST_TO", ("BroadcastToOptions", {}))
    if not all(isinstance(d, int) for d in out.shape):
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite's BROADCAST_TO needs the output shape")
    return OpSpec("BROADCAST_TO", ("BroadcastToOptions", {}), [0, ctx.const(np.asarray(out.shape, np.int32), "shape")])

tflite_op("FILL")(lambda node: Translated(Expand(), [1, 0]))
tflite_op("DYNAMIC_UPDATE_SLICE")(lambda node: DynamicUpdateSlice())
tflite_writer(DynamicUpdateSlice)(lambda op, ctx: OpSpec("DYNAMIC_UPDATE_SLICE", ("DynamicUpdateSliceOptions", {})))


@tflite_op("CUMSUM")
def cumsum(node: TflNode):
    options = node.options("CumsumOptions")
    exclusive = bool(options.Exclusive()) if options is not None else False
    reverse = bool(options.Reverse()) if options is not None else False
    tensor = node.tensor(0)
    if tensor.quant is not None and tensor.dtype in QUANTIZED:
        if tensor.dtype.value != "i8":
            raise ModelFormatError(f"{node.where}: quantized CUMSUM is int8 only (as TFLite Micro's), got "
                                   f"{tensor.dtype}")
        quant = node.output_quant()
        if quant is None:
            raise ModelFormatError(f"{node.where}: an int8 CUMSUM needs a quantized output")
        return CumScan("sum", exclusive, reverse, quant=quant)
    return CumScan("sum", exclusive, reverse)


@tflite_writer(CumScan)
def write_cumsum(op: CumScan, ctx) -> OpSpec:
    if op.kind != "sum":
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite has CUMSUM only, not {op.name}")
    return OpSpec("CUMSUM", ("CumsumOptions", {"Exclusive": op.exclusive, "Reverse": op.reverse}))


_ARGS = {"ARG_MAX": ("max", "ArgMaxOptions"), "ARG_MIN": ("min", "ArgMinOptions")}


@tflite_op(*_ARGS)
def arg_reduce(node: TflNode):
    kind, table = _ARGS[node.opcode]
    axis = node.require_const(1, "the axis").reshape(-1)
    if axis.size != 1:
        raise ModelFormatError(f"{node.where}: the axis must hold one value, got {axis.tolist()}")
    return Translated(ArgReduce(kind, int(axis[0]), keepdims=False, dtype=node.output().dtype), [0])


@tflite_writer(ArgReduce)
def write_arg_reduce(op: ArgReduce, ctx) -> OpSpec:
    if op.keepdims or op.select_last_index:
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite's {op.name} drops the axis and picks the first index")
    name = "ARG_MAX" if op.kind == "max" else "ARG_MIN"
    axis = ctx.const(np.array([op.axis], np.int32), "axis")
    return OpSpec(name, (_ARGS[name][1], {"OutputType": ctx.tensor_type(op.dtype)}), [0, axis])


