"""The compile report: where every byte goes, per model and per node."""
from __future__ import annotations

from .program import ARENA, OUTPUT


def _placement(tensor, in_place: bool) -> str:
    if tensor.home is not None:
        return f"shares {tensor.home.var}"
    if tensor.storage == OUTPUT:
        return "output buffer"
    if tensor.storage != ARENA:
        return tensor.storage
    return "in place" if in_place else "arena"


def build_report(source) -> dict:
    """A dict with the model's memory figures and one entry per node (see docs/COMPILE.md)."""
    program, plan = source.program, source.plan
    io_bytes = sum(t.nbytes for t in program.inputs if not t.arena_input) + sum(t.nbytes for t in program.outputs)
    nodes = []
    for code in program.nodes:
        in_place = id(code) in plan.in_place
        shared = any(alias.shared for alias in code.aliases)
        outputs = code.outputs
        entry = {
            "node": code.node_id,
            "name": code.name,
            "op": code.op,
            "kernel": code.kernel or "-",
            "constants_bytes": code.constants_bytes,
            "outputs": [{"var": t.var, "bytes": t.nbytes, "offset": t.offset if t.storage == ARENA else None,
                         "placement": "alias" if shared else _placement(t, in_place)} for t in outputs],
            "scratch_bytes": sum(t.nbytes for t in code.scratch),
            "in_place": in_place,
        }
        nodes.append(entry)
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
        "nodes": nodes,
    }


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
    ]
