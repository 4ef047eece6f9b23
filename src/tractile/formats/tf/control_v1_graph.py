"""The working graph of the v1 control-flow raising: nodes by name, tensor references, closures,
and the writing of a raised body as a FunctionDef (see ``control_v1`` for the design)."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...errors import ModelFormatError, UnsupportedOpError
from .control_v1_opdefs import OUTPUT_ARGS

DT_BOOL, DT_INT32, DT_VARIANT, DT_RESOURCE = 10, 3, 21, 20
ARG_OP = "_Arg"
#: ops that forward their data input 0 unchanged: the handle and flow of a TensorArray travel through them
PASS_THROUGH = {"Identity", "RefIdentity", "Snapshot", "Enter", "RefEnter", "Exit", "RefExit", "Switch", "RefSwitch",
                "Merge", "RefMerge", "NextIteration", "RefNextIteration"}


def split_ref(ref: str) -> tuple[str, int]:
    """``"a:1"`` -> ``("a", 1)``; ``"a"`` -> ``("a", 0)``; ``"^a"`` -> ``("a", -1)`` (a control input)."""
    if ref.startswith("^"):
        return ref[1:], -1
    name, colon, index = ref.rpartition(":")
    if colon and index.isdigit():
        return name, int(index)
    return ref, 0


def tensor(name: str, index: int = 0) -> str:
    """The canonical reference of output ``index`` of node ``name``: ``"a:0"``."""
    return f"{name}:{index}"


def canonical(ref: str) -> str:
    """``"a"`` -> ``"a:0"``; control references stay as they are."""
    name, index = split_ref(ref)
    return ref if index < 0 else tensor(name, index)


@dataclass
class Graph:
    """Nodes (NodeDef messages owned by this graph) by name, in their order; for a function body,
    also its arguments (``_Arg`` nodes named after them) and its results with their types."""

    nodes: dict[str, Any]
    args: list[tuple[str, int]] = field(default_factory=list)
    rets: list[tuple[str, int]] = field(default_factory=list)

    def data_inputs(self, node) -> list[str]:
        """The canonical references of a node's data inputs."""
        return [canonical(i) for i in node.input if not i.startswith("^")]

    def consumers(self) -> dict[str, list[tuple[str, int]]]:
        """Node name -> the (consumer, input position) pairs reading any of its outputs or its control."""
        found: dict[str, list[tuple[str, int]]] = {name: [] for name in self.nodes}
        for name, node in self.nodes.items():
            for position, ref in enumerate(node.input):
                source = split_ref(ref)[0]
                if source in found:
                    found[source].append((name, position))
        return found

    def unique_name(self, wanted: str) -> str:
        """``wanted``, or ``wanted_1``, ``wanted_2``... whichever no node has."""
        name, k = wanted, 0
        while name in self.nodes:
            k += 1
            name = f"{wanted}_{k}"
        return name

    def remove(self, names: Iterable[str], control_to: str | None) -> None:
        """Drop nodes; control inputs on them move to ``control_to`` (or go). Data inputs on them
        must be gone already: the caller checks that."""
        gone = set(names)
        for name in gone:
            self.nodes.pop(name, None)
        for node in self.nodes.values():
            if not any(split_ref(i)[0] in gone for i in node.input):
                continue
            kept: list[str] = []
            for ref in node.input:
                source, index = split_ref(ref)
                if source in gone:
                    if index >= 0:
                        raise ModelFormatError(f"node {node.name!r} still reads {ref!r}, which the raising removed")
                    ref = f"^{control_to}" if control_to else ""
                if ref and ref not in kept:
                    kept.append(ref)
            del node.input[:]
            node.input.extend(kept)


def topological_order(graph: Graph, what: str) -> list[str]:
    """Node names, each after its inputs (data and control); a cycle is a ``ModelFormatError``."""
    pending = {name: sum(split_ref(i)[0] in graph.nodes for i in node.input) for name, node in graph.nodes.items()}
    readers = graph.consumers()
    ready = [name for name, count in pending.items() if count == 0]
    order: list[str] = []
    while ready:
        name = ready.pop()
        order.append(name)
        for reader, _ in readers[name]:
            pending[reader] -= 1
            if pending[reader] == 0:
                ready.append(reader)
    if len(order) != len(graph.nodes):
        stuck = sorted(set(graph.nodes) - set(order))[:5]
        raise ModelFormatError(f"{what} has a cycle outside any while frame (through {', '.join(stuck)})")
    return order


