"""Translations of FULLY_CONNECTED (both directions)."""
from __future__ import annotations

from ....errors import ModelFormatError
from ....ops.tfl.dense import FullyConnected
from ..registry import (
    OpSpec,
    TflNode,
    activation_code,
    activation_name,
    tflite_op,
    tflite_writer,
)


@tflite_op("FULLY_CONNECTED")
def fully_connected(node: TflNode):
    options = node.options("FullyConnectedOptions")
    activation, keep, weights_format = "NONE", False, 0
    if options is not None:
        activation = activation_name(options.FusedActivationFunction())
        keep = bool(options.KeepNumDims())
        weights_format = options.WeightsFormat()
    if weights_format != 0:
        raise ModelFormatError(f"{node.where}: shuffled weights formats are not supported")
    if len(node.outputs) != 1:
        raise ModelFormatError(f"{node.where}: expected one output, got {len(node.outputs)}")
    return FullyConnected(activation=activation, keep_num_dims=keep, has_bias=node.present(2), flavour=node.flavour)


@tflite_writer(FullyConnected)
def write_fully_connected(op: FullyConnected, ctx) -> OpSpec:
    fields = {"FusedActivationFunction": activation_code(op.activation), "KeepNumDims": op.keep_num_dims}
    if ctx.input_dtype(0).value == "i16" and op.has_bias:
        fields["QuantizedBiasType"] = ctx.tensor_type(ctx.input_dtype(2))
    return OpSpec("FULLY_CONNECTED", ("FullyConnectedOptions", fields))
