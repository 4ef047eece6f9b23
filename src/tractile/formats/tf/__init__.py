"""TensorFlow front end: frozen GraphDefs (``.pb``) and SavedModels (folders), without TensorFlow."""
from __future__ import annotations

import os

from ...model import InferenceModel
from .loader import load_graph_def
from .proto import read_graph_def


def load_tf(source, outputs: list[str] | None = None, signature: str = "serving_default") -> InferenceModel:
    """Load a frozen GraphDef (a path or bytes) or a SavedModel folder (its ``signature``,
    variables folded in as constants) as an InferenceModel. ``outputs`` names the tensors to
    compute (default: a GraphDef's tensors nothing consumes, a signature's outputs)."""
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        from .saved_model import load_saved_model

        return load_saved_model(os.fspath(source), signature, outputs)
    where = "the model bytes" if isinstance(source, (bytes, bytearray, memoryview)) else os.fspath(source)
    model = load_graph_def(read_graph_def(source, where), outputs)
    model.properties["producer"] = "TensorFlow GraphDef"
    return model


__all__ = ["load_tf"]
