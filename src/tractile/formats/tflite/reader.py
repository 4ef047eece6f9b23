"""Read a .tflite FlatBuffer into plain Python structures, validating as it goes.

Everything the file says is checked before use: vector lengths against the file size,
tensor and buffer indices against their tables, constant sizes against their shapes,
quantization against the tensor's rank. A truncated or corrupted file gives a
:class:`~tractile.errors.ModelFormatError` naming where, never a crash or a hang.
"""
from __future__ import annotations

import importlib
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...datum import DatumType
from ...errors import ModelFormatError, TractileError
from ...fact import QParams

#: what a damaged FlatBuffer makes the generated accessors raise
ACCESS_ERRORS = (IndexError, struct.error, ValueError, TypeError, UnicodeDecodeError, OverflowError,
                 AttributeError, KeyError, MemoryError, RecursionError)


def schema(name: str):
    """A class of the ``tflite`` package's generated schema (``schema("Model")``)."""
    try:
        module = importlib.import_module(f"tflite.{name}")
    except ImportError as error:
        if error.name and error.name.startswith("tflite"):
            raise TractileError("reading and writing TFLite models needs the tflite package: "
                                "pip install 'tractile[tflite]'") from None
        raise
    return getattr(module, name)


def _enum_names(name: str) -> dict[int, str]:
    return {v: k for k, v in vars(schema(name)).items() if not k.startswith("_") and isinstance(v, int)}


_TENSOR_TYPES = {
    "FLOAT32": DatumType.F32, "FLOAT16": DatumType.F16, "INT32": DatumType.I32, "UINT8": DatumType.U8,
    "INT64": DatumType.I64, "STRING": DatumType.STRING, "BOOL": DatumType.BOOL, "INT16": DatumType.I16,
    "COMPLEX64": DatumType.C64, "INT8": DatumType.I8, "FLOAT64": DatumType.F64, "COMPLEX128": DatumType.C128,
    "UINT64": DatumType.U64, "UINT32": DatumType.U32, "UINT16": DatumType.U16, "INT4": DatumType.I4,
    "BFLOAT16": DatumType.BF16,
}


def tensor_type_names() -> dict[int, str]:
    return _enum_names("TensorType")


def builtin_names() -> dict[int, str]:
    return _enum_names("BuiltinOperator")


def datum_type_of(code: int, where: str) -> DatumType:
    name = tensor_type_names().get(code)
    if name is None:
        raise ModelFormatError(f"{where}: unknown tensor type code {code}")
    if name == "RESOURCE":
        return DatumType.I32  # resource variable handles are int32 ids here
    if name not in _TENSOR_TYPES:
        raise ModelFormatError(f"{where}: tensor type {name} is not supported")
    return _TENSOR_TYPES[name]


def tensor_type_code(dtype: DatumType) -> int:
    names = {v: k for k, v in _TENSOR_TYPES.items()}
    if dtype not in names:
        raise TractileError(f"datum type {dtype} has no TFLite tensor type")
    return {v: k for k, v in tensor_type_names().items()}[names[dtype]]


@dataclass
class TensorInfo:
    index: int
    name: str
    dtype: DatumType
    shape: tuple
    signature: tuple | None
    buffer: int
    quant: QParams | None
    is_variable: bool


@dataclass
class OperatorInfo:
    index: int
    opcode: str
    version: int
    custom_code: str | None
    inputs: list
    outputs: list
    intermediates: list
    options_type: int
    options: Any
    custom_options: bytes


@dataclass
class SubgraphInfo:
    index: int
    name: str
    tensors: list
    inputs: list
    outputs: list
    operators: list


@dataclass
class ModelInfo:
    version: int
    description: str
    subgraphs: list
    buffers: list
    data: bytes = field(repr=False, default=b"")


def guard(where: str, action: Callable):
    """Run an accessor, turning what a damaged file makes it raise into a ModelFormatError."""
    try:
        return action()
    except TractileError:
        raise
    except ACCESS_ERRORS as error:
        raise ModelFormatError(f"{where}: the file is damaged or truncated ({type(error).__name__}: {error})") \
            from None


def _length(where: str, size: int, count: int, item_bytes: int) -> int:
    if count < 0 or count * item_bytes > size:
        raise ModelFormatError(f"{where}: a vector of {count} entries does not fit in a {size}-byte file")
    return count


def _ints(where: str, size: int, length: Callable, getter: Callable) -> list[int]:
    count = _length(where, size, guard(where, length), 4)
    return [int(guard(where, lambda i=i: getter(i))) for i in range(count)]


