"""The int8 layers of a TFLite model as CMSIS-NN calls: parameters read from the file and derived
as TFLite Micro's CMSIS-NN kernels derive them (bench_cmsis_nn.py builds and runs them).

Each layer becomes one C function ``layerN`` that calls its CMSIS-NN kernel on an input baked
into flash and writes a RAM buffer; its constants are static const arrays named after it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tractile.formats.tflite.reader import buffer_value, read_model, schema
from tractile.ops.quantized.fixedpoint import quantize_multiplier
from tractile.ops.quantized.functions import input_radius, softmax_scaling

#: the kinds measured, and the CMSIS-NN function each takes
KERNELS = {"CONV_2D": "arm_convolve_wrapper_s8", "DEPTHWISE_CONV_2D": "arm_depthwise_conv_wrapper_s8",
           "FULLY_CONNECTED": "arm_fully_connected_s8", "ADD": "arm_elementwise_add_s8",
           "AVERAGE_POOL_2D": "arm_avgpool_s8", "MAX_POOL_2D": "arm_max_pool_s8", "SOFTMAX": "arm_softmax_s8"}
OPTIONS = {"CONV_2D": "Conv2DOptions", "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
           "FULLY_CONNECTED": "FullyConnectedOptions", "ADD": "AddOptions", "AVERAGE_POOL_2D": "Pool2DOptions",
           "MAX_POOL_2D": "Pool2DOptions", "SOFTMAX": "SoftmaxOptions"}


@dataclass
class Layer:
    """One measured layer: its TFLite op, tensors, the C that runs it, its MACs (elements for
    element-wise and pooling layers)."""

    index: int
    kind: str
    input_names: list[str]
    output_name: str
    output_shape: tuple
    macs: int
    shape_text: str
    constants: list[str] = field(default_factory=list)
    body: str = ""


def c_array(name: str, values: np.ndarray, ctype: str) -> str:
    flat = np.asarray(values).reshape(-1)
    rows = [", ".join(str(int(v)) for v in flat[i:i + 24]) for i in range(0, flat.size, 24)]
    return f"static const {ctype} {name}[{max(flat.size, 1)}] = {{\n  " + ",\n  ".join(rows or ["0"]) + "\n};"


def activation_range(code: int, scale: float, zero: int) -> tuple[int, int]:
    """TFLite's CalculateActivationRangeQuantized for int8 (NONE, RELU, RELU_N1_TO_1, RELU6)."""
    def quantize(x: float) -> int:
        return zero + int(round(x / scale))
    low, high = -128, 127
    if code == 1:
        low = max(low, quantize(0.0))
    elif code == 2:
        low, high = max(low, quantize(-1.0)), min(high, quantize(1.0))
    elif code == 3:
        low, high = max(low, quantize(0.0)), min(high, quantize(6.0))
    return low, high


def same_padding(size: int, kernel: int, stride: int, dilation: int, same: bool) -> tuple[int, int]:
    """(output size, padding before) as TFLite computes them."""
    effective = (kernel - 1) * dilation + 1
    out = (size + stride - 1) // stride if same else (size - effective + stride) // stride
    total = max((out - 1) * stride + effective - size, 0)
    return out, total // 2


def read_layers(path: Path) -> list[Layer]:
    info = read_model(path.read_bytes())
    graph = info.subgraphs[0]
    tensors = graph.tensors
    layers = []
    for op in graph.operators:
        if op.opcode not in KERNELS:
            continue
        options = None
        if op.options is not None:
            options = schema(OPTIONS[op.opcode])()
            options.Init(op.options.Bytes, op.options.Pos)
        ins = [tensors[i] if i >= 0 else None for i in op.inputs]
        out = tensors[op.outputs[0]]
        values = [buffer_value(info, t, t.name) if t is not None else None for t in ins]
        layer = Layer(len(layers), op.opcode, [t.name for t in ins if t is not None and
                                               buffer_value(info, t, t.name) is None], out.name,
                      tuple(out.shape), 0, "")
        build = {"CONV_2D": conv, "DEPTHWISE_CONV_2D": conv, "FULLY_CONNECTED": dense, "ADD": add,
                 "AVERAGE_POOL_2D": pool, "MAX_POOL_2D": pool, "SOFTMAX": softmax}[op.opcode]
        build(layer, options, ins, values, out)
        layers.append(layer)
    return layers


def _q(tensor) -> tuple[float, int]:
    return float(tensor.quant.scale[0]), int(tensor.quant.zero_point[0])


