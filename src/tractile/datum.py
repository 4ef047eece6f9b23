"""Element types (:class:`DatumType`) and their NumPy dtypes.

The exotic float and small-int types come from ``ml_dtypes`` when it is installed
(it is part of the ``onnx`` extra); without it they exist but cannot hold data.
"""
from __future__ import annotations

import enum

import numpy as np

from .errors import TractileError

_ML_DTYPE_NAMES = {
    "bf16": "bfloat16",
    "f8e4m3fn": "float8_e4m3fn",
    "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e5m2": "float8_e5m2",
    "f8e5m2fnuz": "float8_e5m2fnuz",
    "f8e8m0": "float8_e8m0fnu",
    "f4e2m1": "float4_e2m1fn",
    "f6e2m3": "float6_e2m3fn",
    "f6e3m2": "float6_e3m2fn",
    "i4": "int4",
    "u4": "uint4",
    "i2": "int2",
    "u2": "uint2",
}

_NUMPY_NAMES = {
    "bool": "bool", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "f16": "float16", "f32": "float32", "f64": "float64",
    "c64": "complex64", "c128": "complex128", "string": "object",
}


class DatumType(enum.Enum):
    """The element type of a tensor. ``DatumType.F32.np`` is ``np.dtype('float32')``."""

    BOOL = "bool"
    U8 = "u8"
    U16 = "u16"
    U32 = "u32"
    U64 = "u64"
    I8 = "i8"
    I16 = "i16"
    I32 = "i32"
    I64 = "i64"
    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    F64 = "f64"
    C64 = "c64"
    C128 = "c128"
    STRING = "string"
    F8E4M3FN = "f8e4m3fn"
    F8E4M3FNUZ = "f8e4m3fnuz"
    F8E5M2 = "f8e5m2"
    F8E5M2FNUZ = "f8e5m2fnuz"
    F8E8M0 = "f8e8m0"
    F4E2M1 = "f4e2m1"
    F6E2M3 = "f6e2m3"
    F6E3M2 = "f6e3m2"
    I4 = "i4"
    U4 = "u4"
    I2 = "i2"
    U2 = "u2"

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"DatumType.{self.name}"

    @property
    def np(self) -> np.dtype:
        """The NumPy dtype holding values of this type."""
        return _np_dtype(self)

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_integer(self) -> bool:
        return self in _SIGNED or self in _UNSIGNED

    @property
    def is_signed(self) -> bool:
        return self in _SIGNED or self in _FLOATS

    @property
    def is_number(self) -> bool:
        return self.is_float or self.is_integer or self in (DatumType.C64, DatumType.C128)

    @staticmethod
    def from_numpy(dtype) -> DatumType:
        """The DatumType of a NumPy dtype (or of an array)."""
        dtype = np.dtype(getattr(dtype, "dtype", dtype))
        found = _BY_NUMPY.get(dtype)
        if found is None:
            for datum in DatumType:
                try:
                    if datum.np == dtype:
                        _BY_NUMPY[dtype] = datum
                        return datum
                except TractileError:
                    continue
            if dtype.kind in "US":
                return DatumType.STRING
            raise TractileError(f"no tractile datum type for NumPy dtype {dtype}")
        return found

    @staticmethod
    def parse(text: str) -> DatumType:
        """Parse ``f32``, ``float32``, ``i64``, ``int8``...; raise a clear error otherwise."""
        text = text.strip().lower()
        try:
            return DatumType(text)
        except ValueError:
            pass
        for datum, name in {**_NUMPY_NAMES, **_ML_DTYPE_NAMES}.items():
            if text == name or (text == "float" and datum == "f32"):
                return DatumType(datum)
        raise TractileError(
            f"unknown datum type {text!r}; expected one of: " + ", ".join(d.value for d in DatumType)
        )


_FLOATS = {DatumType.F16, DatumType.BF16, DatumType.F32, DatumType.F64, DatumType.F8E4M3FN,
           DatumType.F8E4M3FNUZ, DatumType.F8E5M2, DatumType.F8E5M2FNUZ, DatumType.F8E8M0,
           DatumType.F4E2M1, DatumType.F6E2M3, DatumType.F6E3M2}
_SIGNED = {DatumType.I8, DatumType.I16, DatumType.I32, DatumType.I64, DatumType.I4, DatumType.I2}
_UNSIGNED = {DatumType.U8, DatumType.U16, DatumType.U32, DatumType.U64, DatumType.U4, DatumType.U2}

_DTYPES: dict[DatumType, np.dtype] = {}
_BY_NUMPY: dict[np.dtype, DatumType] = {}


def _np_dtype(datum: DatumType) -> np.dtype:
    found = _DTYPES.get(datum)
    if found is not None:
        return found
    if datum.value in _NUMPY_NAMES:
        found = np.dtype(_NUMPY_NAMES[datum.value])
    else:
        try:
            import ml_dtypes
        except ImportError as error:
            raise TractileError(
                f"datum type {datum.value} needs the ml_dtypes package: pip install 'tractile[onnx]'"
            ) from error
        found = np.dtype(getattr(ml_dtypes, _ML_DTYPE_NAMES[datum.value]))
    _DTYPES[datum] = found
    if datum != DatumType.STRING:
        _BY_NUMPY.setdefault(found, datum)
    return found


for _datum in _NUMPY_NAMES:
    _np_dtype(DatumType(_datum))
