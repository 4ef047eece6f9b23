"""The compile report: where every byte goes, per model, per node and per planned tensor.

Everything here is read from the compiler's own plan (the lowered :class:`~.program.Program`
and its :class:`~.memory.MemoryPlan`): the page of ``tractile compile --report`` and the JSON
of ``--json`` draw the same figures the generated C uses.
"""
from __future__ import annotations

from .program import ARENA, OUTPUT, CTensor


def _placement(tensor, in_place: bool) -> str:
    if tensor.home is not None:
        return f"shares {tensor.home.var}"
    if tensor.storage == OUTPUT:
        return "output buffer"
    if tensor.storage != ARENA:
        return tensor.storage
    return "in place" if in_place else "arena"


def node_macs(typed, code) -> int | None:
    """Multiply-accumulates of one lowered node (a chain in bands counts its layers once), from the
    ops' own ``cost``; None when an op cannot say."""
    if typed is None:
        return None
    total = 0
    for node_id in code.members or (code.node_id,):
        node = typed.nodes[node_id]
        try:
            flops = node.op.cost([typed.outlet_fact(o) for o in node.inputs]).get("flops")
        except Exception:  # an op's cost may not handle every fact: the report just leaves it out
            return None
        if flops is None:
            return None
        total += int(flops) // 2
    return total


def build_report(source, typed=None) -> dict:
    """A dict with the model's memory figures, one entry per node and one per planned tensor
    (see docs/COMPILE.md). ``typed`` (the model lowered) gives the MACs of each node."""
    program, plan = source.program, source.plan
    io_bytes = sum(t.nbytes for t in program.inputs if not t.arena_input) + sum(t.nbytes for t in program.outputs)
    nodes = []
    for step, code in enumerate(program.nodes):
        in_place = id(code) in plan.in_place
        shared = any(alias.shared for alias in code.aliases)
        outputs = code.outputs
        entry = {
            "node": code.node_id,
            "step": step,
            "name": code.name,
            "op": code.op,
            "kernel": code.kernel or "-",
            "constants_bytes": code.constants_bytes,
            "macs": node_macs(typed, code),
            "outputs": [{"var": t.var, "bytes": t.nbytes, "offset": t.offset if t.storage == ARENA else None,
                         "placement": "alias" if shared else _placement(t, in_place)} for t in outputs],
            "scratch_bytes": sum(t.nbytes for t in code.scratch),
            "in_place": in_place,
            "members": list(code.members),
        }
        nodes.append(entry)
    tensors = plan_tensors(program)
    return {
        "name": program.name,
        "target": source.target.name,
        "arena_bytes": plan.arena_bytes,
        "lower_bound_bytes": plan.lower_bound_bytes,
        "no_reuse_bytes": plan.no_reuse_bytes,
        "state_bytes": program.state_bytes,
        "constants_bytes": sum(t.nbytes for t, _ in program.constants if t.used)
        + sum(t.nbytes for t in program.tensors if t.storage == "const" and t.used
              and all(t is not c for c, _ in program.constants)),
        "io_bytes": io_bytes,
        "inputs_in_arena": program.inputs_in_arena,
        "planner": plan.strategy,
        "in_place_nodes": plan.overlaps_used,
        "dead_channels_removed": typed.properties.get("dead_channels_removed", 0) if typed is not None else 0,
        "peak": arena_peak(tensors, len(program.nodes)),
        "inputs": [_io_entry(t, name) for t, name in zip(program.inputs, program.input_names)],
        "outputs": [_io_entry(t, name) for t, name in zip(program.outputs, program.output_names)],
        "state": [{"var": f.var, "dtype": str(f.dtype), "count": f.count, "bytes": f.nbytes} for f in program.state],
        "macros": {key: value for key, (value, _) in program.macros.items()},
        "bands": [{"nodes": list(chain.nodes), "rows": chain.rows} for chain in program.chains],
        "nodes": nodes,
        "tensors": tensors,
    }


def _io_entry(tensor: CTensor, name: str) -> dict:
    return {"name": name, "var": tensor.var, "dtype": str(tensor.dtype), "shape": list(tensor.shape),
            "bytes": tensor.nbytes, "in_arena": tensor.arena_input}


def planned(tensor: CTensor) -> bool:
    """Whether the planner gave ``tensor`` bytes of its own in the arena (at ``tensor.offset``)."""
    return tensor.storage == ARENA and tensor.home is None and tensor.offset is not None