def conv(layer: Layer, options, ins, values, out) -> None:
    x, w = ins[0], values[1]
    bias = values[2] if len(values) > 2 and values[2] is not None else np.zeros(out.shape[-1], np.int32)
    depthwise = layer.kind == "DEPTHWISE_CONV_2D"
    _, in_h, in_w, in_c = x.shape
    kh, kw = w.shape[1], w.shape[2]
    out_c = out.shape[-1]
    sx, zx = _q(x)
    so, zo = _q(out)
    scales = np.broadcast_to(np.asarray(ins[1].quant.scale, np.float64), (out_c,))
    pairs = [quantize_multiplier(np.float64(np.float32(sx)) * float(np.float32(s)) / np.float64(np.float32(so)))
             for s in scales]
    same = options.Padding() == 0
    dh, dw = options.DilationHFactor(), options.DilationWFactor()
    out_h, pad_h = same_padding(in_h, kh, options.StrideH(), dh, same)
    out_w, pad_w = same_padding(in_w, kw, options.StrideW(), dw, same)
    low, high = activation_range(options.FusedActivationFunction(), so, zo)
    n = f"layer{layer.index}"
    layer.constants = [c_array(f"{n}_weights", w, "int8_t"), c_array(f"{n}_bias", bias, "int32_t"),
                       c_array(f"{n}_mult", [m for m, _ in pairs], "int32_t"),
                       c_array(f"{n}_shift", [s for _, s in pairs], "int32_t")]
    layer.macs = out_h * out_w * out_c * kh * kw * (1 if depthwise else in_c)
    layer.shape_text = f"{kh}x{kw}{' dw' if depthwise else ''} {in_h}x{in_w}x{in_c}->{out_h}x{out_w}x{out_c}"
    common = (f"  const cmsis_nn_per_channel_quant_params quant = {{(int32_t *){n}_mult, (int32_t *){n}_shift}};\n"
              f"  const cmsis_nn_dims input_dims = {{1, {in_h}, {in_w}, {in_c}}};\n"
              f"  const cmsis_nn_dims bias_dims = {{1, 1, 1, {out_c}}};\n"
              f"  const cmsis_nn_dims output_dims = {{1, {out_h}, {out_w}, {out_c}}};\n"
              "  cmsis_nn_context context = {scratch, 0};\n")
    tiles = (f"{{{options.StrideW()}, {options.StrideH()}}}, {{{pad_w}, {pad_h}}}, {{{dw}, {dh}}}, "
             f"{{{low}, {high}}}")
    if depthwise:
        layer.body = (common + f"  const cmsis_nn_dw_conv_params params = {{{-zx}, {zo}, {out_c // in_c}, {tiles}}};\n"
                      f"  const cmsis_nn_dims filter_dims = {{1, {kh}, {kw}, {out_c}}};\n"
                      "  context.size = arm_depthwise_conv_wrapper_s8_get_buffer_size(&params, &input_dims, "
                      "&filter_dims, &output_dims);\n"
                      "  if (context.size > (int32_t)sizeof scratch) return -1;\n"
                      "  return (int)arm_depthwise_conv_wrapper_s8(&context, &params, &quant, &input_dims, input, "
                      f"&filter_dims, {n}_weights, &bias_dims, {n}_bias, &output_dims, output);\n")
    else:
        layer.body = (common + f"  const cmsis_nn_conv_params params = {{{-zx}, {zo}, {tiles}}};\n"
                      f"  const cmsis_nn_dims filter_dims = {{{out_c}, {kh}, {kw}, {in_c}}};\n"
                      "  context.size = arm_convolve_wrapper_s8_get_buffer_size(&params, &input_dims, &filter_dims, "
                      "&output_dims);\n"
                      "  if (context.size > (int32_t)sizeof scratch) return -1;\n"
                      "  return (int)arm_convolve_wrapper_s8(&context, &params, &quant, &input_dims, input, "
                      f"&filter_dims, {n}_weights, &bias_dims, {n}_bias, &output_dims, output);\n")


