"""ONNX element types, tensors and value types as tractile datum types, arrays and facts."""
from __future__ import annotations

import re

import numpy as np

from ...datum import DatumType
from ...dim import DimensionTooComplex, symbol
from ...dim_parse import MAX_DIM_TEXT, parse_dim
from ...errors import ModelFormatError, TractileError
from ...fact import OPTIONAL, SEQUENCE, InferenceFact, ShapeFactoid

ONNX_TYPES = {
    1: DatumType.F32, 2: DatumType.U8, 3: DatumType.I8, 4: DatumType.U16, 5: DatumType.I16,
    6: DatumType.I32, 7: DatumType.I64, 8: DatumType.STRING, 9: DatumType.BOOL, 10: DatumType.F16,
    11: DatumType.F64, 12: DatumType.U32, 13: DatumType.U64, 14: DatumType.C64, 15: DatumType.C128,
    16: DatumType.BF16, 17: DatumType.F8E4M3FN, 18: DatumType.F8E4M3FNUZ, 19: DatumType.F8E5M2,
    20: DatumType.F8E5M2FNUZ, 21: DatumType.U4, 22: DatumType.I4, 23: DatumType.F4E2M1,
    24: DatumType.F8E8M0, 25: DatumType.U2, 26: DatumType.I2, 27: DatumType.F6E2M3, 28: DatumType.F6E3M2,
}
DATUM_TO_ONNX = {v: k for k, v in ONNX_TYPES.items()}


def _onnx():
    try:
        import onnx
    except ImportError as error:
        raise TractileError("reading ONNX models needs the onnx package: pip install 'tractile[onnx]'") from error
    return onnx


def datum_type(elem_type: int, where: str) -> DatumType:
    try:
        return ONNX_TYPES[elem_type]
    except KeyError:
        raise ModelFormatError(f"{where}: unknown ONNX element type {elem_type}") from None


def tensor_to_array(tensor, where: str) -> np.ndarray:
    """A TensorProto as a NumPy array (ml_dtypes for the small float types, str for strings)."""
    from onnx import numpy_helper

    datum_type(tensor.data_type, where)
    try:
        array = numpy_helper.to_array(tensor)
    except Exception as error:
        raise ModelFormatError(f"{where}: cannot read tensor {tensor.name!r}: {error}") from None
    if tensor.data_type == 8:
        array = np.vectorize(lambda v: v.decode("utf-8") if isinstance(v, bytes) else v, otypes=[object])(array) \
            if array.size else array.astype(object)
    return np.asarray(array)


_SYMBOL_CHARS = re.compile(r"[^A-Za-z0-9_]")


def symbol_name(param: str) -> str:
    name = _SYMBOL_CHARS.sub("_", param) or "_"
    return name if not name[0].isdigit() else "_" + name


def dim_from_param(param: str):
    """A dim_param as a symbolic dim: an expression such as ``"T - 1"`` when it parses as one,
    else a symbol named after the text (``"batch size"`` becomes ``batch_size``)."""
    if isinstance(param, bytes):  # not valid UTF-8: protobuf hands the raw bytes over
        param = param.decode("utf-8", errors="replace")
    try:
        return parse_dim(param)
    except DimensionTooComplex:
        raise
    except TractileError:
        if len(param) > MAX_DIM_TEXT:
            raise DimensionTooComplex(f"a dim_param of {len(param)} characters (the limit is {MAX_DIM_TEXT})") from None
        return symbol(symbol_name(param))


def fact_from_type(type_proto, where: str, unknown_dims_as_symbols: str | None = None,
                   named_dims: bool = True) -> InferenceFact:
    """An InferenceFact from a ValueInfo's TypeProto.

    Sequence and optional types give container facts; the dims of what they hold are
    known only when fixed (a named dim may differ from one item to the next). With
    ``named_dims`` False, named dims are left unknown too. Other types give an empty fact.
    """
    which = type_proto.WhichOneof("value")
    if which in ("sequence_type", "optional_type"):
        inner = getattr(type_proto, which).elem_type
        element = fact_from_type(inner, where, named_dims=False) if inner.WhichOneof("value") else InferenceFact()
        return InferenceFact.container(SEQUENCE if which == "sequence_type" else OPTIONAL, element)
    if not type_proto.HasField("tensor_type"):
        return InferenceFact()
    tensor_type = type_proto.tensor_type
    dtype = datum_type(tensor_type.elem_type, where) if tensor_type.elem_type else None
    if not tensor_type.HasField("shape"):
        return InferenceFact(dtype)
    dims = []
    for axis, dim in enumerate(tensor_type.shape.dim):
        if dim.HasField("dim_value") and dim.dim_value >= 0:
            dims.append(int(dim.dim_value))
        elif dim.HasField("dim_param") and dim.dim_param and named_dims:
            try:
                dims.append(dim_from_param(dim.dim_param))
            except DimensionTooComplex as error:
                raise DimensionTooComplex(f"{where}, axis {axis}: {error}") from None
        elif unknown_dims_as_symbols is not None:
            dims.append(symbol(symbol_name(f"{unknown_dims_as_symbols}_{axis}")))
        else:
            dims.append(None)
    return InferenceFact(dtype, ShapeFactoid(tuple(dims), False))