def plan_tensors(program) -> list[dict]:
    """Every tensor the arena holds, in order of definition: its bytes, offset, lifetime (steps of
    the evaluation order), the node that makes it, the nodes that read it, and how it is placed
    (an alias of the tensor whose bytes it shares, over an input that dies where it is made, a
    node's scratch buffer, a model input, or bytes of its own)."""
    producer: dict[int, int] = {}
    consumers: dict[int, list[int]] = {}
    roles: dict[int, str] = {}
    aliases: dict[int, CTensor] = {}
    for step, code in enumerate(program.nodes):
        for tensor in code.outputs:
            producer.setdefault(id(tensor), step)
        for tensor in code.scratch:
            producer.setdefault(id(tensor), step)
            roles[id(tensor)] = "scratch"
        for tensor in code.inputs:
            steps = consumers.setdefault(id(tensor), [])
            if step not in steps:
                steps.append(step)
        for alias in code.aliases:
            if alias.shared:
                aliases[id(alias.target)] = alias.source
    entries = []
    for tensor in sorted((t for t in program.tensors if planned(t)), key=lambda t: (t.first, t.offset)):
        made_at = producer.get(id(tensor))
        role = "input" if tensor.arena_input else roles.get(id(tensor), "value")
        entries.append({
            "var": tensor.var, "dtype": str(tensor.dtype), "shape": list(tensor.shape), "bytes": tensor.nbytes,
            "offset": tensor.offset, "first": max(tensor.first, 0), "last": max(tensor.last, tensor.first, 0),
            "producer": made_at, "consumers": consumers.get(id(tensor), []), "role": role,
            "placement": _where(program, tensor, made_at, role, aliases.get(id(tensor))),
        })
    return entries


def _overlaps(a: CTensor, b: CTensor) -> bool:
    assert a.offset is not None and b.offset is not None
    return a.offset < b.offset + b.nbytes and b.offset < a.offset + a.nbytes and a.nbytes > 0 and b.nbytes > 0


def _where(program, tensor: CTensor, step: int | None, role: str, source: CTensor | None) -> str:
    if role == "input":
        return "model input, planned in the arena"
    if role == "scratch":
        return "scratch buffer of its node"
    if source is not None:
        return f"alias of {source.var} (same bytes, another shape)"
    if step is not None:
        over = [t.var for t in program.nodes[step].inputs
                if planned(t) and t.last == step and t is not tensor and _overlaps(t, tensor)]
        if over:
            return f"in place over {', '.join(dict.fromkeys(over))} (which dies here)"
    return "arena"


def arena_peak(tensors: list[dict], steps: int) -> dict:
    """The step where the most arena bytes are in use (the union of the live tensors' bytes at
    their offsets: in-place overlaps and aliases count once), first such step on ties."""
    best = {"step": 0, "bytes": 0}
    for step in range(steps):
        spans = sorted((t["offset"], t["offset"] + t["bytes"]) for t in tensors if t["first"] <= step <= t["last"])
        used, end = 0, 0
        for start, stop in spans:
            if stop > end:
                used += stop - max(start, end)
                end = stop
        if used > best["bytes"]:
            best = {"step": step, "bytes": used}
    return best


def report_table(report: dict) -> list[list[str]]:
    """Rows of the per-node table: node, op, kernel, constant bytes, output offset and size, placement."""
    rows = []
    for entry in report["nodes"]:
        for index, output in enumerate(entry["outputs"]):
            first = index == 0
            offset = "" if output["offset"] is None else str(output["offset"])
            rows.append([
                f"#{entry['node']} {entry['name']}" if first else "",
                entry["op"] if first else "",
                entry["kernel"] if first else "",
                str(entry["constants_bytes"]) if first and entry["constants_bytes"] else "",
                offset,
                str(output["bytes"]),
                output["placement"],
            ])
    return rows


def budget_lines(report: dict) -> list[str]:
    """What a RAM budget (``--max-ram``) made of the model: the schedule and its estimated price."""
    budget = report.get("budget")
    if not budget:
        return []
    kinds = {"rows": "by rows, {rows} a step", "bands": "in bands of {rows} rows"}
    parts = [f"nodes {', '.join(f'#{n}' for n in part['nodes'])} " + kinds[part["kind"]].format(rows=part["rows"])
             if part["kind"] in kinds else "branches reordered" for part in budget["schedule"]]
    return [f"budget {budget['max_ram']} B: {'; '.join(parts) or 'no layer split'} (without the budget "
            f"{budget['unconstrained_ram']} B; about {budget['estimated_added_instructions']} instructions more)"]


def summary_lines(report: dict) -> list[str]:
    return budget_lines(report) + [
        f"arena {report['arena_bytes']} B ({report['planner']}; lower bound {report['lower_bound_bytes']} B, "
        f"without reuse {report['no_reuse_bytes']} B)",
        f"state {report['state_bytes']} B, constants {report['constants_bytes']} B, "
        f"{'outputs' if report.get('inputs_in_arena') else 'inputs and outputs'} {report['io_bytes']} B"
        + (" (inputs in the arena)" if report.get("inputs_in_arena") else ""),
    ] + ([f"{report['dead_channels_removed']} constant channels removed (their weights and bytes; "
          "folded into the layers that read them)"] if report.get("dead_channels_removed") else [])
