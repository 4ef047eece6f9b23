"""Translations of QUANTIZE, DEQUANTIZE and CAST (both directions), onto the core Quantize,
Dequantize (quantization from the facts) and Cast."""
from __future__ import annotations

from ....datum import DatumType
from ....errors import ModelFormatError
from ....ops.cast import Cast
from ....ops.quant import Dequantize, Quantize
from ..registry import OpSpec, TflNode, tflite_op, tflite_writer


@tflite_op("QUANTIZE")
def quantize(node: TflNode):
    output = node.output(0)
    if output.quant is None:
        raise ModelFormatError(f"{node.where}: the output of QUANTIZE is not quantized")
    return Quantize(output.dtype, output.quant)


@tflite_writer(Quantize)
def write_quantize(op: Quantize, ctx) -> OpSpec:
    return OpSpec("QUANTIZE", ("QuantizeOptions", {}))


@tflite_op("DEQUANTIZE")
def dequantize(node: TflNode):
    if node.tensor(0).dtype == DatumType.F16:
        return Cast(DatumType.F32)
    return Dequantize()


@tflite_writer(Dequantize)
def write_dequantize(op: Dequantize, ctx) -> OpSpec:
    return OpSpec("DEQUANTIZE", ("DequantizeOptions", {}))


@tflite_op("CAST")
def cast(node: TflNode):
    return Cast(node.output(0).dtype)


@tflite_writer(Cast)
def write_cast(op: Cast, ctx) -> OpSpec:
    source = ctx.input_dtype(0)
    if source == DatumType.F16 and op.to == DatumType.F32:
        return OpSpec("DEQUANTIZE", ("DequantizeOptions", {}))
    return OpSpec("CAST", ("CastOptions", {"InDataType": ctx.tensor_type(source),
                                           "OutDataType": ctx.tensor_type(op.to)}))
