"""Translations of FULLY_CONNECTED, BATCH_MATMUL and EMBEDDING_LOOKUP onto the core MatMul and
Gather (both directions).

FULLY_CONNECTED is a MatMul by its (units, depth) weights transposed (``transpose_b``), its
input flattened to rows of ``depth`` first unless ``keep_num_dims`` (a core Flatten); its
fused activation is the core op after it. A float input with int8 weights is LiteRT's
hybrid kernel (``asymmetric_quantize_inputs`` from the options).
"""
from __future__ import annotations

import numpy as np

from ....datum import DatumType
from ....errors import ModelFormatError
from ....ops.indexing import Gather
from ....ops.matmul import MatMul
from ....ops.quantized.common import QUANTIZED
from ....ops.shape import Flatten
from ..registry import OpSpec, TflNode, Translated, tflite_op, tflite_writer
from .elementwise import activation_code_of


def _flatten_axis(shape: tuple, depth: int) -> int | None:
    """The axis from which ``shape`` holds ``depth`` values (None: no such axis)."""
    total = 1
    for axis in range(len(shape) - 1, -1, -1):
        if shape[axis] < 0:
            return None
        total *= shape[axis]
        if total == depth:
            return axis
        if total > depth:
            return None
    return None


@tflite_op("FULLY_CONNECTED")
def fully_connected(node: TflNode):
    options = node.options("FullyConnectedOptions")
    code, keep, weights_format, asymmetric = 0, False, 0, False
    if options is not None:
        code = options.FusedActivationFunction()
        keep = bool(options.KeepNumDims())
        weights_format = options.WeightsFormat()
        asymmetric = bool(options.AsymmetricQuantizeInputs())
    if weights_format != 0:
        raise ModelFormatError(f"{node.where}: shuffled weights formats are not supported")
    if len(node.outputs) != 1:
        raise ModelFormatError(f"{node.where}: expected one output, got {len(node.outputs)}")
    x, w = node.tensor(0), node.tensor(1)
    if len(w.shape) != 2:
        raise ModelFormatError(f"{node.where}: the weights must be 2-d (units, depth), got {list(w.shape)}")
    depth = w.shape[1]
    quant = node.output_quant() if x.dtype in QUANTIZED and x.quant is not None else None
    op = MatMul(has_bias=node.present(2), transpose_b=True, quant=quant, flavour=node.flavour,
                asymmetric_inputs=asymmetric)
    via = {}
    if keep:
        if not x.shape or x.shape[-1] not in (depth, -1):
            raise ModelFormatError(f"{node.where}: input {list(x.shape)} does not end in the weights' depth {depth}")
    elif not (len(x.shape) == 2 and x.shape[1] == depth):
        axis = _flatten_axis(tuple(x.shape), depth)
        if axis is None:
            raise ModelFormatError(f"{node.where}: input {list(x.shape)} does not flatten to rows of {depth} values")
        via[0] = Flatten(axis)
    slots = [0, 1] + ([2] if node.present(2) else [])
    return Translated(op, slots, activation=node.fused_activation(code), inputs_via=via)


def _is_fully_connected(op: MatMul, ctx) -> bool:
    b = ctx.input_fact(1)
    return op.transpose_b and not op.transpose_a and b.rank == 2 and b.konst is not None


@tflite_writer(MatMul)
def write_matmul(op: MatMul, ctx) -> OpSpec:
    """A MatMul by constant transposed 2-d weights is a FULLY_CONNECTED, any other a BATCH_MATMUL."""
    code = activation_code_of(op.activation, ctx.output_fact(0))
    if code is None:
        raise ModelFormatError(f"FULLY_CONNECTED cannot carry the fused {op.activation.name} of node "
                               f"{ctx.node.name!r}")
    if _is_fully_connected(op, ctx):
        fields = {"FusedActivationFunction": code, "KeepNumDims": ctx.input_fact(0).rank != 2,
                  "AsymmetricQuantizeInputs": op.asymmetric_inputs}
        if ctx.input_dtype(0) == DatumType.I16 and op.has_bias:
            fields["QuantizedBiasType"] = ctx.tensor_type(ctx.input_dtype(2))
        return OpSpec("FULLY_CONNECTED", ("FullyConnectedOptions", fields))
    if op.has_bias or op.activation is not None:
        raise ModelFormatError(f"node {ctx.node.name!r}: BATCH_MATMUL has no bias or fused activation")
    if op.quant is not None and op.flavour != "micro":
        raise ModelFormatError(f"node {ctx.node.name!r}: BATCH_MATMUL requantizes in fixed point (flavour "
                               f"'micro'), not {op.flavour!r}")
    return OpSpec("BATCH_MATMUL", ("BatchMatMulOptions", {"AdjX": op.transpose_a, "AdjY": op.transpose_b,
                                                          "AsymmetricQuantizeInputs": op.asymmetric_inputs}))


@tflite_op("BATCH_MATMUL")
def batch_matmul(node: TflNode):
    options = node.options("BatchMatMulOptions")
    adj_x = bool(options.AdjX()) if options is not None else False
    adj_y = bool(options.AdjY()) if options is not None else False
    lhs, rhs = node.tensor(0), node.tensor(1)
    if lhs.dtype == DatumType.F32 and rhs.dtype != DatumType.F32:
        raise ModelFormatError(f"{node.where}: hybrid BATCH_MATMUL ({lhs.dtype} by {rhs.dtype}) is not supported")
    quant = node.output_quant() if lhs.dtype in QUANTIZED and lhs.quant is not None else None
    # TFLite's BATCH_MATMUL requantizes in fixed point in its reference kernels too
    return Translated(MatMul(transpose_a=adj_x, transpose_b=adj_y, quant=quant, flavour="micro"), [0, 1])


@tflite_op("EMBEDDING_LOOKUP")
def embedding_lookup(node: TflNode):
    """Rows of the table (input 1) at the ids (input 0): a Gather along axis 0. An int8 table
    with a float output (hybrid) is dequantized once, as LiteRT multiplies each row's values by
    its scale (per table or per row)."""
    ids, table, out = node.tensor(0), node.tensor(1), node.output()
    if ids.dtype != DatumType.I32 or len(ids.shape) != 1:
        raise ModelFormatError(f"{node.where}: the ids must be a 1-d int32 tensor, got {ids.dtype} {list(ids.shape)}")
    if len(table.shape) < 2:
        raise ModelFormatError(f"{node.where}: the table must have rank 2 or more, got {list(table.shape)}")
    via = {}
    if out.dtype == DatumType.F32 and table.dtype != DatumType.F32:
        values = node.require_const(1, "a quantized table")
        if table.quant is None or table.dtype != DatumType.I8 or any(table.quant.zero_point):
            raise ModelFormatError(f"{node.where}: a float lookup in a {table.dtype} table needs it symmetric int8")
        scales = np.asarray(table.quant.scale, dtype=np.float32)
        if scales.size > 1 and (table.quant.axis or 0) != 0:
            raise ModelFormatError(f"{node.where}: a table quantized along axis {table.quant.axis} (0 or none)")
        via[0] = (values.astype(np.float32) * scales.reshape((-1,) + (1,) * (values.ndim - 1))).astype(np.float32)
    elif out.dtype != table.dtype:
        raise ModelFormatError(f"{node.where}: a lookup from a {table.dtype} table to {out.dtype}")
    return Translated(Gather(axis=0), [1, 0], inputs_via=via)
