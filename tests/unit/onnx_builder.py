"""Tiny helpers to write ONNX models in tests."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

TYPES = {"f32": TensorProto.FLOAT, "i64": TensorProto.INT64, "f16": TensorProto.FLOAT16,
         "i8": TensorProto.INT8, "u8": TensorProto.UINT8, "i32": TensorProto.INT32, "bool": TensorProto.BOOL}


def value(name: str, dtype: str | None = "f32", shape=None):
    """A ValueInfo; ``shape`` None leaves the shape out, entries may be ints, names or None."""
    elem = TYPES[dtype] if dtype else TensorProto.UNDEFINED
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, initializers=None, opset=17):
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()]
    graph = helper.make_graph(nodes, "test", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def node(op, inputs, outputs, name=None, **attrs):
    return helper.make_node(op, inputs, outputs, name=name or outputs[0], **attrs)