def closure(graph: Graph, outputs: Iterable[str], boundary: dict[str, Any], inside: Callable[[str], bool],
            where: str) -> tuple[list[str], list[Any]]:
    """The nodes that compute ``outputs`` inside a frame or branch, walking data inputs back to the
    ``boundary`` tensors (which become arguments; returned: the keys used, in first-use order).
    A node ``inside`` rejects is taken along when it is a constant, else the raising fails."""
    seen: set[str] = set()
    used: list[Any] = []
    stack = [canonical(o) for o in outputs]
    while stack:
        ref = stack.pop()
        if ref in boundary:
            if boundary[ref] not in used:
                used.append(boundary[ref])
            continue
        name = split_ref(ref)[0]
        if name in seen:
            continue
        node = graph.nodes.get(name)
        if node is None:
            raise ModelFormatError(f"{where}: input {ref!r} names no node")
        if not inside(name) and not (node.op == "Const" and not graph.data_inputs(node)):
            raise UnsupportedOpError(f"{where} reads {ref!r} ({node.op}) from outside without an Enter or a "
                                     f"Switch; tractile cannot raise it")
        seen.add(name)
        stack.extend(graph.data_inputs(node))
    return [name for name in graph.nodes if name in seen], used


def extract(graph: Graph, node_cls, names: list[str], boundary: dict[str, str], args: list[tuple[str, int]],
            rets: list[tuple[str, int]]) -> Graph:
    """A function body: copies of ``names`` with boundary tensors read from the argument nodes
    ``boundary`` names, control inputs kept only between copied nodes, results ``rets``."""
    body = Graph({}, list(args), [])
    taken = set(names) | {a for a, _ in args}
    for arg, dtype in args:
        node = node_cls()
        node.name, node.op = arg, ARG_OP
        node.attr["T"].type = dtype
        body.nodes[arg] = node
    for name in names:
        node = node_cls()
        node.CopyFrom(graph.nodes[name])
        del node.input[:]
        for ref in graph.nodes[name].input:
            source, index = split_ref(ref)
            if index < 0:
                if source in taken:
                    node.input.append(ref)
            else:
                node.input.append(boundary.get(canonical(ref), ref))
        body.nodes[name] = node
    body.rets = [(boundary.get(canonical(ref), ref), dtype) for ref, dtype in rets]
    return body


def arg_name(wanted: str, taken: Iterable[str]) -> str:
    """A function argument name (lower-case letters, digits, underscores) no node of the body has."""
    clash = set(taken)
    name, k = wanted, 0
    while name in clash:
        k += 1
        name = f"{wanted}_{k}"
    return name


def output_arg(node, index: int, signatures: dict[str, list[str]]) -> tuple[str, int]:
    """``(output argument name, index within it)`` of a node's flat output ``index``."""
    if node.op in signatures:
        names = signatures[node.op]
        if index >= len(names):
            raise ModelFormatError(f"node {node.name!r} has no output {index}: function {node.op} has {len(names)}")
        return names[index], 0
    specs = OUTPUT_ARGS.get(node.op)
    if specs is None:
        raise UnsupportedOpError(f"op {node.op} (node {node.name!r}): its output argument names are not known, "
                                 f"so it cannot go into a raised function body", [("", node.op, 0, [node.name])])
    start = 0
    for spec in specs:
        if "*" in spec:
            arg, attr = spec.split("*")
            count = node.attr[attr].i
        elif "@" in spec:
            arg, attr = spec.split("@")
            count = len(node.attr[attr].list.type)
        else:
            arg, count = spec, 1
        if index < start + count:
            return arg, index - start
        start += count
    raise ModelFormatError(f"node {node.name!r} ({node.op}) has no output {index}")


def write_function(fdef, body: Graph, name: str, signatures: dict[str, list[str]]) -> None:
    """Fill the FunctionDef message ``fdef`` with ``body`` under the function name ``name``."""
    fdef.signature.name = name
    for arg, dtype in body.args:
        spec = fdef.signature.input_arg.add()
        spec.name, spec.type = arg, dtype
    args = {a for a, _ in body.args}

    def reference(ref: str) -> str:
        source, index = split_ref(ref)
        if source in args:
            return source
        out, within = output_arg(body.nodes[source], index, signatures)
        return f"{source}:{out}:{within}"

    for node in body.nodes.values():
        if node.op == ARG_OP:
            continue
        copy = fdef.node_def.add()
        copy.CopyFrom(node)
        del copy.input[:]
        for ref in node.input:
            if ref.startswith("^"):
                if ref[1:] not in args:
                    copy.input.append(ref)
            else:
                copy.input.append(reference(ref))
        if "_class" in copy.attr:
            del copy.attr["_class"]
    for k, (ref, dtype) in enumerate(body.rets):
        spec = fdef.signature.output_arg.add()
        spec.name, spec.type = f"output_{k}", dtype
        fdef.ret[spec.name] = reference(ref)
