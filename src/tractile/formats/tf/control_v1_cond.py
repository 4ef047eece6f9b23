"""Switch/Merge conditionals (``tf.compat.v1.cond``) raised to ``If`` nodes (see ``control_v1``).

Each tensor gets its *branch state*: the ``(predicate, side)`` pairs of the Switch outputs it
depends on, through data and control inputs. A Merge's state is what its inputs agree on; the
predicate they disagree on is the conditional the Merge ends. The Switches of one conditional
share a predicate tensor (``cond/pred_id``); the pivot ``Switch(pred, pred)`` whose outputs anchor
a branch's constants through control inputs counts with the ``pred_id`` of its scope.
"""
from __future__ import annotations

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
    topological_order,
)

if TYPE_CHECKING:
    from .control_v1 import Raising

MERGE, SWITCH = {"Merge", "RefMerge"}, {"Switch", "RefSwitch"}
State = dict[str, bool]


def raise_conditionals(state: Raising, graph: Graph, where: str) -> None:
    """Replace every Switch/Merge conditional of ``graph`` (no while frames left) by an If node."""
    while True:
        keys = {name: predicate_key(graph, name) for name, node in graph.nodes.items() if node.op in SWITCH}
        if not keys:
            return
        states, merges = branch_states(graph, keys, where)
        depth = {key: max(len(states[s]) for s, k in keys.items() if k == key) for key in keys.values()}
        key = max(depth, key=lambda k: depth[k])
        raise_if(state, graph, key, [s for s, k in keys.items() if k == key],
                 [m for m, k in merges.items() if k == key], states, keys)
        try:
            topological_order(graph, where)
        except ModelFormatError as error:
            raise UnsupportedOpError(f"{where}: conditionals on predicate {key!r} are chained through each other's "
                                     f"results; tractile cannot raise them") from error


def predicate_key(graph: Graph, switch: str) -> str:
    """The tensor that names the conditional a Switch belongs to."""
    node = graph.nodes[switch]
    data, predicate = canonical(node.input[0]), canonical(node.input[1])
    if data == predicate:
        scope = switch.rpartition("/")[0]
        pred_id = graph.nodes.get(f"{scope}/pred_id" if scope else "pred_id")
        if pred_id is not None and pred_id.op == "Identity" and canonical(pred_id.input[0]) == predicate:
            return tensor(pred_id.name)
    return predicate


def branch_states(graph: Graph, keys: dict[str, str], where: str) -> tuple[dict[str, State], dict[str, str]]:
    """Every node's branch state, and the predicate key each Merge ends."""
    states: dict[str, State] = {}
    merges: dict[str, str] = {}

    def output_state(ref: str) -> State:
        source, index = split_ref(ref)
        found = states.get(source, {})
        if source in keys and index >= 0:
            return {**found, keys[source]: index == 1}
        return found

    for name in topological_order(graph, where):
        node = graph.nodes[name]
        if node.op in MERGE:
            sides = [output_state(i) for i in node.input if not i.startswith("^")]
            split = sorted({k for s in sides for k, v in s.items() if any(t.get(k) is (not v) for t in sides)})
            if len(split) != 1:
                raise UnsupportedOpError(f"{where}: Merge {name!r} does not end one conditional (its inputs "
                                         f"differ on {len(split)} predicates); tractile cannot raise it")
            merges[name] = split[0]
            states[name] = {k: v for k, v in sides[0].items() if all(s.get(k) is v for s in sides)}
            continue
        merged: State = {}
        for ref in node.input:
            for k, v in output_state(ref).items():
                if merged.get(k) is (not v):
                    raise ModelFormatError(f"{where}: node {name!r} reads both sides of the conditional on {k!r}")
                merged[k] = v
        states[name] = merged
    return states, merges


def raise_if(state: Raising, graph: Graph, key: str, switches: list[str], merges: list[str],
             states: dict[str, State], keys: dict[str, str]) -> None:
    """Replace the conditional on ``key`` by an If node; its Merges become Identities of the If."""
    nodes = graph.nodes
    scope = (merges[0] if merges else switches[0]).rpartition("/")[0]
    where = f"conditional {scope or key!r}"
    sides = {True: {n for n, s in states.items() if s.get(key) is True},
             False: {n for n, s in states.items() if s.get(key) is False}}
    outputs: dict[bool, list[str]] = {True: [], False: []}
    for merge in merges:
        data = [canonical(i) for i in nodes[merge].input if not i.startswith("^")]
        for side in (True, False):
            taken = [ref for ref in data if _side(ref, states, keys).get(key) is side]
            if len(taken) != 1:
                raise UnsupportedOpError(f"{where}: Merge {merge!r} has {len(taken)} inputs on the "
                                         f"{'then' if side else 'else'} side; tractile raises two-way conditionals")
            outputs[side].append(taken[0])
    found: dict[bool, list[str]] = {}
    used: list[str] = []
    for side in (True, False):
        boundary = {tensor(s, int(side)): s for s in switches}
        found[side], reached = closure(graph, outputs[side], boundary, sides[side].__contains__,
                                       f"{where} ({'then' if side else 'else'} branch)")
        used += [s for s in reached if s not in used]
    used.sort(key=list(nodes).index)
    names = {s: arg_name(f"input_{k}", nodes) for k, s in enumerate(used)}
    args = [(names[s], nodes[s].attr["T"].type) for s in used]
    dtypes = [nodes[m].attr["T"].type for m in merges]
    then_name = state.function_name(scope or "cond", "then")
    else_name = state.function_name(scope or "cond", "else")
    for side, name in ((True, then_name), (False, else_name)):
        boundary = {tensor(s, int(side)): names[s] for s in switches if s in names}
        body = extract(graph, state.node_cls, found[side], boundary, args, list(zip(outputs[side], dtypes)))
        state.add_function(name, body)

    removed = set(switches) | sides[True] | sides[False]
    readers = graph.consumers()
    for source in removed:
        for reader, at in readers[source]:
            if reader not in removed and reader not in merges and not nodes[reader].input[at].startswith("^"):
                raise UnsupportedOpError(f"{where}: node {reader!r} reads {nodes[reader].input[at]!r} from inside "
                                         f"the conditional without a Merge; tractile cannot raise it")
    for merge in merges:
        for reader, at in readers[merge]:
            if split_ref(nodes[reader].input[at])[1] == 1:
                raise UnsupportedOpError(f"{where}: node {reader!r} reads the value_index of Merge {merge!r}; "
                                         f"tractile cannot raise it")
    op = state.node_cls()
    op.name, op.op = graph.unique_name(f"{scope}/If" if scope else "If"), "If"
    op.input.extend([canonical(nodes[switches[0]].input[1])] + [canonical(nodes[s].input[0]) for s in used])
    op.attr["Tcond"].type = DT_BOOL
    op.attr["Tin"].list.type.extend(t for _, t in args)
    op.attr["Tout"].list.type.extend(dtypes)
    op.attr["then_branch"].func.name = then_name
    op.attr["else_branch"].func.name = else_name
    op.attr["output_shapes"].list.SetInParent()
    for _ in dtypes:
        op.attr["output_shapes"].list.shape.add().unknown_rank = True
    from .control_v1 import as_identity

    for k, merge in enumerate(merges):
        as_identity(nodes[merge], tensor(op.name, k))
    graph.remove(removed, control_to=op.name)
    nodes[op.name] = op


def _side(ref: str, states: dict[str, State], keys: dict[str, str]) -> State:
    source, index = split_ref(ref)
    if source in keys:
        return {**states.get(source, {}), keys[source]: index == 1}
    return states.get(source, {})