def read_model(data: bytes) -> ModelInfo:
    """Parse and validate a .tflite file's bytes."""
    data = bytes(data)
    size = len(data)
    if size < 8:
        raise ModelFormatError(f"not a TFLite file: only {size} bytes")
    if data[4:8] != b"TFL3":
        raise ModelFormatError("not a TFLite file: the FlatBuffer identifier is not 'TFL3'")
    model = guard("model header", lambda: schema("Model").GetRootAs(data, 0))
    version = int(guard("model version", model.Version))
    description = guard("model description", model.Description) or b""
    opcodes = _read_opcodes(model, size)
    buffers = _read_buffers(model, data)
    count = _length("subgraphs", size, guard("subgraphs", model.SubgraphsLength), 4)
    if count == 0:
        raise ModelFormatError("the model has no subgraph")
    subgraphs = [_read_subgraph(model, index, opcodes, buffers, size) for index in range(count)]
    return ModelInfo(version, description.decode("utf-8", "replace"), subgraphs, buffers, data)


def _read_opcodes(model, size: int) -> list[tuple[str, int, str | None]]:
    names = builtin_names()
    result = []
    count = _length("operator codes", size, guard("operator codes", model.OperatorCodesLength), 4)
    for index in range(count):
        where = f"operator code {index}"
        code = guard(where, lambda index=index: model.OperatorCodes(index))
        builtin = max(int(guard(where, code.BuiltinCode)), int(guard(where, code.DeprecatedBuiltinCode)))
        if builtin not in names:
            raise ModelFormatError(f"{where}: unknown builtin operator code {builtin}")
        custom = guard(where, code.CustomCode)
        version = int(guard(where, code.Version))
        result.append((names[builtin], version, custom.decode("utf-8", "replace") if custom else None))
    return result


def _read_buffers(model, data: bytes) -> list:
    size = len(data)
    count = _length("buffers", size, guard("buffers", model.BuffersLength), 4)
    buffers = []
    for index in range(count):
        where = f"buffer {index}"
        buffer = guard(where, lambda index=index: model.Buffers(index))
        offset = int(guard(where, buffer.Offset))
        if offset > 1:
            length = int(guard(where, buffer.Size))
            if offset + length > size:
                raise ModelFormatError(f"{where}: data at offset {offset} of {length} bytes is past the end "
                                       f"of the {size}-byte file")
            buffers.append(memoryview(data)[offset:offset + length])
            continue
        length = _length(where, size, int(guard(where, buffer.DataLength)), 1)
        if length == 0:
            buffers.append(None)
            continue
        array = guard(where, buffer.DataAsNumpy)
        buffers.append(memoryview(np.ascontiguousarray(array).tobytes()))
    return buffers


def _read_quantization(tensor, where: str, rank: int) -> QParams | None:
    quant = guard(where, tensor.Quantization)
    if quant is None:
        return None
    size_scale = int(guard(where, quant.ScaleLength))
    if size_scale == 0:
        return None
    scales = np.asarray(guard(where, quant.ScaleAsNumpy), dtype=np.float32).reshape(-1)
    zeros = guard(where, quant.ZeroPointAsNumpy)
    zeros = np.zeros(1, dtype=np.int64) if isinstance(zeros, int) else np.asarray(zeros, dtype=np.int64).reshape(-1)
    if zeros.size not in (1, scales.size):
        raise ModelFormatError(f"{where}: {scales.size} scales but {zeros.size} zero points")
    if zeros.size == 1 and scales.size > 1:
        zeros = np.repeat(zeros, scales.size)
    if not np.all(np.isfinite(scales)):
        raise ModelFormatError(f"{where}: quantization scales must be finite")
    if scales.size == 1:
        return QParams((float(scales[0]),), (int(zeros[0]),), None)
    axis = int(guard(where, quant.QuantizedDimension))
    if not 0 <= axis < rank:
        if rank == 1:
            # person_detect's bias tensors: TFLite Micro reads a 1-d tensor's channels along axis 0
            axis = 0
        else:
            raise ModelFormatError(f"{where}: quantized dimension {axis} is out of range for rank {rank}")
    return QParams(tuple(float(s) for s in scales), tuple(int(z) for z in zeros), axis)


