"""Translations of the dense, convolution, pooling and softmax operators (both directions)."""
from __future__ import annotations

from ....errors import ModelFormatError
from ....ops.tfl.conv import Conv2D, DepthwiseConv2D, Window2D
from ....ops.tfl.dense import FullyConnected
from ....ops.tfl.pool import Pool2D
from ....ops.tfl.softmax import LogSoftmax, Softmax
from ..registry import (OpSpec, TflNode, activation_code, activation_name, padding_code, padding_name, tflite_op,
                        tflite_writer)


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


@tflite_op("SOFTMAX")
def softmax(node: TflNode):
    options = node.options("SoftmaxOptions")
    return Softmax(beta=float(options.Beta()) if options is not None else 1.0)


@tflite_writer(Softmax)
def write_softmax(op: Softmax, ctx) -> OpSpec:
    return OpSpec("SOFTMAX", ("SoftmaxOptions", {"Beta": op.beta}))


@tflite_op("LOG_SOFTMAX")
def log_softmax(node: TflNode):
    return LogSoftmax()


@tflite_writer(LogSoftmax)
def write_log_softmax(op: LogSoftmax, ctx) -> OpSpec:
    return OpSpec("LOG_SOFTMAX", ("LogSoftmaxOptions", {}))
