"""``tractile profile --compiled``: per-node time of the compiled model (a build with timers)."""
from __future__ import annotations

import json
import time

from .common import console


def profile_compiled(model, inputs: list, args) -> int:
    """Build ``model`` with per-node timers, run it ``--warmup`` + ``--iters`` times, print where time went."""
    from rich.table import Table

    from ..compile import compile_model

    needs_facts = any(not fact.is_concrete() for fact in model.input_facts)
    cm = compile_model(model, inputs=list(inputs) if needs_facts else None, optimize=needs_facts, profile=True)
    warm, timed = cm.state(), cm.state()
    for _ in range(args.warmup):
        warm.run(inputs)
    start = time.perf_counter()
    for _ in range(args.iters):
        timed.run(inputs)
    total = (time.perf_counter() - start) / args.iters
    seconds = timed.node_seconds() / args.iters
    typed = cm.model
    rows = []
    for step, code in enumerate(cm.source.program.nodes):
        node = typed.nodes[code.node_id]
        try:
            flops = node.op.cost([typed.outlet_fact(o) for o in node.inputs]).get("flops")
        except Exception:
            flops = None
        rows.append({"node": code.node_id, "name": code.name, "op": code.op, "kernel": code.kernel,
                     "seconds": float(seconds[step]), "flops": None if flops is None else int(flops)})
    if args.json:
        print(json.dumps({"model": args.model, "compiled": True, "seconds_per_run": total, "nodes": rows,
                          "memory": {k: v for k, v in cm.report.items() if k != "nodes"}}, indent=1))
        return 0
    in_nodes = sum(r["seconds"] for r in rows) or 1e-12
    ranked = sorted(rows, key=lambda r: -r["seconds"])[: args.top or len(rows)]
    table = Table(title=f"{args.model} compiled: per node, per run ({args.iters} timed runs after {args.warmup} "
                        "warm-up)", title_justify="left", pad_edge=False)
    for column, justify in (("#", "right"), ("name", "left"), ("op", "left"), ("kernel", "left"),
                            ("µs", "right"), ("share", "right"), ("GFLOP/s", "right")):
        table.add_column(column, justify=justify, overflow="fold")
    for row in ranked:
        rate = "" if not row["flops"] or row["seconds"] <= 0 else f"{row['flops'] / row['seconds'] / 1e9:.2f}"
        table.add_row(str(row["node"]), row["name"], row["op"], row["kernel"], f"{row['seconds'] * 1e6:.2f}",
                      f"{row['seconds'] / in_nodes:.1%}", rate)
    out = console()
    out.print(table)
    out.print(f"[bold]total[/bold] per run from Python: {total * 1e6:.2f} µs (nodes {in_nodes * 1e6:.2f} µs, "
              f"the rest is the call and input checks); arena {cm.report['arena_bytes']} B", markup=True)
    return 0
