"""TensorFlow 1.x control flow raised to the functional ``While`` and ``If`` of TensorFlow 2.

Graphs built with control flow v1 (``tf.compat.v1.while_loop``, ``tf.compat.v1.cond``,
``tf.compat.v1.nn.dynamic_rnn``) express loops and conditionals inside one dataflow graph with
``Enter``/``Exit``/``NextIteration``/``LoopCond``/``Merge``/``Switch``, and keep loop outputs in
``TensorArrayV3`` resources. :func:`raise_control_flow_v1` rewrites such a ``GraphDef`` into the
form TF 2 emits, which the TensorFlow front end loads: functional ``While``/``If`` nodes whose
bodies are ``FunctionDef`` s of the graph's library, and ``TensorList`` values.

The rewrite works on protobuf messages only (it never imports TensorFlow), in three steps:

1. **TensorArrays become TensorLists** (``control_v1_tensorarray``): a TensorArray is a resource
   handle plus a float "flow" that orders its reads and writes; a TensorList is a value, so each
   op takes the list where the array op took its flow, produces the new list where it produced
   the new flow, and the handle wires disappear. Values forwarded by Enter/Merge/Switch/... change
   type from float to variant.
2. **While frames become While nodes**, outermost first. Frames are found as TensorFlow's executor
   finds them: a node lives in the frame of its inputs, an ``Enter`` opens the child frame its
   ``frame_name`` names, an ``Exit`` returns to the parent. In a frame each ``Merge`` of an
   ``Enter`` and a ``NextIteration`` is a loop-carried value; its ``Switch`` on the ``LoopCond``
   gives the value inside the body (output 1) and to the ``Exit`` (output 0). Each
   ``Enter(is_constant=True)`` is an invariant, passed as an extra loop-carried value the body
   returns unchanged. The condition function computes the ``LoopCond`` input from the ``Merge``
   outputs; the body computes the ``NextIteration`` inputs from the ``Switch`` outputs. Their
   nodes (inner frames included) move into the two functions, which are raised in turn, so inner
   frames become While nodes inside the body. Each ``Exit`` becomes an ``Identity`` of the While
   output under the same name, so the graph's consumers and fetch names stay as they were.
3. **Switch/Merge conditionals become If nodes** (``control_v1_cond``), innermost first, after the
   frames of the same graph: every tensor gets the set of ``(predicate, branch)`` pairs of the
   Switch outputs it depends on; the Merges whose inputs disagree on one predicate end that
   conditional, its Switches' data inputs become the If inputs, and the nodes on each side become
   the then/else functions. Each ``Merge`` becomes an ``Identity`` of the If output.

Control inputs are kept between nodes that stay together and dropped where a node becomes a
function argument (they only placed nodes in frames and branches). What cannot be raised (a frame
without a ``LoopCond``, a ``Merge``'s ``value_index`` in use, an op whose output names the
FunctionDef needs but the table in ``control_v1_opdefs`` lacks...) raises ``UnsupportedOpError``
or ``ModelFormatError`` naming the frame or conditional and why.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import ModelFormatError, UnsupportedOpError
from .control_v1_graph import (
    DT_BOOL,
    Graph,
    arg_name,
    canonical,
    closure,
    extract,
    split_ref,
    tensor,
    write_function,
)

if TYPE_CHECKING:
    from tensorboard.compat.proto.graph_pb2 import GraphDef

ENTER, EXIT = {"Enter", "RefEnter"}, {"Exit", "RefExit"}
MERGE, SWITCH = {"Merge", "RefMerge"}, {"Switch", "RefSwitch"}
NEXT_ITERATION = {"NextIteration", "RefNextIteration"}
V1_OPS = ENTER | EXIT | MERGE | SWITCH | NEXT_ITERATION | {"LoopCond"}


@dataclass(eq=False)
class Frame:
    """A while frame: its ``frame_name`` and the frame it sits in (``None`` for the graph's root)."""

    name: str
    parent: Frame | None

    def within(self, other: Frame) -> bool:
        """Whether this frame is ``other`` or nested in it."""
        frame: Frame | None = self
        while frame is not None:
            if frame is other:
                return True
            frame = frame.parent
        return False


class Raising:
    """What one raising shares: the NodeDef class, the functions made so far and their names."""

    def __init__(self, node_cls, library) -> None:
        self.node_cls = node_cls
        self.functions: list[tuple[str, Graph]] = []
        self.signatures: dict[str, list[str]] = {
            f.signature.name: [a.name for a in f.signature.output_arg] for f in library.function}

    def function_name(self, scope: str, suffix: str) -> str:
        """A new function name made from a frame's or conditional's scope."""
        base = re.sub(r"[^A-Za-z0-9_]", "_", scope).strip("_") or "raised"
        name, k = f"{base}_{suffix}", 0
        while name in self.signatures:
            k += 1
            name = f"{base}_{suffix}_{k}"
        self.signatures[name] = []
        return name

    def add_function(self, name: str, body: Graph) -> None:
        """Register a body (raised in turn, so its own frames and conditionals go too)."""
        raise_graph(self, body, f"function {name}")
        self.signatures[name] = [f"output_{k}" for k in range(len(body.rets))]
        self.functions.append((name, body))


def raise_control_flow_v1(graph_def: GraphDef) -> GraphDef:
    """A copy of ``graph_def`` with v1 control flow raised to ``While``/``If`` nodes whose bodies
    are added to its function library, and TensorArrays turned into TensorLists (see the module
    documentation). A graph without v1 control flow comes back unchanged."""
    from .control_v1_tensorarray import tensor_arrays_to_lists

    raised = type(graph_def)()
    raised.CopyFrom(graph_def)
    if not any(n.op in V1_OPS or n.op.startswith("TensorArray") for n in raised.node):
        return raised
    node_cls = type(raised.node[0])
    graph = Graph({})
    for node in raised.node:
        if node.name in graph.nodes:
            raise ModelFormatError(f"the graph has two nodes named {node.name!r}")
        graph.nodes[node.name] = node_cls()
        graph.nodes[node.name].CopyFrom(node)
    state = Raising(node_cls, raised.library)
    spare = tensor_arrays_to_lists(graph, node_cls)
    raise_graph(state, graph, "the graph")
    readers = graph.consumers()
    graph.remove([name for name in spare if name in graph.nodes and not readers[name]], control_to=None)
    del raised.node[:]
    for node in graph.nodes.values():
        raised.node.add().CopyFrom(node)
    for name, body in state.functions:
        write_function(raised.library.function.add(), body, name, state.signatures)
    return raised


def raise_graph(state: Raising, graph: Graph, where: str) -> None:
    """Raise the outermost while frames of ``graph`` (their bodies recursively), then its conditionals."""
    from .control_v1_cond import raise_conditionals

    frames = find_frames(graph, where)
    top = {id(f): f for f in frames.values() if f.parent is not None and f.parent.parent is None}
    for frame in top.values():
        raise_while(state, graph, frame, frames)
    raise_conditionals(state, graph, where)
    left = sorted({n.op for n in graph.nodes.values() if n.op in V1_OPS})
    if left:
        raise UnsupportedOpError(f"{where}: {', '.join(left)} left after raising the control flow (malformed frame?)")


def find_frames(graph: Graph, where: str) -> dict[str, Frame]:
    """The frame of every node, as TensorFlow's executor assigns them."""
    root = Frame("", None)
    children: dict[tuple[int, str], Frame] = {}
    frames: dict[str, Frame] = {}
    readers = graph.consumers()
    queue = [name for name, node in graph.nodes.items()
             if not any(split_ref(i)[0] in graph.nodes for i in node.input)]
    for name in queue:
        frames[name] = root
    loose = {name for name in queue if graph.nodes[name].op == "Const"}
    while queue:
        name = queue.pop()
        frame = frames[name]
        if graph.nodes[name].op in EXIT:
            if frame.parent is None:
                raise ModelFormatError(f"{where}: Exit node {name!r} is outside any while frame")
            frame = frame.parent
        for reader, _ in readers[name]:
            # a constant without inputs fits in any frame: the reader's other inputs place it
            if reader in frames or name in loose and any(
                    split_ref(i)[0] in graph.nodes and split_ref(i)[0] not in loose for i in graph.nodes[reader].input):
                continue
            node = graph.nodes[reader]
            if node.op in ENTER:
                key = node.attr["frame_name"].s.decode()
                frames[reader] = children.setdefault((id(frame), key), Frame(key, frame))
            else:
                frames[reader] = frame
            queue.append(reader)
    for name in graph.nodes:
        frames.setdefault(name, root)
    return frames


def raise_while(state: Raising, graph: Graph, frame: Frame, frames: dict[str, Frame]) -> None:
    """Replace the nodes of ``frame`` (and of the frames inside it) by one While node."""
    where = f"while frame {frame.name!r}"
    members = {name for name, f in frames.items() if f.within(frame)}
    direct = [name for name in graph.nodes if frames[name] is frame]
    nodes = graph.nodes
    conds = [n for n in direct if nodes[n].op == "LoopCond"]
    if len(conds) != 1:
        raise UnsupportedOpError(f"{where} has {len(conds)} LoopCond nodes; tractile raises frames with exactly one")
    loop_cond = conds[0]
    enters = [n for n in direct if nodes[n].op in ENTER]
    loops: list[tuple[str, str, str]] = []  # (merge, enter, next iteration)
    for name in direct:
        if nodes[name].op not in MERGE:
            continue
        sources = [split_ref(i)[0] for i in graph.data_inputs(nodes[name])]
        enter = [s for s in sources if nodes[s].op in ENTER]
        step = [s for s in sources if nodes[s].op in NEXT_ITERATION]
        if enter or step:
            if len(sources) != 2 or len(enter) != 1 or len(step) != 1:
                raise UnsupportedOpError(f"{where}: Merge {name!r} does not join one Enter and one NextIteration")
            loops.append((name, enter[0], step[0]))
    carried = {enter for _, enter, _ in loops}
    invariants = [e for e in enters if e not in carried]
    for enter in invariants:
        if not nodes[enter].attr["is_constant"].b:
            raise UnsupportedOpError(f"{where}: Enter {enter!r} is neither constant nor joined to a NextIteration")
    switches: dict[str, str] = {}
    for name in direct:
        node = nodes[name]
        if node.op in SWITCH and split_ref(node.input[1])[0] == loop_cond:
            switches[split_ref(node.input[0])[0]] = name
    missing = [merge for merge, _, _ in loops if merge not in switches]
    if missing:
        raise UnsupportedOpError(f"{where}: loop value {missing[0]!r} has no Switch on the LoopCond")
    exits: dict[str, int] = {}
    by_switch = {switches[merge]: k for k, (merge, _, _) in enumerate(loops)}
    for name in direct:
        if nodes[name].op in EXIT:
            source, index = split_ref(nodes[name].input[0])
            if source not in by_switch or index != 0:
                raise UnsupportedOpError(f"{where}: Exit {name!r} does not read a loop value's Switch")
            exits[name] = by_switch[source]

    dtypes = [nodes[enter].attr["T"].type for _, enter, _ in loops] + [nodes[e].attr["T"].type for e in invariants]
    scope = frame.name[:-len("/while_context")] if frame.name.endswith("/while_context") else frame.name
    taken = set(nodes)
    names = [arg_name(f"loop_var_{k}", taken) for k in range(len(loops))]
    names += [arg_name(f"invariant_{k}", taken) for k in range(len(invariants))]
    args = list(zip(names, dtypes))
    cond_boundary = {tensor(merge): names[k] for k, (merge, _, _) in enumerate(loops)}
    cond_boundary.update({tensor(e): names[len(loops) + k] for k, e in enumerate(invariants)})
    body_boundary = dict(cond_boundary)
    body_boundary.update({tensor(switches[merge], 1): names[k] for k, (merge, _, _) in enumerate(loops)})
    structure = {loop_cond, *enters, *exits, *switches.values(), *(m for m, _, _ in loops), *(s for _, _, s in loops)}

    def inside(name: str) -> bool:
        return name in members and name not in structure

    predicate = graph.data_inputs(nodes[loop_cond])[0]
    cond_nodes, _ = closure(graph, [predicate], cond_boundary, inside, f"{where} (condition)")
    steps = [graph.data_inputs(nodes[step])[0] for _, _, step in loops]
    body_nodes, _ = closure(graph, steps, body_boundary, inside, f"{where} (body)")
    cond = extract(graph, state.node_cls, cond_nodes, cond_boundary, args, [(predicate, DT_BOOL)])
    body = extract(graph, state.node_cls, body_nodes, body_boundary, args,
                   list(zip(steps, dtypes)) + [(n, t) for n, t in args[len(loops):]])

    readers = graph.consumers()
    outside = [(reader, source) for source in members - set(exits) for reader, at in readers[source]
               if reader not in members and not nodes[reader].input[at].startswith("^")]
    if outside:
        reader, source = outside[0]
        raise UnsupportedOpError(f"{where}: node {reader!r} outside the loop reads {source!r} without an Exit")
    cond_name = state.function_name(scope, "cond")
    body_name = state.function_name(scope, "body")
    state.add_function(cond_name, cond)
    state.add_function(body_name, body)

    op = state.node_cls()
    op.name, op.op = graph.unique_name(f"{scope}/While" if scope else "While"), "While"
    outer = [canonical(nodes[e].input[0]) for e in [enter for _, enter, _ in loops] + invariants]
    controls = {i for e in enters for i in nodes[e].input if i.startswith("^")}
    op.input.extend(outer + sorted(controls))
    op.attr["T"].list.type.extend(dtypes)
    op.attr["cond"].func.name = cond_name
    op.attr["body"].func.name = body_name
    for _ in dtypes:
        op.attr["output_shapes"].list.shape.add().unknown_rank = True
    op.attr["parallel_iterations"].i = max(1, nodes[enters[0]].attr["parallel_iterations"].i) if enters else 10
    for name, k in exits.items():
        as_identity(nodes[name], tensor(op.name, k))
    graph.remove(members - set(exits), control_to=op.name)
    graph.nodes[op.name] = op


def as_identity(node, source: str) -> None:
    """Turn a node (an Exit, a Merge) into an ``Identity`` of ``source`` keeping its name and ``T``."""
    dtype = node.attr["T"].type
    node.op = "Identity"
    del node.input[:]
    node.input.append(source)
    node.attr.clear()
    node.attr["T"].type = dtype

