"""TensorFlow convolutions, pooling, LRN, MatMul, BiasAdd, FusedBatchNorm.

NHWC ops become tractile's NCHW core ops between two Transposes (the filter's layout change
is folded into the constant weights by declutter); NCHW ones map directly.
"""
from __future__ import annotations

import math

import numpy as np

from ....graph import OutletId
from ....ops import binary, unary
from ....ops.array import Transpose
from ....ops.conv import Conv
from ....ops.conv_transpose import ConvTranspose
from ....ops.einsum import Einsum
from ....ops.matmul import MatMul
from ....ops.nn import LRN
from ....ops.pool import AveragePool, MaxPool
from ....ops.shape import Reshape
from ....ops.window import Window
from ..registry import TfNode, Translated, tf_op

NHWC_TO_NCHW = (0, 3, 1, 2)
NCHW_TO_NHWC = (0, 2, 3, 1)


def data_format(node: TfNode) -> str:
    layout = node.string("data_format", "NHWC")
    if layout not in ("NHWC", "NCHW"):
        raise node.error(f"data_format {layout!r} is not supported (NHWC or NCHW)")
    return layout


def spatial(node: TfNode, name: str, layout: str, default: int = 1, values=None) -> tuple[int, int]:
    """The H and W entries of a 4-element attribute (strides, dilations, ksize), or of ``values``."""
    values = node.ints(name, (default,) * 4) if values is None else values
    if len(values) != 4:
        raise node.error(f"attribute {name!r} should have 4 entries, got {list(values)}")
    outer = (values[0], values[3]) if layout == "NHWC" else (values[0], values[1])
    if any(v != 1 for v in outer) and name != "dilations":
        raise node.error(f"{name} {list(values)}: only the spatial axes may have values other than 1")
    return (values[1], values[2]) if layout == "NHWC" else (values[2], values[3])


def padding(node: TfNode, layout: str) -> tuple[str, tuple[int, ...] | None]:
    """(auto_pad, ONNX-style pads) from ``padding`` and ``explicit_paddings``."""
    mode = node.string("padding")
    if mode == "SAME":
        return "SAME_UPPER", None
    if mode == "VALID":
        return "VALID", None
    if mode == "EXPLICIT":
        pads = node.ints("explicit_paddings")
        if len(pads) != 8:
            raise node.error(f"explicit_paddings should have 8 entries, got {list(pads)}")
        h, w = (1, 2) if layout == "NHWC" else (2, 3)
        return "NOTSET", (pads[2 * h], pads[2 * w], pads[2 * h + 1], pads[2 * w + 1])
    raise node.error(f"padding {mode!r} is not supported (SAME, VALID or EXPLICIT)")


def in_nchw(node: TfNode, outlet: OutletId, layout: str) -> OutletId:
    if layout == "NCHW":
        return outlet
    return node.wire("to_nchw", Transpose(NHWC_TO_NCHW), [outlet])[0]


def back_to(node: TfNode, outlets: list[OutletId], layout: str):
    if layout == "NCHW":
        return outlets
    return Translated(Transpose(NCHW_TO_NHWC), outlets)


def _window(node: TfNode, layout: str, kernel=(), strides=None) -> Window:
    auto_pad, pads = padding(node, layout)
    strides = spatial(node, "strides", layout) if strides is None else strides
    return Window.make(kernel, strides, spatial(node, "dilations", layout), pads, auto_pad)


