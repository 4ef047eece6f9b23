"""Translations of the convolutions and pools (both directions): CONV_2D, DEPTHWISE_CONV_2D,
TRANSPOSE_CONV, AVERAGE/MAX/L2_POOL_2D."""
from __future__ import annotations

import numpy as np

from ....errors import ModelFormatError
from ....ops.tfl.conv import Conv2D, DepthwiseConv2D, Window2D
from ....ops.tfl.pool import Pool2D
from ....ops.tfl.transpose_conv import TransposeConv
from ..registry import (
    OpSpec,
    TflNode,
    Translated,
    activation_code,
    activation_name,
    padding_code,
    padding_name,
    tflite_op,
    tflite_writer,
)


def _window(options, dilations: bool = True) -> Window2D:
    return Window2D(padding_name(options.Padding()), options.StrideH(), options.StrideW(),
                    options.DilationHFactor() if dilations else 1, options.DilationWFactor() if dilations else 1)


def _window_fields(window: Window2D, dilations: bool = True) -> dict:
    fields = {"Padding": padding_code(window.padding), "StrideH": window.stride_h, "StrideW": window.stride_w}
    if dilations:
        fields.update({"DilationHFactor": window.dilation_h, "DilationWFactor": window.dilation_w})
    return fields


@tflite_op("CONV_2D")
def conv_2d(node: TflNode):
    options = node.options("Conv2DOptions")
    if options is None:
        raise ModelFormatError(f"{node.where}: missing Conv2DOptions")
    return Conv2D(window=_window(options), activation=activation_name(options.FusedActivationFunction()),
                  has_bias=node.present(2))


@tflite_writer(Conv2D)
def write_conv_2d(op: Conv2D, ctx) -> OpSpec:
    fields = _window_fields(op.window)
    fields["FusedActivationFunction"] = activation_code(op.activation)
    if op.has_bias and ctx.input_dtype(0).value == "i16":
        fields["QuantizedBiasType"] = ctx.tensor_type(ctx.input_dtype(2))
    return OpSpec("CONV_2D", ("Conv2DOptions", fields))


@tflite_op("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(node: TflNode):
    options = node.options("DepthwiseConv2DOptions")
    if options is None:
        raise ModelFormatError(f"{node.where}: missing DepthwiseConv2DOptions")
    weights = node.tensor(1)
    channels = node.tensor(0).shape[3] if len(node.tensor(0).shape) == 4 else 0
    multiplier = options.DepthMultiplier()
    if channels > 0 and len(weights.shape) == 4 and weights.shape[3] % channels == 0:
        multiplier = weights.shape[3] // channels
    return DepthwiseConv2D(window=_window(options), depth_multiplier=max(multiplier, 1),
                           activation=activation_name(options.FusedActivationFunction()), has_bias=node.present(2))


@tflite_writer(DepthwiseConv2D)
def write_depthwise(op: DepthwiseConv2D, ctx) -> OpSpec:
    fields = _window_fields(op.window)
    fields.update({"FusedActivationFunction": activation_code(op.activation), "DepthMultiplier": op.depth_multiplier})
    return OpSpec("DEPTHWISE_CONV_2D", ("DepthwiseConv2DOptions", fields))


_POOLS = {"AVERAGE_POOL_2D": "average", "MAX_POOL_2D": "max", "L2_POOL_2D": "l2"}


@tflite_op(*_POOLS)
def pool_2d(node: TflNode):
    options = node.options("Pool2DOptions")
    if options is None:
        raise ModelFormatError(f"{node.where}: missing Pool2DOptions")
    return Pool2D(kind=_POOLS[node.opcode], window=_window(options, dilations=False),
                  filter_h=options.FilterHeight(), filter_w=options.FilterWidth(),
                  activation=activation_name(options.FusedActivationFunction()))


@tflite_writer(Pool2D)
def write_pool(op: Pool2D, ctx) -> OpSpec:
    fields = _window_fields(op.window, dilations=False)
    fields.update({"FilterHeight": op.filter_h, "FilterWidth": op.filter_w,
                   "FusedActivationFunction": activation_code(op.activation)})
    name = {v: k for k, v in _POOLS.items()}[op.kind]
    return OpSpec(name, ("Pool2DOptions", fields))


@tflite_op("TRANSPOSE_CONV")
def transpose_conv(node: TflNode):
    options = node.options("TransposeConvOptions")
    if options is None:
        raise ModelFormatError(f"{node.where}: missing TransposeConvOptions")
    window = Window2D(padding_name(options.Padding()), options.StrideH(), options.StrideW())
    has_bias = node.present(3)
    activation = activation_name(options.FusedActivationFunction())
    inputs = [2, 1, 3] if has_bias else [2, 1]
    if node.const(0) is None:  # given at run time (TFLite Micro's own tests feed it as an input)
        op = TransposeConv(window=window, has_bias=has_bias, activation=activation, shape_input=True)
        return Translated(op, [*inputs, 0])
    shape = tuple(int(v) for v in node.require_const(0, "the output shape").reshape(-1))
    op = TransposeConv(output_shape=shape, window=window, has_bias=has_bias, activation=activation)
    return Translated(op, inputs)


@tflite_writer(TransposeConv)
def write_transpose_conv(op: TransposeConv, ctx) -> OpSpec:
    shape = (3 if op.has_bias else 2) if op.shape_input else \
        ctx.const(np.asarray(op.output_shape, dtype=np.int32), "output_shape")
    fields = {"Padding": padding_code(op.window.padding), "StrideH": op.window.stride_h,
              "StrideW": op.window.stride_w, "FusedActivationFunction": activation_code(op.activation)}
    if op.has_bias and ctx.input_dtype(0).value == "i16":
        fields["QuantizedBiasType"] = ctx.tensor_type(ctx.input_dtype(2))
    return OpSpec("TRANSPOSE_CONV", ("TransposeConvOptions", fields), [shape, 1, 0] + ([2] if op.has_bias else []))