def _read_tensor(subgraph, index: int, graph_index: int, buffers: list, size: int) -> TensorInfo:
    where = f"subgraph {graph_index} tensor {index}"
    tensor = guard(where, lambda: subgraph.Tensors(index))
    name = guard(where, tensor.Name)
    name = name.decode("utf-8", "replace") if name else f"tensor_{index}"
    where = f"{where} ({name!r})"
    dtype = datum_type_of(int(guard(where, tensor.Type)), where)
    shape = tuple(_ints(where, size, tensor.ShapeLength, tensor.Shape))
    signature = None
    if not guard(where, tensor.ShapeSignatureIsNone):
        signature = tuple(_ints(where, size, tensor.ShapeSignatureLength, tensor.ShapeSignature))
        if len(signature) != len(shape):
            signature = None
    if any(d < -1 for d in shape):
        raise ModelFormatError(f"{where}: negative dimension in shape {list(shape)}")
    buffer = int(guard(where, tensor.Buffer))
    if not 0 <= buffer < max(len(buffers), 1):
        raise ModelFormatError(f"{where}: buffer index {buffer} is out of range (the model has {len(buffers)})")
    quant = _read_quantization(tensor, where, len(shape))
    if quant is not None and quant.axis is not None and shape[quant.axis] not in (len(quant.scale), -1) \
            and len(shape) > 1:
        raise ModelFormatError(f"{where}: {len(quant.scale)} scales for {shape[quant.axis]} channels")
    if guard(where, tensor.Sparsity) is not None:
        raise ModelFormatError(f"{where}: sparse tensors are not supported")
    return TensorInfo(index, name, dtype, shape, signature, buffer, quant, bool(guard(where, tensor.IsVariable)))


def _read_subgraph(model, graph_index: int, opcodes, buffers, size: int) -> SubgraphInfo:
    where = f"subgraph {graph_index}"
    subgraph = guard(where, lambda: model.Subgraphs(graph_index))
    name = guard(where, subgraph.Name)
    count = _length(f"{where} tensors", size, guard(where, subgraph.TensorsLength), 4)
    tensors = [_read_tensor(subgraph, i, graph_index, buffers, size) for i in range(count)]
    inputs = _ints(f"{where} inputs", size, subgraph.InputsLength, subgraph.Inputs)
    outputs = _ints(f"{where} outputs", size, subgraph.OutputsLength, subgraph.Outputs)
    for kind, indices in (("input", inputs), ("output", outputs)):
        for tensor in indices:
            if not 0 <= tensor < count:
                raise ModelFormatError(f"{where}: {kind} tensor index {tensor} is out of range ({count} tensors)")
    op_count = _length(f"{where} operators", size, guard(where, subgraph.OperatorsLength), 4)
    operators = []
    for index in range(op_count):
        op_where = f"{where} operator {index}"
        operator = guard(op_where, lambda index=index: subgraph.Operators(index))
        opcode_index = int(guard(op_where, operator.OpcodeIndex))
        if not 0 <= opcode_index < len(opcodes):
            raise ModelFormatError(f"{op_where}: opcode index {opcode_index} is out of range ({len(opcodes)} codes)")
        opcode, version, custom = opcodes[opcode_index]
        op_inputs = _ints(op_where, size, operator.InputsLength, operator.Inputs)
        op_outputs = _ints(op_where, size, operator.OutputsLength, operator.Outputs)
        intermediates = _ints(op_where, size, operator.IntermediatesLength, operator.Intermediates)
        for tensor in op_inputs + op_outputs + intermediates:
            if not -1 <= tensor < count:
                raise ModelFormatError(f"{op_where} ({opcode}): tensor index {tensor} is out of range "
                                       f"({count} tensors)")
        options_type = int(guard(op_where, operator.BuiltinOptionsType))
        options = guard(op_where, operator.BuiltinOptions)
        custom_length = _length(op_where, size, int(guard(op_where, operator.CustomOptionsLength)), 1)
        custom_options = bytes(guard(op_where, operator.CustomOptionsAsNumpy).tobytes()) if custom_length else b""
        operators.append(OperatorInfo(index, opcode, version, custom, op_inputs, op_outputs, intermediates,
                                      options_type, options, custom_options))
    decoded = name.decode("utf-8", "replace") if name else ("main" if graph_index == 0 else f"subgraph_{graph_index}")
    return SubgraphInfo(graph_index, decoded, tensors, inputs, outputs, operators)


def buffer_value(info: ModelInfo, tensor: TensorInfo, where: str) -> np.ndarray | None:
    """The constant value of a tensor (None when its buffer is empty)."""
    data = info.buffers[tensor.buffer] if tensor.buffer < len(info.buffers) else None
    if data is None or tensor.buffer == 0:
        return None
    if tensor.dtype == DatumType.STRING:
        raise ModelFormatError(f"{where}: string constants are not supported")
    if tensor.dtype == DatumType.I4:
        raise ModelFormatError(f"{where}: packed int4 constants are not supported")
    shape = tuple(max(d, 0) for d in tensor.shape)
    dtype = tensor.dtype.np
    count = 1
    for dim in shape:
        count *= dim
    if count * dtype.itemsize != len(data):
        raise ModelFormatError(f"{where}: buffer {tensor.buffer} holds {len(data)} bytes, the tensor "
                               f"{list(tensor.shape)} {tensor.dtype} needs {count * dtype.itemsize}")
    value = np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    return value
