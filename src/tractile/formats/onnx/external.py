"""ONNX external data, read only from inside the model's folder.

A tensor stored outside the ``.onnx`` file names its file in ``external_data`` ("location").
That name comes from the model, so before anything is read it must be a relative path that
stays inside the model's folder once joined, symbolic links resolved, and name a regular file.
"""
from __future__ import annotations

import os
from collections.abc import Iterator

from ...errors import ModelFormatError


def _graph_tensors(graph) -> Iterator:
    from onnx import AttributeProto

    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        yield from _node_tensors(node, AttributeProto)


def _node_tensors(node, AttributeProto) -> Iterator:
    for attribute in node.attribute:
        if attribute.type == AttributeProto.TENSOR:
            yield attribute.t
        elif attribute.type == AttributeProto.TENSORS:
            yield from attribute.tensors
        elif attribute.type == AttributeProto.SPARSE_TENSOR:
            yield attribute.sparse_tensor.values
            yield attribute.sparse_tensor.indices
        elif attribute.type == AttributeProto.GRAPH:
            yield from _graph_tensors(attribute.g)
        elif attribute.type == AttributeProto.GRAPHS:
            for graph in attribute.graphs:
                yield from _graph_tensors(graph)


def external_tensors(proto) -> list:
    """The tensors of a ModelProto (graph, subgraphs, functions) whose data lives in another file."""
    from onnx import AttributeProto, TensorProto

    tensors = list(_graph_tensors(proto.graph))
    for function in proto.functions:
        for node in function.node:
            tensors.extend(_node_tensors(node, AttributeProto))
    return [t for t in tensors if t.HasField("data_location") and t.data_location == TensorProto.EXTERNAL]


def checked_location(base_dir: str, location: str, tensor: str) -> str:
    """The path of an external data file, or ModelFormatError when ``location`` leaves the
    model's folder (absolute, ``..``, a link pointing out) or is not a regular file."""
    where = f"tensor {tensor!r}'s external data {location!r}"
    if not location or "\x00" in location or os.path.isabs(location) or os.path.splitdrive(location)[0]:
        raise ModelFormatError(f"{where}: external data must be a relative path inside the model's folder")
    root = os.path.realpath(base_dir)
    path = os.path.realpath(os.path.join(root, location))
    if os.path.commonpath([root, path]) != root:
        raise ModelFormatError(f"{where} leads outside the model's folder ({root}); tractile reads external data "
                               "only from the model's folder")
    if not os.path.isfile(path):
        raise ModelFormatError(f"{where}: no such file beside the model ({path})")
    return path


def load_external_data(proto, base_dir: str) -> None:
    """Read the external data of ``proto`` from ``base_dir`` after checking every location."""
    tensors = external_tensors(proto)
    if not tensors:
        return
    for tensor in tensors:
        entries = {entry.key: entry.value for entry in tensor.external_data}
        checked_location(base_dir, entries.get("location", ""), tensor.name)
    from onnx.external_data_helper import load_external_data_for_model

    load_external_data_for_model(proto, base_dir)


def refuse_external_data(proto, where: str) -> None:
    """ModelFormatError when a model given without its folder (bytes, a ModelProto) still has
    tensors in other files: there is no folder to read them from safely (not the current one)."""
    tensors = external_tensors(proto)
    if tensors:
        names = ", ".join(repr(t.name) for t in tensors[:3]) + (" ..." if len(tensors) > 3 else "")
        raise ModelFormatError(f"{where} keeps tensor data in other files ({names}); load the model from its path "
                               "so that the data is read from its folder")
