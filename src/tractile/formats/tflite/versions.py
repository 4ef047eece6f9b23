"""The operator version the writer gives each builtin: the lowest one whose kernel accepts the
operator's tensor types and options, following the rules of TFLite's converter
(``tensorflow/lite/tools/versioning/op_version.cc``), so any TFLite runtime that has the
kernel for those types loads the file.

A :class:`Signature` describes an operator as written: its builtin name, the datum type and
rank of each input and output tensor (None for an absent optional input), and its options.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...datum import DatumType

I8, U8, I16, I32, I64, F32, BOOL = (DatumType.I8, DatumType.U8, DatumType.I16, DatumType.I32, DatumType.I64,
                                    DatumType.F32, DatumType.BOOL)


@dataclass
class Signature:
    opcode: str
    inputs: list = field(default_factory=list)  # (dtype, rank) or None
    outputs: list = field(default_factory=list)  # (dtype, rank)
    options: dict = field(default_factory=dict)

    def input(self, index: int):
        return self.inputs[index][0] if index < len(self.inputs) and self.inputs[index] is not None else None

    def rank(self, index: int) -> int:
        return self.inputs[index][1] if index < len(self.inputs) and self.inputs[index] is not None else 0

    def output(self, index: int = 0):
        return self.outputs[index][0] if index < len(self.outputs) else None

    def broadcasts_5d(self) -> bool:
        ranks = [item[1] for item in self.inputs[:2] if item is not None]
        return len(ranks) == 2 and ranks[0] != ranks[1] and max(ranks) > 4


#: builtins whose version is 2 for int8 (and uint8 where listed) input 0, else 1
_INT8_IS_2 = {"SPACE_TO_DEPTH", "SPLIT_V", "SUM", "LOG_SOFTMAX", "GREATER", "LESS_EQUAL", "SQUARED_DIFFERENCE",
              "DEPTH_TO_SPACE", "AVERAGE_POOL_2D", "MAX_POOL_2D", "LOGISTIC", "TANH"}
#: builtins whose version is 3 for int16 and 2 for int8 input 0, else 1
_INT16_IS_3 = {"SOFTMAX", "MEAN", "MIRROR_PAD", "REDUCE_MAX", "REDUCE_MIN", "RELU6", "RSQRT", "CONCATENATION",
               "LESS", "GREATER_EQUAL"}


def _by_type(sig: Signature, table: list, default: int = 1, slot: int = 0) -> int:
    dtype = sig.input(slot)
    for types, version in table:
        if dtype in types:
            return version
    return default


#: the highest versions LiteRT's reference op resolver (``BUILTIN_REF``) registers where they are
#: below the converter's rule (their kernels take every type of the higher versions)
_REFERENCE_MAX = {"DEPTH_TO_SPACE": 1, "TILE": 2}


def operator_version(sig: Signature) -> int:
    """The version to write for an operator of this signature."""
    return min(_rule_version(sig), _REFERENCE_MAX.get(sig.opcode, 99))


def _rule_version(sig: Signature) -> int:
    name, x = sig.opcode, sig.input(0)
    rule = _RULES.get(name)
    if rule is not None:
        return rule(sig)
    if name in _INT16_IS_3:
        return 3 if x == I16 else 2 if x == I8 else 1
    if name in _INT8_IS_2:
        if name in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "LOGISTIC", "TANH") and x == I16:
            return 3
        return 2 if x == I8 else 1
    return 1


def _transpose(sig):
    if sig.rank(0) > 5:
        return 6
    if sig.input(0) == I16:
        return 5
    if sig.rank(0) > 4:
        return 4
    return _by_type(sig, [((BOOL,), 3), ((I8,), 2)])


def _strided_slice(sig):
    options = sig.options
    if options.get("Offset"):
        return 8
    if options.get("EllipsisMask") or options.get("NewAxisMask"):
        return 6
    if sig.rank(0) > 4:
        return 4
    return _by_type(sig, [((BOOL,), 3), ((I8,), 2)])


def _slice(sig):
    if sig.rank(0) > 4:
        return 5
    return _by_type(sig, [((I16,), 4), ((I8,), 2)])


def _pad(sig):
    if sig.rank(0) > 4:
        return 4
    return _by_type(sig, [((I16,), 3), ((I8,), 2)])


def _gather(sig):
    if sig.input(1) == I16:
        return 6
    if sig.options.get("BatchDims"):
        return 5
    return _by_type(sig, [((I16,), 4), ((BOOL,), 3), ((I8,), 2)])


def _gather_nd(sig):
    if sig.input(0) == BOOL:
        return 5
    if sig.input(1) == I16:
        return 4
    return 3 if sig.input(0) == I16 else 1


def _space_batch(sig):
    if sig.input(0) == I16:
        return 4
    if sig.rank(0) != 4:
        return 3
    return 2 if sig.input(0) == I8 else 1


def _resize(sig):
    if sig.input(0) == I16:
        return 4
    half, align = sig.options.get("HalfPixelCenters"), sig.options.get("AlignCorners")
    if half or (align and sig.opcode == "RESIZE_NEAREST_NEIGHBOR"):
        return 3
    return 2 if sig.input(0) == I8 else 1


def _fill(sig):
    return _by_type(sig, [((I8, I16), 3), ((BOOL,), 2)], slot=1)


def _add(sig):
    x = sig.input(0)
    if x == I16 and sig.output() == I16 and not sig.options.get("PotScaleInt16", True):
        return 3
    return 4 if x == I64 else 2 if x == I8 else 1


def _sub(sig):
    x = sig.input(0)
    if x == I16 and sig.output() == I16 and not sig.options.get("PotScaleInt16", True):
        return 5
    if x == I64:
        return 4
    if sig.broadcasts_5d():
        return 3
    return 2 if x == I8 else 1


def _mul(sig):
    return _by_type(sig, [((I16,), 4), ((I64,), 5), ((I8,), 2)])


def _min_max(sig):
    if sig.input(0) == I16 and sig.output() == I16:
        return 4
    if sig.broadcasts_5d():
        return 3
    return 2 if sig.input(0) == I8 else 1


def _conv(sig):
    x, w = sig.input(0), sig.input(1)
    if x == I16 and w == I16:
        return 4
    if x == I8 and w == I8:
        return 3
    return 2 if x == F32 and w == I8 else 1


def _depthwise(sig):
    x, w = sig.input(0), sig.input(1)
    if x == I16 and w == I16:
        return 5
    if x == F32 and w == I8:
        return 4
    if x == I8 and w == I8:
        return 3
    if sig.options.get("DilationWFactor", 1) != 1 or sig.options.get("DilationHFactor", 1) != 1:
        return 2
    return 1


def _fully_connected(sig):
    x, w = sig.input(0), sig.input(1)
    if x == I16 and w == I16:
        return 7
    if len(sig.inputs) == 2 or sig.input(2) is None:
        return 6
    if sig.options.get("KeepNumDims"):
        return 5
    if x == I8 and w == I8:
        return 4
    if x == F32 and w == I8:
        return 9 if sig.options.get("AsymmetricQuantizeInputs") else 3
    return 1


_RULES = {
    "TRANSPOSE": _transpose,
    "STRIDED_SLICE": _strided_slice,
    "SLICE": _slice,
    "PAD": _pad,
    "PADV2": _pad,
    "GATHER": _gather,
    "GATHER_ND": _gather_nd,
    "SPACE_TO_BATCH_ND": _space_batch,
    "BATCH_TO_SPACE_ND": _space_batch,
    "RESIZE_BILINEAR": _resize,
    "RESIZE_NEAREST_NEIGHBOR": _resize,
    "FILL": _fill,
    "ADD": _add,
    "SUB": _sub,
    "MUL": _mul,
    "MAXIMUM": _min_max,
    "MINIMUM": _min_max,
    "DIV": lambda sig: 2 if sig.broadcasts_5d() else 1,
    "CONV_2D": _conv,
    "DEPTHWISE_CONV_2D": _depthwise,
    "FULLY_CONNECTED": _fully_connected,
    "SPLIT": lambda sig: _by_type(sig, [((I16,), 4), ((I32,), 3), ((I8,), 2)], slot=1),
    "UNPACK": lambda sig: _by_type(sig, [((I8, U8), 2), ((BOOL,), 3), ((I16,), 4)]),
    "PACK": lambda sig: _by_type(sig, [((I8,), 2), ((I16,), 3)]),
    "TILE": lambda sig: _by_type(sig, [((I8,), 3)]),
    "REVERSE_V2": lambda sig: _by_type(sig, [((I8,), 3), ((BOOL,), 2)]),
    "ARG_MAX": lambda sig: _by_type(sig, [((BOOL,), 3), ((I8,), 2)]),
    "ARG_MIN": lambda sig: _by_type(sig, [((BOOL,), 3), ((I8,), 2)]),
    "BROADCAST_TO": lambda sig: _by_type(sig, [((I8, I16), 3)], default=2),
    "RELU": lambda sig: _by_type(sig, [((I16,), 3), ((I8, U8), 2)]),
    "EQUAL": lambda sig: _by_type(sig, [((I16,), 4), ((I8,), 2)]),
    "NOT_EQUAL": lambda sig: _by_type(sig, [((I8,), 2)]),
    "LEAKY_RELU": lambda sig: _by_type(sig, [((I16,), 2)]),
    "RANGE": lambda sig: _by_type(sig, [((I64,), 2)]),
    "EXP": lambda sig: _by_type(sig, [((I8, I16), 2)]),
    "LOG": lambda sig: _by_type(sig, [((I8, I16), 2)]),
    "REDUCE_PROD": lambda sig: _by_type(sig, [((I8, I16), 2)]),
    "SELECT": lambda sig: _by_type(sig, [((I8,), 2)]),
    "BATCH_MATMUL": lambda sig: _by_type(sig, [((I16,), 3), ((I8,), 2)]),
    "ABS": lambda sig: _by_type(sig, [((I32,), 5), ((I16,), 3), ((I8, U8), 2)]),
    "L2_NORMALIZATION": lambda sig: 2 if sig.output() == I8 else 1,
    "QUANTIZE": lambda sig: 2 if sig.output() == I16 else 1,
    "DEQUANTIZE": lambda sig: _by_type(sig, [((I16,), 3), ((I8,), 2)]),
    "CAST": lambda sig: 3 if I8 in (sig.input(0), sig.output()) else 1,
    "GELU": lambda sig: _by_type(sig, [((I8, U8), 2)]),
}
