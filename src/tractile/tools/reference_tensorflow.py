"""TensorFlow as a reference engine: a frozen GraphDef or a SavedModel run in a TF 1 session.

Runs in the child process of :func:`tractile.tools.reference.run_reference`; TensorFlow is
imported there only. Values are named as tractile's TensorFlow loader labels its wires:
``node:index`` for every tensor, the outputs by the names tractile gives them (a frozen
graph's sink nodes, a signature's output keys). A SavedModel's signature is frozen by
TensorFlow itself (variables as constants, functions inlined: inlined nodes are named
``call/node``), and its tensor names get the prefix of the serving graph's call node, which
is what tractile's loader inlines them under.
"""
from __future__ import annotations

import os

import numpy as np

from ..errors import TractileError
from .reference import ReferenceRun, ordered_inputs

#: TensorFlow 1 control-flow ops: values inside their frames cannot be fetched from outside
_FRAME_OPS = {"Switch", "RefSwitch", "Enter", "RefEnter"}
_FRAME_ENDS = {"Exit", "RefExit", "Merge", "RefMerge"}
_MAX_ONE_BY_ONE = 400


def _tensorflow():
    try:
        import tensorflow as tf
    except ImportError:
        raise TractileError("comparing with TensorFlow needs the tensorflow package: pip install tensorflow-cpu") \
            from None
    return tf


def run_tensorflow(path: str, inputs: dict[str, np.ndarray], every_value: bool,
                   signature: str = "serving_default") -> ReferenceRun:
    """Run the model at ``path`` (a frozen ``.pb`` or a SavedModel folder) in TensorFlow."""
    tf = _tensorflow()
    if os.path.isdir(path):
        graph_def, placeholders, input_names, output_names, outputs, prefix = _frozen_signature(tf, path, signature)
        notes = [f"TensorFlow froze the SavedModel's {signature!r} signature (variables as constants)"]
    else:
        graph_def = _read_graph_def(tf, path)
        placeholders = [n.name for n in graph_def.node if n.op == "Placeholder"]
        input_names = placeholders
        from ..formats.tf.loader import graph_outputs

        output_names = graph_outputs(graph_def)
        outputs, prefix, notes = [f"{name}:0" for name in output_names], "", []
    graph = tf.Graph()
    with graph.as_default():
        try:
            tf.compat.v1.import_graph_def(graph_def, name="")
        except Exception as error:  # noqa: BLE001 - TensorFlow's errors vary; report what it said
            raise TractileError(f"TensorFlow cannot import the graph of {path}: {error}") from None
    values = ordered_inputs(input_names, inputs, "TensorFlow")
    feeds = {graph.get_tensor_by_name(f"{name}:0"): value for name, value in zip(placeholders, values)}
    fetched = _fetch(tf, graph, feeds, outputs, _every_tensor(tf, graph_def, graph, outputs) if every_value else [])
    results = {prefix + name: value for name, value in fetched.items() if name not in outputs}
    results.update({name: fetched[ref] for name, ref in zip(output_names, outputs)})
    producers = {prefix + t.name: op.type for op in graph.get_operations() for t in op.outputs}
    return ReferenceRun("tensorflow", input_names, output_names, results, producers, notes)


def _read_graph_def(tf, path: str):
    graph_def = tf.compat.v1.GraphDef()
    try:
        with open(path, "rb") as handle:
            graph_def.ParseFromString(handle.read())
    except Exception as error:  # noqa: BLE001
        raise TractileError(f"TensorFlow cannot read {path} as a GraphDef: {error}") from None
    return graph_def


def _frozen_signature(tf, folder: str, signature: str):
    """(GraphDef, placeholders, input keys, output keys, output tensors, name prefix) of a signature."""
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    try:
        loaded = tf.saved_model.load(folder)
        function = loaded.signatures[signature]
        frozen = convert_variables_to_constants_v2(function)
    except Exception as error:  # noqa: BLE001
        raise TractileError(f"TensorFlow cannot load signature {signature!r} of {folder}: {error}") from None
    input_keys = sorted(function.structured_input_signature[1])
    output_keys = sorted(function.structured_outputs)
    placeholders = [t.name.split(":")[0] for t in frozen.inputs]
    outputs = [t.name for t in frozen.outputs]
    if len(placeholders) != len(input_keys) or len(outputs) != len(output_keys):
        raise TractileError(f"the frozen signature {signature!r} of {folder} has {len(placeholders)} inputs and "
                            f"{len(outputs)} outputs; the signature declares {len(input_keys)} and {len(output_keys)}")
    return (frozen.graph.as_graph_def(), placeholders, input_keys, output_keys, outputs,
            _call_prefix(folder, signature))