def dense(layer: Layer, options, ins, values, out) -> None:
    x, w = ins[0], values[1]
    units, depth = w.shape
    bias = values[2] if len(values) > 2 and values[2] is not None else np.zeros(units, np.int32)
    batches = int(np.prod(x.shape)) // depth
    sx, zx = _q(x)
    so, zo = _q(out)
    multiplier, shift = quantize_multiplier(np.float64(np.float32(sx)) * np.float64(np.float32(ins[1].quant.scale[0]))
                                            / np.float64(np.float32(so)))
    low, high = activation_range(options.FusedActivationFunction(), so, zo)
    n = f"layer{layer.index}"
    layer.constants = [c_array(f"{n}_weights", w, "int8_t"), c_array(f"{n}_bias", bias, "int32_t")]
    layer.macs = batches * units * depth
    layer.shape_text = f"fc {depth}->{units}"
    layer.body = (f"  const cmsis_nn_fc_params params = {{{-zx}, 0, {zo}, {{{low}, {high}}}}};\n"
                  f"  const cmsis_nn_per_tensor_quant_params quant = {{{multiplier}, {shift}}};\n"
                  f"  const cmsis_nn_dims input_dims = {{{batches}, 1, 1, {depth}}};\n"
                  f"  const cmsis_nn_dims filter_dims = {{{depth}, 1, 1, {units}}};\n"
                  f"  const cmsis_nn_dims bias_dims = {{1, 1, 1, {units}}};\n"
                  f"  const cmsis_nn_dims output_dims = {{{batches}, 1, 1, {units}}};\n"
                  "  const cmsis_nn_context context = {scratch, 0};\n"
                  "  return (int)arm_fully_connected_s8(&context, &params, &quant, &input_dims, input, &filter_dims, "
                  f"{n}_weights, &bias_dims, {n}_bias, &output_dims, output);\n")


def add(layer: Layer, options, ins, values, out) -> None:
    """TFLite's int8 ADD parameters (left shift 20, inputs over twice the larger scale), as
    TFLite Micro's add.cc prepares them; same-shape inputs only (the MLPerf Tiny residuals)."""
    a, b = ins
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{layer.output_name}: a broadcasting ADD (CMSIS-NN's add is element by element)")
    (s1, z1), (s2, z2), (so, zo) = _q(a), _q(b), _q(out)
    twice = 2 * max(np.float64(np.float32(s1)), np.float64(np.float32(s2)))
    m1, sh1 = quantize_multiplier(np.float64(np.float32(s1)) / twice)
    m2, sh2 = quantize_multiplier(np.float64(np.float32(s2)) / twice)
    mo, sho = quantize_multiplier(twice / ((1 << 20) * np.float64(np.float32(so))))
    low, high = activation_range(options.FusedActivationFunction(), so, zo)
    count = int(np.prod(out.shape))
    layer.macs = count
    layer.shape_text = f"add {'x'.join(str(d) for d in out.shape[1:])}"
    layer.input_names = [a.name, b.name]
    layer.body = (f"  return (int)arm_elementwise_add_s8(input, input_b, {-z1}, {m1}, {sh1}, {-z2}, {m2}, {sh2}, 20, "
                  f"output, {zo}, {mo}, {sho}, {low}, {high}, {count});\n")


def pool(layer: Layer, options, ins, values, out) -> None:
    x = ins[0]
    _, in_h, in_w, channels = x.shape
    fh, fw = options.FilterHeight(), options.FilterWidth()
    same = options.Padding() == 0
    out_h, pad_h = same_padding(in_h, fh, options.StrideH(), 1, same)
    out_w, pad_w = same_padding(in_w, fw, options.StrideW(), 1, same)
    so, zo = _q(out)
    low, high = activation_range(options.FusedActivationFunction(), so, zo)
    average = layer.kind == "AVERAGE_POOL_2D"
    layer.macs = out_h * out_w * channels * fh * fw
    layer.shape_text = f"{'avg' if average else 'max'} {fh}x{fw} {in_h}x{in_w}x{channels}"
    size = f"arm_avgpool_s8_get_buffer_size({out_w}, {channels})" if average else "0"
    layer.body = (f"  const cmsis_nn_pool_params params = {{{{{options.StrideW()}, {options.StrideH()}}}, "
                  f"{{{pad_w}, {pad_h}}}, {{{low}, {high}}}}};\n"
                  f"  const cmsis_nn_dims input_dims = {{1, {in_h}, {in_w}, {channels}}};\n"
                  f"  const cmsis_nn_dims filter_dims = {{1, {fh}, {fw}, 1}};\n"
                  f"  const cmsis_nn_dims output_dims = {{1, {out_h}, {out_w}, {channels}}};\n"
                  f"  const cmsis_nn_context context = {{scratch, {size}}};\n"
                  f"  return (int){KERNELS[layer.kind]}(&context, &params, &input_dims, input, &filter_dims, "
                  "&output_dims, output);\n")


def softmax(layer: Layer, options, ins, values, out) -> None:
    x = ins[0]
    sx, _ = _q(x)
    multiplier, shift = softmax_scaling(np.float32(options.Beta()), sx, 5)
    depth = x.shape[-1]
    rows = math.prod(x.shape) // depth
    layer.macs = rows * depth
    layer.shape_text = f"softmax {rows}x{depth}"
    layer.body = (f"  arm_softmax_s8(input, {rows}, {depth}, {multiplier}, {shift}, {-input_radius(5, shift)}, "
                  "output);\n  return 0;\n")
