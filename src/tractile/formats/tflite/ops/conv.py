"""Translations of the convolutions and pools (both directions): CONV_2D, DEPTHWISE_CONV_2D,
TRANSPOSE_CONV, AVERAGE/MAX/L2_POOL_2D onto the core Conv, ConvTranspose, AveragePool, MaxPool
and LpPool with ``data_format="NHWC"``.

TFLite's SAME padding is the core window's SAME_UPPER (the extra pad at the end), VALID its
VALID; a quantized operator carries its output's quantization as ``quant`` and its fused
activation becomes the core activation op after it (which the optimizer fuses back).
"""
from __future__ import annotations

import numpy as np

from ....errors import AnalysisError, ModelFormatError
from ....ops.conv import Conv
from ....ops.conv_nhwc import kernel_dims
from ....ops.conv_transpose import ConvTranspose
from ....ops.conv_transpose_nhwc import tflite_padding
from ....ops.pool import AveragePool, LpPool, MaxPool
from ....ops.window import Window
from ..registry import OpSpec, Reshaped, TflNode, Translated, padding_code, tflite_op, tflite_writer
from .elementwise import activation_code_of

_PADDINGS = {0: "SAME_UPPER", 1: "VALID"}


def _window(node: TflNode, options, kernel: tuple, dilations: bool = True) -> Window:
    code = options.Padding()
    if code not in _PADDINGS:
        raise ModelFormatError(f"{node.where}: unknown padding code {code}")
    dilation = (options.DilationHFactor(), options.DilationWFactor()) if dilations else (1, 1)
    strides = (options.StrideH(), options.StrideW())
    if min(*strides, *dilation) < 1 or min(kernel) < 1:
        raise ModelFormatError(f"{node.where}: strides {strides}, dilations {dilation} and kernel {kernel} must be "
                               "positive")
    return Window.make(kernel, strides, dilation, None, _PADDINGS[code])


def _quant(node: TflNode, slot: int = 0):
    """The output quantization when the operator computes on quantized tensors (its data input
    ``slot`` is one), else None."""
    tensor = node.tensor(slot)
    return node.output_quant() if tensor.quant is not None and tensor.dtype.is_integer else None


def _options(node: TflNode, name: str):
    options = node.options(name)
    if options is None:
        raise ModelFormatError(f"{node.where}: missing {name}")
    return options


def _shape(node: TflNode, slot: int) -> tuple:
    shape = tuple(node.tensor(slot).shape)
    if len(shape) != 4:
        raise ModelFormatError(f"{node.where}: input {slot} should be 4-d, got shape {list(shape)}")
    return shape


@tflite_op("CONV_2D")
def conv_2d(node: TflNode):
    options = _options(node, "Conv2DOptions")
    x_shape, w_shape = _shape(node, 0), _shape(node, 1)
    if w_shape[3] < 1 or x_shape[3] % w_shape[3]:
        raise ModelFormatError(f"{node.where}: the input's {x_shape[3]} channels are no multiple of the weights' "
                               f"{w_shape[3]}")
    op = Conv(_window(node, options, w_shape[1:3]), x_shape[3] // w_shape[3], data_format="NHWC",
              kernel_format="OHWI", quant=_quant(node))
    slots = [0, 1, 2] if node.present(2) else [0, 1]
    return Translated(op, slots, node.fused_activation(options.FusedActivationFunction()))


@tflite_op("DEPTHWISE_CONV_2D")
def depthwise_conv_2d(node: TflNode):
    options = _options(node, "DepthwiseConv2DOptions")
    x_shape, w_shape = _shape(node, 0), _shape(node, 1)
    channels = x_shape[3]
    if w_shape[0] != 1 or channels < 1 or w_shape[3] % channels:
        raise ModelFormatError(f"{node.where}: weights {list(w_shape)} do not fit an input of {channels} channels "
                               "(1, KH, KW, channels * multiplier)")
    op = Conv(_window(node, options, w_shape[1:3]), channels, data_format="NHWC", kernel_format="HWIO",
              quant=_quant(node))
    weights = Reshaped(1, (w_shape[1], w_shape[2], 1, w_shape[3]))
    slots = [0, weights, 2] if node.present(2) else [0, weights]
    return Translated(op, slots, node.fused_activation(options.FusedActivationFunction()))


def _padding_name(window: Window, spatial, kernel, where: str) -> str:
    """SAME or VALID: the TFLite padding of a window over an input of ``spatial`` dims."""
    if window.auto_pad == "SAME_UPPER":
        return "SAME"
    if window.auto_pad == "VALID" or window.pads is None:
        return "VALID"
    if all(isinstance(d, int) for d in spatial):
        same = Window.make(kernel, window.strides, window.dilations, None, "SAME_UPPER")
        begins, ends, _ = same.concrete_pads(tuple(spatial))
        if window.pads == tuple(begins + ends):
            return "SAME"
    raise ModelFormatError(f"{where}: the pads {window.pads} are neither TFLite's SAME nor VALID")