def _call_prefix(folder: str, signature: str) -> str:
    """``call/`` when the serving graph computes the signature's outputs in one call node ``call``
    (the node tractile inlines the signature's function under), else nothing."""
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(folder, "saved_model.pb"), "rb") as handle:
        saved.ParseFromString(handle.read())
    for meta in saved.meta_graphs:
        if signature not in meta.signature_def:
            continue
        callers = {t.name.split(":")[0] for t in meta.signature_def[signature].outputs.values()}
        ops = {node.name: node.op for node in meta.graph_def.node}
        if len(callers) == 1 and ops.get(next(iter(callers))) in ("PartitionedCall", "StatefulPartitionedCall"):
            return next(iter(callers)) + "/"
    return ""


def _every_tensor(tf, graph_def, graph, outputs: list[str]) -> list[str]:
    """The tensors the outputs depend on that a session can fetch: no resources or variants,
    nothing inside a TensorFlow 1 loop or conditional branch."""
    nodes = {node.name: node for node in graph_def.node}
    consumers: dict[str, list[str]] = {}
    for node in graph_def.node:  # control inputs too: a loop's constants hang on its pivot
        for ref in node.input:
            consumers.setdefault(ref.lstrip("^").split(":")[0], []).append(node.name)
    loop_merges = {name for name, node in nodes.items() if node.op in ("Merge", "RefMerge") and any(
        nodes.get(ref.split(":")[0]) is not None and "NextIteration" in nodes[ref.split(":")[0]].op
        for ref in node.input)}
    framed: set[str] = set()
    stack = [c for name, node in nodes.items() if node.op in _FRAME_OPS for c in consumers.get(name, [])]
    while stack:
        name = stack.pop()
        if name in framed or nodes[name].op in ("Exit", "RefExit"):
            continue
        framed.add(name)
        if nodes[name].op not in _FRAME_ENDS or name in loop_merges:
            stack.extend(consumers.get(name, []))
    needed, stack = set(), [ref.split(":")[0] for ref in outputs]
    while stack:
        name = stack.pop()
        if name in needed or name not in nodes:
            continue
        needed.add(name)
        stack.extend(ref.split(":")[0] for ref in nodes[name].input if not ref.startswith("^"))
    skipped = (_FRAME_OPS | _FRAME_ENDS | {"NextIteration", "RefNextIteration", "LoopCond", "Exit", "RefExit"})
    found = []
    for op in graph.get_operations():
        if op.name not in needed or op.name in framed or op.type in skipped:
            continue
        found.extend(t.name for t in op.outputs if t.dtype not in (tf.resource, tf.variant))
    return [name for name in found if name not in outputs]


def _fetch(tf, graph, feeds: dict, outputs: list[str], extra: list[str]) -> dict[str, np.ndarray]:
    """The values of ``outputs`` and of what it can of ``extra``: in one run, else (on a graph
    small enough) one run per tensor, leaving out those TensorFlow cannot fetch."""
    with tf.compat.v1.Session(graph=graph) as session:
        try:
            return dict(zip(outputs + extra, session.run(outputs + extra, feeds)))
        except Exception as error:  # noqa: BLE001 - TensorFlow's errors vary; report what it said
            if len(extra) > _MAX_ONE_BY_ONE:
                raise TractileError(f"TensorFlow cannot fetch every intermediate value: {_first_line(error)}") \
                    from None
            if not extra:
                raise TractileError(f"TensorFlow failed to run the graph: {_first_line(error)}") from None
        try:
            values = dict(zip(outputs, session.run(outputs, feeds)))
        except Exception as error:  # noqa: BLE001
            raise TractileError(f"TensorFlow failed to run the graph: {_first_line(error)}") from None
        for name in extra:
            try:
                values[name] = session.run(name, feeds)
            except Exception:  # noqa: BLE001,S112 - a value TensorFlow cannot fetch is not compared
                continue
        return values


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
