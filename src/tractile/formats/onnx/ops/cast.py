"""ONNX Constant, Cast, CastLike and BitCast."""
from __future__ import annotations

import numpy as np

from ....ops.cast import ROUND_MODES, BitCast, Cast, CastLike
from ....ops.io import Const
from ..registry import OnnxNode, onnx_op
from ..types import datum_type


@onnx_op("Constant", since=1)
def constant(node: OnnxNode):
    for name in ("value", "sparse_value"):
        if node.has(name):
            return Const(np.asarray(node.tensor(name)))
    scalars = {"value_float": np.float32, "value_int": np.int64, "value_string": object}
    for name, dtype in scalars.items():
        if node.has(name):
            value = node.attr(name)
            return Const(np.asarray(value.decode() if isinstance(value, bytes) else value, dtype=dtype))
    lists = {"value_floats": np.float32, "value_ints": np.int64, "value_strings": object}
    for name, dtype in lists.items():
        if node.has(name):
            values = [v.decode() if isinstance(v, bytes) else v for v in node.attr(name)]
            return Const(np.asarray(values, dtype=dtype))
    raise node.error("Constant has no value attribute")


def _target(node: OnnxNode):
    to = node.attr("to")
    if isinstance(to, (bytes, str)):
        from onnx import TensorProto

        name = to.decode() if isinstance(to, bytes) else to
        try:
            to = TensorProto.DataType.Value(name.upper())
        except ValueError:
            raise node.error(f"unknown element type name {name!r} in 'to'") from None
    return datum_type(int(to), repr(node))


def _rounding(node: OnnxNode) -> dict:
    mode = node.string("round_mode", "up")
    if mode not in ROUND_MODES:
        raise node.error(f"round_mode must be one of {', '.join(ROUND_MODES)}, got {mode!r}")
    return {"saturate": bool(node.int("saturate", 1)), "round_mode": mode}


onnx_op("Cast", since=1)(lambda node: Cast(_target(node)))
onnx_op("Cast", since=19)(lambda node: Cast(_target(node), **_rounding(node)))
onnx_op("CastLike", since=15)(lambda node: CastLike(**_rounding(node)))
onnx_op("BitCast", since=26)(lambda node: BitCast(_target(node)))
