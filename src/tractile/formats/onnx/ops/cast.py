"""ONNX Constant, Cast and CastLike."""
from __future__ import annotations

import numpy as np

from ....ops.cast import Cast
from ....ops.io import Const
from ..loader import datum_type
from ..registry import OnnxNode, onnx_op


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


@onnx_op("Cast", since=1)
def cast(node: OnnxNode):
    to = node.attr("to")
    if isinstance(to, (bytes, str)):
        raise node.error(f"Cast to a type name ({to!r}) is not supported; expected an element type")
    return Cast(datum_type(int(to), repr(node)))
