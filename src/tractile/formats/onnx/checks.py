"""Checks of an ONNX file's structure before it is translated: text fields, calls between
model-local functions, sparse tensors against their dims."""
from __future__ import annotations

import numpy as np

from ...errors import ModelFormatError
from .types import tensor_to_array


def subgraphs(node):
    """The graphs a node holds in its attributes (If branches, Loop and Scan bodies)."""
    from onnx import AttributeProto

    for attribute in node.attribute:
        if attribute.type == AttributeProto.GRAPH:
            yield attribute.g
        elif attribute.type == AttributeProto.GRAPHS:
            yield from attribute.graphs


def check_text(graph, where: str) -> None:
    """Names and op types must be text: protobuf hands strings that are not UTF-8 over as bytes."""
    for index, node in enumerate(graph.node):
        fields = (node.op_type, node.domain, node.name, *node.input, *node.output)
        if any(isinstance(field, bytes) for field in fields):
            raise ModelFormatError(f"{where}, node #{index}: a name or op type is not valid UTF-8 text")
        for subgraph in subgraphs(node):
            check_text(subgraph, f"{where}, node #{index}'s subgraph")


def check_function_calls(functions: dict) -> None:
    """Refuse model-local functions that call themselves, directly or through others (their
    expansion would never end)."""
    calls: dict = {}
    for key, function in functions.items():
        pending, called = list(function.node), set()
        while pending:
            node = pending.pop()
            if (node.domain, node.op_type) in functions:
                called.add((node.domain, node.op_type))
            for graph in subgraphs(node):
                pending.extend(graph.node)
        calls[key] = called
    state: dict = {}
    for start in calls:
        if state.get(start):
            continue
        path, stack = [start], [iter(sorted(calls[start]))]
        state[start] = 1
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(following) == 1:
                cycle = path[path.index(following):] + [following]
                raise ModelFormatError("model-local functions call themselves: "
                                       + " -> ".join(f"{d}.{n}" if d else n for d, n in cycle)
                                       + " (a recursive function has no finite expansion)")
            elif not state.get(following):
                state[following] = 1
                path.append(following)
                stack.append(iter(sorted(calls[following])))

def sparse_to_dense(sparse, where: str) -> np.ndarray:
    """The dense array of a SparseTensorProto, its indices checked against its dims."""
    from ...ops.base import Limits

    values = tensor_to_array(sparse.values, where)
    indices = tensor_to_array(sparse.indices, where) if sparse.HasField("indices") else np.zeros((0,), np.int64)
    dims = tuple(int(d) for d in sparse.dims)
    if any(d < 0 for d in dims):
        raise ModelFormatError(f"{where}: negative dims {list(dims)}")
    count = int(np.prod(dims, dtype=object)) if dims else 1
    if count * values.dtype.itemsize > Limits.max_tensor_bytes:
        raise ModelFormatError(f"{where}: dims {list(dims)} make a tensor larger than the limit "
                               f"({Limits.max_tensor_bytes} bytes; tractile.set_limits raises it)")
    values = values.reshape(-1)
    if indices.dtype.kind not in "iu":
        raise ModelFormatError(f"{where}: indices of type {indices.dtype}, not integers")
    if indices.ndim == 1:
        bounds = np.array([count])
        flat = indices.reshape(-1, 1)
    elif indices.ndim == 2 and indices.shape[1] == len(dims):
        bounds, flat = np.array(dims), indices
    else:
        raise ModelFormatError(f"{where}: indices of shape {list(indices.shape)} for dims {list(dims)} "
                               f"(give [NNZ] linear indices or [NNZ, {len(dims)}] coordinates)")
    if flat.shape[0] != values.size:
        raise ModelFormatError(f"{where}: {flat.shape[0]} indices for {values.size} values")
    outside = np.nonzero(np.any((flat < 0) | (flat >= bounds), axis=1))[0]
    if outside.size:
        raise ModelFormatError(f"{where}: index {flat[outside[0]].tolist()} is outside dims {list(dims)}")
    dense = np.zeros(dims, dtype=values.dtype)
    if indices.ndim == 1:
        dense.reshape(-1)[indices] = values
    else:
        dense[tuple(indices.T)] = values
    return dense
