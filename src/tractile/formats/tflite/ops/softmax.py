"""Translations of SOFTMAX, LOG_SOFTMAX and L2_NORMALIZATION (both directions), onto the core
Softmax and LpNorm (quantized: their ``quant`` and TFLite's fixed-point recipes)."""
from __future__ import annotations

from ....errors import ModelFormatError
from ....ops.nn import Softmax
from ....ops.norm import LpNorm
from ..registry import OpSpec, TflNode, activation_name, tflite_op, tflite_writer
from .activation import input_quantized, output_quant


@tflite_op("SOFTMAX", "LOG_SOFTMAX")
def softmax(node: TflNode):
    beta = 1.0
    if node.opcode == "SOFTMAX":
        options = node.options("SoftmaxOptions")
        beta = float(options.Beta()) if options is not None else 1.0
    if not input_quantized(node):
        return Softmax(-1, log=node.opcode == "LOG_SOFTMAX", beta=beta)
    return Softmax(-1, log=node.opcode == "LOG_SOFTMAX", beta=beta, to=node.output(0).dtype,
                   quant=output_quant(node))


@tflite_writer(Softmax)
def write_softmax(op: Softmax, ctx) -> OpSpec:
    rank = ctx.input_fact(0).rank
    if rank and op.axis % rank != rank - 1:
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite's softmax runs over the last axis, not {op.axis}")
    if op.log:
        if op.beta != 1.0:
            raise ModelFormatError(f"node {ctx.node.name!r}: TFLite's LOG_SOFTMAX has no beta")
        return OpSpec("LOG_SOFTMAX", ("LogSoftmaxOptions", {}))
    return OpSpec("SOFTMAX", ("SoftmaxOptions", {"Beta": op.beta}))


@tflite_op("L2_NORMALIZATION")
def l2_normalization(node: TflNode):
    options = node.options("L2NormOptions")
    code = options.FusedActivationFunction() if options is not None else 0
    if activation_name(code) != "NONE":
        raise ModelFormatError(f"{node.where}: a fused {activation_name(code)} on L2_NORMALIZATION is not supported")
    return LpNorm(-1, 2, 1e-6, quant=output_quant(node) if input_quantized(node) else None)


@tflite_writer(LpNorm)
def write_l2_normalization(op: LpNorm, ctx) -> OpSpec:
    rank = ctx.input_fact(0).rank
    if op.p != 2 or (rank and op.axis % rank != rank - 1):
        raise ModelFormatError(f"node {ctx.node.name!r}: TFLite's L2_NORMALIZATION is an L2 norm over the last axis")
    return OpSpec("L2_NORMALIZATION", ("L2NormOptions", {}))