@tf_op("Conv2D")
def conv2d(node: TfNode):
    layout = data_format(node)
    filter_value = node.const(1)
    group = 1
    x_fact = node.input_fact(0)
    channel_axis = 3 if layout == "NHWC" else 1
    if filter_value is not None and x_fact.rank == 4 and isinstance(x_fact.shape.dims[channel_axis], int):
        group = max(1, x_fact.shape.dims[channel_axis] // filter_value.shape[2])
    weights = node.wire("weights", Transpose((3, 2, 0, 1)), [1])
    y = node.wire("conv", Conv(_window(node, layout), group), [in_nchw(node, node.input(0), layout)] + weights)
    return back_to(node, y, layout)


@tf_op("DepthwiseConv2dNative")
def depthwise_conv2d(node: TfNode):
    layout = data_format(node)
    filter_value = node.const(1)
    if filter_value is None:
        raise node.error("the filter (input 1) must be a constant")
    kh, kw, channels, multiplier = filter_value.shape
    weights = node.wire("weights", Transpose((2, 3, 0, 1)), [1])
    weights = node.wire("weights_oihw", Reshape(), weights + [np.array([channels * multiplier, 1, kh, kw], np.int64)])
    y = node.wire("conv", Conv(_window(node, layout), int(channels)), [in_nchw(node, node.input(0), layout)] + weights)
    return back_to(node, y, layout)


def _output_sizes(node: TfNode, layout: str) -> tuple[int, ...]:
    """input_sizes: a constant, or a value inferred when loading whose spatial entries are known
    (Keras computes it from the symbolic batch); unknown entries are returned as -1."""
    value = node.const(0)
    if value is None:
        value = node.input_fact(0).value
    if value is None or np.asarray(value).size != 4:
        raise node.error("input 0 (input_sizes) must hold 4 values known when loading")
    sizes = tuple(v if isinstance(v, (int, np.integer)) else -1 for v in np.asarray(value).reshape(-1).tolist())
    spatial_sizes = sizes[1:3] if layout == "NHWC" else sizes[2:4]
    if any(v < 0 for v in spatial_sizes):
        raise node.error(f"the spatial entries of input_sizes must be known when loading, got {sizes}")
    return sizes


@tf_op("Conv2DBackpropInput")
def conv2d_backprop_input(node: TfNode):
    layout = data_format(node)
    sizes = _output_sizes(node, layout)
    filter_value = node.const(1)
    if filter_value is None:
        raise node.error("needs a constant filter (input 1)")
    kernel = filter_value.shape[:2]
    strides = spatial(node, "strides", layout)
    dilations = spatial(node, "dilations", layout)
    out_hw = (sizes[1], sizes[2]) if layout == "NHWC" else (sizes[2], sizes[3])
    mode, explicit = padding(node, layout)
    begins, ends, extra = [], [], []
    for axis in range(2):
        extent = (kernel[axis] - 1) * dilations[axis] + 1
        if mode == "SAME_UPPER":
            size_in = math.ceil(out_hw[axis] / strides[axis])
            total = max((size_in - 1) * strides[axis] + extent - out_hw[axis], 0)
            begin, end = total // 2, total - total // 2
        elif mode == "VALID":
            size_in = (out_hw[axis] - extent) // strides[axis] + 1
            begin = end = 0
        else:
            begin, end = explicit[axis], explicit[axis + 2]
            size_in = (out_hw[axis] + begin + end - extent) // strides[axis] + 1
        full = strides[axis] * (size_in - 1) + extent - begin - end
        begins.append(begin)
        ends.append(end)
        extra.append(out_hw[axis] - full)
    if any(e < 0 or e >= max(strides) for e in extra):
        raise node.error(f"input_sizes {list(sizes)} do not match the filter and strides")
    window = Window.make(tuple(kernel), strides, dilations, tuple(begins + ends))
    weights = node.wire("weights", Transpose((3, 2, 0, 1)), [1])
    y = node.wire("conv_transpose", ConvTranspose(window, 1, tuple(extra)), [in_nchw(node, node.input(2), layout)]
                  + weights)
    return back_to(node, y, layout)


@tf_op("MaxPool", "AvgPool", "MaxPoolV2")
def pool(node: TfNode):
    layout = data_format(node)
    if node.op_type == "MaxPoolV2":  # ksize and strides are inputs
        kernel = spatial(node, "ksize", layout, values=node.const_ints(1, "ksize"))
        window = _window(node, layout, kernel, spatial(node, "strides", layout, values=node.const_ints(2, "strides")))
    else:
        window = _window(node, layout, spatial(node, "ksize", layout))
    op = AveragePool(window, False) if node.op_type == "AvgPool" else MaxPool(window)
    y = node.wire("pool", op, [in_nchw(node, node.input(0), layout)])
    return back_to(node, y, layout)


@tf_op("LRN")
def local_response_norm(node: TfNode):
    """Across the last (channel) axis: x / (bias + alpha * sum of squares over 2r + 1 channels) ^ beta."""
    radius = node.int("depth_radius", 5)
    size = 2 * radius + 1
    op = LRN(size, node.float("alpha", 1.0) * size, node.float("beta", 0.5), node.float("bias", 1.0))
    y = node.wire("lrn", op, [in_nchw(node, node.input(0), "NHWC")])
    return back_to(node, y, "NHWC")


@tf_op("MatMul")
def matmul(node: TfNode):
    inputs = []
    for index, attr in ((0, "transpose_a"), (1, "transpose_b")):
        if node.bool(attr, False):
            inputs += node.wire(f"transpose{'ab'[index]}", Transpose((1, 0)), [index])
        else:
            inputs.append(node.input(index))
    return Translated(MatMul(), inputs)


@tf_op("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def batch_matmul(node: TfNode):
    inputs = []
    for index, attr in ((0, "adj_x"), (1, "adj_y")):
        if node.bool(attr, False):
            inputs += node.wire(f"adjoint{'xy'[index]}", Einsum("...ij->...ji"), [index])
        else:
            inputs.append(node.input(index))
    y = Translated(MatMul(), inputs)
    if node.op_type == "BatchMatMulV3" and node.has("Tout") and node.type("Tout") != node.type("Ta"):
        raise node.error("a BatchMatMulV3 whose output type differs from its inputs' is not supported")
    return y


def per_channel(node: TfNode, values: list, layout: str, rank: int | None) -> list:
    """Per-channel vectors shaped to broadcast along the channel axis of ``layout``."""
    if layout == "NHWC":
        return values
    trailing = (rank or 4) - 2
    shaped = []
    for index, value in enumerate(values):
        if isinstance(value, np.ndarray):
            shaped.append(value.reshape((-1,) + (1,) * trailing))
        else:
            shape = np.array([-1] + [1] * trailing, np.int64)
            shaped += node.wire(f"channels{index}", Reshape(), [value, shape])
    return shaped


@tf_op("BiasAdd", "BiasAddV1")
def bias_add(node: TfNode):
    layout = data_format(node) if node.has("data_format") else "NHWC"
    rank = node.input_fact(0).rank if layout == "NCHW" else None
    return Translated(binary.Add(), [0] + per_channel(node, [node.input(1)], layout, rank))


@tf_op("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def fused_batch_norm(node: TfNode):
    if node.bool("is_training", True):
        raise node.error("is_training is set: only inference (is_training=False) is supported")
    layout = data_format(node)
    epsilon = node.float("epsilon", 1e-4)
    rank = node.input_fact(0).rank if layout == "NCHW" else None
    params = [node.const(i) for i in range(1, 5)]
    if all(p is not None for p in params):
        scale, offset, mean, variance = (np.asarray(p, np.float32) for p in params)
        multiplier = (scale / np.sqrt(variance + np.float32(epsilon))).astype(np.float32)
        shift = (offset - mean * multiplier).astype(np.float32)
        multiplier, shift = per_channel(node, [multiplier, shift], layout, rank)
    else:
        scale, offset, mean, variance = per_channel(node, [node.input(i) for i in range(1, 5)], layout, rank)
        eps = np.asarray(epsilon, np.float32)
        root = node.wire("rsqrt", unary.Sqrt(), node.wire("variance_eps", binary.Add(), [variance, eps]))
        multiplier = node.wire("multiplier", binary.Div(), [scale] + root)[0]
        shift = node.wire("shift", binary.Sub(), [offset] + node.wire("mean_scaled", binary.Mul(),
                                                                       [mean, multiplier]))[0]
    scaled = node.wire("scaled", binary.Mul(), [0, multiplier])
    y = node.wire("", binary.Add(), scaled + [shift])
    return y + [node.input(3), node.input(4), node.input(3), node.input(4), node.input(3)]
