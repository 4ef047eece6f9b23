"""TensorFlow's protobuf messages (through ``tensorboard.compat.proto``, never TensorFlow itself),
data types, tensors and shapes as tractile datum types, arrays and facts."""
from __future__ import annotations

import numpy as np

from ...datum import DatumType
from ...errors import ModelFormatError, TractileError

#: TensorFlow's DataType enum (types.proto) as datum types; the ``_REF`` variants are the value + 100
TF_TYPES = {
    1: DatumType.F32, 2: DatumType.F64, 3: DatumType.I32, 4: DatumType.U8, 5: DatumType.I16,
    6: DatumType.I8, 7: DatumType.STRING, 8: DatumType.C64, 9: DatumType.I64, 10: DatumType.BOOL,
    14: DatumType.BF16, 17: DatumType.U16, 18: DatumType.C128, 19: DatumType.F16, 22: DatumType.U32,
    23: DatumType.U64,
}
TF_TYPE_NAMES = {
    11: "DT_QINT8", 12: "DT_QUINT8", 13: "DT_QINT32", 15: "DT_QINT16", 16: "DT_QUINT16",
    20: "DT_RESOURCE", 21: "DT_VARIANT",
}
DT_RESOURCE, DT_VARIANT = 20, 21


def protos():
    """The ``tensorboard.compat.proto`` package (TensorFlow's message definitions)."""
    try:
        from tensorboard.compat import proto
        from tensorboard.compat.proto import (  # noqa: F401 - loads the modules onto the package
            attr_value_pb2,
            function_pb2,
            graph_pb2,
            meta_graph_pb2,
            saved_object_graph_pb2,
            tensor_pb2,
            tensor_shape_pb2,
        )
    except ImportError as error:
        raise TractileError("reading TensorFlow models needs the tensorboard package (TensorFlow's message "
                            "definitions, without TensorFlow): pip install 'tractile[tf]'") from error
    return proto


def datum_type(tf_type: int, where: str) -> DatumType:
    """The datum type of a TensorFlow DataType; ModelFormatError naming ``where`` if it has none."""
    base = tf_type - 100 if tf_type > 100 else tf_type
    found = TF_TYPES.get(base)
    if found is None:
        name = TF_TYPE_NAMES.get(base, f"DataType {tf_type}")
        raise ModelFormatError(f"{where}: tractile has no datum type for TensorFlow's {name}")
    return found


def shape_dims(shape_proto) -> tuple[int, ...] | None:
    """A TensorShapeProto as a tuple (-1 for unknown dims), None if the rank is unknown."""
    if shape_proto.unknown_rank:
        return None
    return tuple(int(d.size) for d in shape_proto.dim)


_FIELDS = {
    DatumType.F32: "float_val", DatumType.F64: "double_val", DatumType.I32: "int_val", DatumType.I16: "int_val",
    DatumType.I8: "int_val", DatumType.U8: "int_val", DatumType.U16: "int_val", DatumType.I64: "int64_val",
    DatumType.BOOL: "bool_val", DatumType.U32: "uint32_val", DatumType.U64: "uint64_val",
    DatumType.C64: "scomplex_val", DatumType.C128: "dcomplex_val", DatumType.F16: "half_val",
    DatumType.BF16: "half_val", DatumType.STRING: "string_val",
}


def tensor_to_array(tensor, where: str) -> np.ndarray:
    """A TensorProto as a NumPy array: raw ``tensor_content`` or the typed value fields (a
    shorter list is completed with its last value, as TensorFlow does)."""
    dtype = datum_type(tensor.dtype, where)
    dims = shape_dims(tensor.tensor_shape)
    if dims is None or any(d < 0 for d in dims):
        raise ModelFormatError(f"{where}: a constant tensor of unknown shape {dims}")
    count = int(np.prod(dims, dtype=np.int64))
    np_dtype = dtype.np
    if dtype != DatumType.STRING and tensor.tensor_content:
        content = tensor.tensor_content
        if len(content) != count * np_dtype.itemsize:
            raise ModelFormatError(f"{where}: {len(content)} bytes of content for a {dtype.value} tensor of "
                                   f"shape {list(dims)}")
        return np.frombuffer(content, dtype=np_dtype.newbyteorder("<")).astype(np_dtype).reshape(dims)
    values = list(getattr(tensor, _FIELDS[dtype]))
    if dtype == DatumType.STRING:
        array = np.array([v.decode("utf-8", errors="replace") for v in values], dtype=object)
    elif dtype in (DatumType.F16, DatumType.BF16):
        array = np.asarray(values, dtype=np.uint16).view(np_dtype)
    elif dtype in (DatumType.C64, DatumType.C128):
        pairs = np.asarray(values, dtype=np.float64).reshape(-1, 2)
        array = (pairs[:, 0] + 1j * pairs[:, 1]).astype(np_dtype)
    else:
        array = np.asarray(values).astype(np_dtype)
    if array.size == count:
        return array.reshape(dims)
    if array.size == 0:
        return np.zeros(dims, dtype=np_dtype) if dtype != DatumType.STRING else np.full(dims, "", dtype=object)
    if array.size > count:
        raise ModelFormatError(f"{where}: {array.size} values for a tensor of shape {list(dims)}")
    filled = np.concatenate([array, np.repeat(array[-1:], count - array.size)])
    return filled.reshape(dims)


def read_graph_def(source, where: str):
    """A GraphDef from a path or bytes; ModelFormatError when the content is not one."""
    graph_pb2 = protos().graph_pb2
    data = bytes(source) if isinstance(source, (bytes, bytearray, memoryview)) else _read(source)
    graph_def = graph_pb2.GraphDef()
    try:
        graph_def.ParseFromString(data)
    except Exception as error:
        raise ModelFormatError(f"{where}: not a TensorFlow GraphDef ({type(error).__name__}: {error})") from None
    if not graph_def.node:
        raise ModelFormatError(f"{where}: parses as a GraphDef with no nodes: not a TensorFlow graph")
    return graph_def


def _read(path) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise ModelFormatError(f"cannot read {path}: {error}") from None