def _window_fields(window: Window, spatial, where: str, dilations: bool = True) -> dict:
    if window.ceil_mode:
        raise ModelFormatError(f"{where}: TFLite has no ceil mode")
    if not dilations and any(d != 1 for d in window.dilations):
        raise ModelFormatError(f"{where}: TFLite pools have no dilations")
    fields = {"Padding": padding_code(_padding_name(window, spatial, window.kernel, where)),
              "StrideH": window.strides[0], "StrideW": window.strides[1]}
    if dilations:
        fields.update({"DilationHFactor": window.dilations[0], "DilationWFactor": window.dilations[1]})
    return fields


def _activation_code(op, ctx, name: str) -> int:
    code = activation_code_of(op.activation, ctx.output_fact(0))
    if code is None:
        raise ModelFormatError(f"{name} cannot carry the fused {op.activation.name} of node {ctx.node.name!r}")
    return code


@tflite_writer(Conv)
def write_conv(op: Conv, ctx) -> OpSpec:
    where = f"node {ctx.node.name!r}"
    x, w = ctx.input_fact(0), ctx.input_fact(1)
    if op.data_format != "NHWC" or op.kernel_format not in ("OHWI", "HWIO"):
        raise ModelFormatError(f"{where}: only NHWC convolutions with OHWI or HWIO kernels have a TFLite operator")
    filters, depth, k_h, k_w = kernel_dims(w.shape, op.kernel_format)
    window = op.window.for_kernel((k_h, k_w))
    fields = _window_fields(window, x.shape[1:3], where)
    bias = [2] if ctx.input_count() > 2 else []
    if op.kernel_format == "HWIO":
        if depth != 1 or op.group != x.shape[3]:
            raise ModelFormatError(f"{where}: an HWIO kernel is written as DEPTHWISE_CONV_2D, which needs one "
                                   "input channel per group")
        name = "DEPTHWISE_CONV_2D"
        fields.update({"FusedActivationFunction": _activation_code(op, ctx, name),
                       "DepthMultiplier": filters // op.group})
        value = ctx.model.outlet_fact(ctx.node.inputs[1]).konst
        if value is None:
            raise ModelFormatError(f"{where}: DEPTHWISE_CONV_2D weights must be a constant")
        weights = ctx.const(np.asarray(value).reshape(1, k_h, k_w, filters), "weights", w.qparams)
        return OpSpec(name, ("DepthwiseConv2DOptions", fields), [0, weights, *bias])
    fields["FusedActivationFunction"] = _activation_code(op, ctx, "CONV_2D")
    if bias and x.dtype.value == "i16":
        fields["QuantizedBiasType"] = ctx.tensor_type(ctx.input_dtype(2))
    return OpSpec("CONV_2D", ("Conv2DOptions", fields))


_POOLS = {"AVERAGE_POOL_2D": AveragePool, "MAX_POOL_2D": MaxPool, "L2_POOL_2D": LpPool}


@tflite_op(*_POOLS)
def pool_2d(node: TflNode):
    options = _options(node, "Pool2DOptions")
    window = _window(node, options, (options.FilterHeight(), options.FilterWidth()), dilations=False)
    activation = node.fused_activation(options.FusedActivationFunction())
    kind = _POOLS[node.opcode]
    if kind is LpPool:
        if not node.tensor(0).dtype.is_float:
            raise ModelFormatError(f"{node.where}: L2_POOL_2D is float only, got {node.tensor(0).dtype}")
        return Translated(LpPool(window, 2, data_format="NHWC", mean=True), activation=activation)
    if kind is MaxPool:
        return Translated(MaxPool(window, data_format="NHWC"), activation=activation)
    return Translated(AveragePool(window, data_format="NHWC", quant=_quant(node)), activation=activation)


@tflite_writer(AveragePool, MaxPool, LpPool)
def write_pool(op, ctx) -> OpSpec:
    where = f"node {ctx.node.name!r}"
    name = {AveragePool: "AVERAGE_POOL_2D", MaxPool: "MAX_POOL_2D", LpPool: "L2_POOL_2D"}[type(op)]
    if op.data_format != "NHWC" or (isinstance(op, LpPool) and not op.mean) or getattr(op, "with_indices", False) \
            or getattr(op, "count_include_pad", False):
        raise ModelFormatError(f"{where}: only TFLite's NHWC pools (padding not counted, L2 averaged) can be written")
    fields = _window_fields(op.window, ctx.input_fact(0).shape[1:3], where, dilations=False)
    fields.update({"FilterHeight": op.window.kernel[0], "FilterWidth": op.window.kernel[1],
                   "FusedActivationFunction": _activation_code(op, ctx, name) if not isinstance(op, LpPool) else 0})
    return OpSpec(name, ("Pool2DOptions", fields))


@tflite_op("TRANSPOSE_CONV")
def transpose_conv(node: TflNode):
    options = _options(node, "TransposeConvOptions")
    w_shape, x_shape = _shape(node, 1), _shape(node, 2)
    window = _window(node, options, w_shape[1:3], dilations=False)
    has_bias = node.present(3)
    activation = node.fused_activation(options.FusedActivationFunction())
    slots = [2, 1, 3] if has_bias else [2, 1]
    quant = _quant(node, 2)
    if node.const(0) is None:  # given at run time (TFLite Micro's own tests feed it as an input)
        op = ConvTranspose(window, data_format="NHWC", kernel_format="OHWI", quant=quant, shape_input=True)
        return Translated(op, [*slots, 0], activation)
    shape = tuple(int(v) for v in node.require_const(0, "the output shape").reshape(-1))
    if len(shape) != 4 or shape[0] != x_shape[0] or shape[3] != w_shape[0]:
        raise ModelFormatError(f"{node.where}: the output shape {list(shape)} does not fit input {list(x_shape)} and "
                               f"weights {list(w_shape)}")
    try:
        explicit, extra = transpose_window(window, x_shape, w_shape, shape)
    except AnalysisError as error:
        raise ModelFormatError(f"{node.where}: {error}") from None
    op = ConvTranspose(explicit, output_padding=extra, data_format="NHWC", kernel_format="OHWI", quant=quant)
    return Translated(op, slots, activation)


def transpose_window(window: Window, x_shape, w_shape, out_shape) -> tuple[Window, tuple[int, int]]:
    """TFLite's TRANSPOSE_CONV geometry (SAME_UPPER or VALID ``window``, input, OHWI weights and
    output shapes) as the core ConvTranspose's: explicit pads, and an output padding where the
    output reaches past the full result (its extra rows and columns get only the bias)."""
    padding = "SAME" if window.auto_pad == "SAME_UPPER" else "VALID"
    pads, extra = [0, 0, 0, 0], [0, 0]
    for axis in range(2):
        out, size, kernel, stride = out_shape[1 + axis], x_shape[1 + axis], w_shape[1 + axis], window.strides[axis]
        begin = tflite_padding(out, size, kernel, stride, padding)
        full = (size - 1) * stride + kernel
        pads[axis], pads[axis + 2] = begin, max(full - begin - out, 0)
        extra[axis] = max(out - full, 0)
    return Window.make(window.kernel, window.strides, window.dilations, tuple(pads)), (extra[0], extra[1])


@tflite_writer(ConvTranspose)
def write_transpose_conv(op: ConvTranspose, ctx) -> OpSpec:
    where = f"node {ctx.node.name!r}"
    if op.data_format != "NHWC" or op.kernel_format != "OHWI" or op.group != 1 or \
            any(d != 1 for d in op.window.dilations or ()):
        raise ModelFormatError(f"{where}: only NHWC transposed convolutions with OHWI kernels, no groups or "
                               "dilations, have a TFLite operator")
    x, w, y = ctx.input_fact(0), ctx.input_fact(1), ctx.output_fact(0)
    kernel = (int(w.shape[1]), int(w.shape[2]))
    window = op.window.for_kernel(kernel)
    bias = ctx.input_count() - op.shape_input > 2
    if op.shape_input:
        padding = "SAME" if window.auto_pad.startswith("SAME") else "VALID"
        shape = ctx.input_count() - 1
    else:
        out = y.concrete_shape()
        if out is None or any(not isinstance(d, int) for d in x.shape[1:3]):
            raise ModelFormatError(f"{where}: TRANSPOSE_CONV needs concrete shapes to be written")
        padding = _transpose_padding(op, window, x.shape[1:3], kernel, out[1:3], where)
        shape = ctx.const(np.asarray(out, dtype=np.int32), "output_shape")
    fields = {"Padding": padding_code(padding), "StrideH": window.strides[0], "StrideW": window.strides[1],
              "FusedActivationFunction": _activation_code(op, ctx, "TRANSPOSE_CONV")}
    if bias and x.dtype.value == "i16":
        fields["QuantizedBiasType"] = ctx.tensor_type(ctx.input_dtype(2))
    return OpSpec("TRANSPOSE_CONV", ("TransposeConvOptions", fields), [shape, 1, 0] + ([2] if bias else []))


def _transpose_padding(op: ConvTranspose, window: Window, spatial, kernel, out, where: str) -> str:
    """The TFLite padding whose geometry is the op's (begin pads and output sizes), or an error."""
    begins, _ = op._geometry(tuple(spatial), kernel)
    for padding in ("SAME", "VALID"):
        try:
            derived = [tflite_padding(o, i, k, s, padding) for o, i, k, s in zip(out, spatial, kernel, window.strides)]
        except AnalysisError:
            continue
        if derived == list(begins):
            return padding
    raise ModelFormatError(f"{where}: the transposed convolution's pads are neither TFLite's SAME nor VALID")
