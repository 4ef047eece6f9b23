"""TensorFlow SavedModel folders: a signature's graph with the variables folded in as constants.

``saved_model.pb`` is a ``SavedModel`` message: a schema version (field 1) and MetaGraphDefs
(field 2); tensorboard ships MetaGraphDef but not SavedModel, so the outer message is split
here. The serving graph's ``VarHandleOp`` nodes name variables (``shared_name``); the object
graph says which of its nodes each variable is, and the checkpoint's own object graph (the
``_CHECKPOINTABLE_OBJECT_GRAPH`` tensor) gives, for the node at the same position, the key of
its value in the tensor bundle.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from ...errors import ModelFormatError
from ...model import InferenceModel
from .bundle import TensorBundle, bundle_prefix, wire_fields
from .loader import load_graph_def
from .proto import protos

_OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def read_meta_graph(folder: str, tag: str = "serve"):
    """The MetaGraphDef of ``folder/saved_model.pb`` tagged ``tag`` (else the first one)."""
    path = os.path.join(folder, "saved_model.pb")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise ModelFormatError(f"cannot read {path}: {error}") from None
    meta_graph_pb2 = protos().meta_graph_pb2
    metas = []
    for number, value in wire_fields(data, path):
        if number == 2 and isinstance(value, bytes):
            meta = meta_graph_pb2.MetaGraphDef()
            try:
                meta.ParseFromString(value)
            except Exception as error:
                raise ModelFormatError(f"{path}: a malformed MetaGraphDef ({error})") from None
            metas.append(meta)
    if not metas:
        raise ModelFormatError(f"{path}: not a SavedModel (it holds no meta graph)")
    for meta in metas:
        if tag in meta.meta_info_def.tags:
            return meta
    return metas[0]


class Variables(Mapping):
    """The variables of a SavedModel by ``shared_name``, read from the checkpoint on demand."""

    def __init__(self, folder: str, meta):
        prefix = bundle_prefix(folder)
        self.keys_by_name: dict[str, str] = {}
        self.bundle = TensorBundle(prefix) if prefix else None
        if self.bundle is None:
            return
        trackable = protos().trackable_object_graph_pb2.TrackableObjectGraph()
        if _OBJECT_GRAPH_KEY in self.bundle.keys():
            raw = self.bundle.tensor(_OBJECT_GRAPH_KEY).reshape(-1)[0]
            trackable.ParseFromString(raw)
        saved_nodes = meta.object_graph_def.nodes
        for index, saved in enumerate(saved_nodes):
            if saved.WhichOneof("kind") != "variable" or index >= len(trackable.nodes):
                continue
            for attribute in trackable.nodes[index].attributes:
                if attribute.name == "VARIABLE_VALUE":
                    self.keys_by_name[saved.variable.name] = attribute.checkpoint_key
        for node in trackable.nodes:  # checkpoints without a SavedModel object graph: by full name
            for attribute in node.attributes:
                if attribute.name == "VARIABLE_VALUE":
                    self.keys_by_name.setdefault(attribute.full_name, attribute.checkpoint_key)

    def __getitem__(self, name: str) -> np.ndarray:
        if self.bundle is None or name not in self.keys_by_name:
            raise KeyError(name)
        return self.bundle.tensor(self.keys_by_name[name])

    def __iter__(self):
        return iter(self.keys_by_name)

    def __len__(self) -> int:
        return len(self.keys_by_name)


def load_saved_model(folder: str, signature: str = "serving_default",
                     outputs: list[str] | None = None) -> InferenceModel:
    """The ``signature`` of the SavedModel in ``folder`` as an InferenceModel: inputs and
    outputs named after the signature's keys, variables as constants."""
    protos()
    from tensorboard.compat.proto import trackable_object_graph_pb2  # noqa: F401 - loads the module

    meta = read_meta_graph(folder)
    if signature not in meta.signature_def:
        known = ", ".join(sorted(k for k in meta.signature_def if not k.startswith("__"))) or "none"
        raise ModelFormatError(f"{folder}: the SavedModel has no signature {signature!r} (it has: {known})")
    sig = meta.signature_def[signature]
    input_keys = sorted(sig.inputs)
    output_keys = sorted(sig.outputs)
    placeholders = {sig.inputs[k].name.split(":")[0]: k for k in input_keys}
    refs = outputs or [sig.outputs[k].name for k in output_keys]
    names = None if outputs else output_keys
    model = load_graph_def(meta.graph_def, refs, Variables(folder, meta), placeholders, names)
    model.properties["producer"] = f"TensorFlow SavedModel ({signature})"
    return model
