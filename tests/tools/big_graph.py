"""A generated typed model of more than 3000 nodes in two levels of name scopes."""
from __future__ import annotations

import numpy as np

from tractile import TypedModel, parse_fact
from tractile.ops.activations import Relu
from tractile.ops.binary import Add
from tractile.ops.matmul import MatMul


def big_scoped_model(blocks: int = 40, layers: int = 26, width: int = 4) -> TypedModel:
    """``blocks`` blocks ``blockK`` of ``layers`` scopes ``blockK/layerJ`` each holding
    MatMul, Add and Relu nodes; every block's output is added to its input (a residual edge)."""
    model = TypedModel()
    current = model.add_source("x", parse_fact(f"N,{width},f32").to_typed())
    weight = model.add_const("shared/w", np.eye(width, dtype=np.float32))
    bias = model.add_const("shared/b", np.zeros(width, dtype=np.float32))
    for block in range(blocks):
        start = current
        for layer in range(layers):
            scope = f"block{block}/layer{layer}"
            current = model.wire_node(f"{scope}/matmul", MatMul(), [current, weight])[0]
            current = model.wire_node(f"{scope}/bias", Add(), [current, bias])[0]
            current = model.wire_node(f"{scope}/relu", Relu(), [current])[0]
        current = model.wire_node(f"block{block}/residual", Add(), [start, current])[0]
    model.outputs = [current]
    model.set_output_names(["y"])
    return model
