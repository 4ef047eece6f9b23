"""``tractile dump``: the graph at a chosen pipeline stage."""
from __future__ import annotations

import argparse
import json

from .common import STAGES, add_model_arguments, console, escape
from .profile import add_pulse_argument, load_for_tools


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "dump", help="show the graph: nodes, ops, attributes, wires and facts",
        description="Load a model, run the pipeline up to --pass, and print every node with its op, "
                    "attributes, input wires and output facts.")
    add_model_arguments(parser)
    parser.add_argument("--pass", dest="stage", choices=STAGES, default="optimize",
                        help="stop the pipeline after this stage (default: optimize)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--html", metavar="FILE",
                        help="write an interactive page of the graph (one self-contained HTML file: groups by "
                             "name scope, facts on the edges, details on click; needs kiwisolver: "
                             "pip install 'tractile[viz]')")
    add_pulse_argument(parser)
    parser.set_defaults(handler=run)


def _jsonable(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def describe(model) -> dict:
    """The graph as plain data (what --json prints)."""
    nodes = []
    for node in model.nodes:
        nodes.append({
            "id": node.id,
            "name": node.name,
            "op": node.op.name,
            "attributes": _jsonable(node.op.attributes()) if hasattr(node.op, "attributes") else {},
            "inputs": [f"{o.node}/{o.slot}" for o in node.inputs],
            "outputs": [str(o.fact) for o in node.outputs],
        })
    return {
        "kind": type(model).__name__,
        "inputs": [{"name": model.nodes[o.node].name, "fact": str(model.outlet_fact(o))} for o in model.inputs],
        "outputs": [{"name": model.outlet_label(o), "wire": f"{o.node}/{o.slot}", "fact": str(model.outlet_fact(o))}
                    for o in model.outputs],
        "nodes": nodes,
    }


def run(args: argparse.Namespace) -> int:
    model = load_for_tools(args, args.stage)
    if args.html:
        from ..tools.html_graph import write_html

        stage = f"{args.stage}, pulsed {args.pulse}" if args.pulse else args.stage
        with console().status("laying the graph out..."):
            written = write_html(model, args.html, title=args.model, stage=stage)
        groups = f"{written.groups} group{'s' if written.groups != 1 else ''}"
        console().print(f"wrote {written.path}: {written.nodes} nodes, {written.edges} edges, {groups} "
                        f"({written.bytes / 1e6:.1f} MB)")
        return 0
    data = describe(model)
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    from rich.table import Table

    out = console()
    pulsed = f", pulsed by {args.pulse}" if args.pulse else ""
    table = Table(title=f"{args.model} at stage '{args.stage}'{pulsed} ({len(data['nodes'])} nodes)",
                  title_justify="left", show_lines=False, pad_edge=False)
    for column in ("#", "name", "op", "attributes", "inputs", "output facts"):
        table.add_column(column, overflow="fold")
    for node in data["nodes"]:
        attrs = ", ".join(f"{k}={v}" for k, v in node["attributes"].items())
        table.add_row(str(node["id"]), node["name"], node["op"], attrs, " ".join(node["inputs"]),
                      "\n".join(node["outputs"]))
    out.print(table)
    for item in data["inputs"]:
        out.print(f"input  [bold]{escape(item['name'])}[/bold]: {escape(item['fact'])}", markup=True)
    for item in data["outputs"]:
        out.print(f"output [bold]{escape(item['name'])}[/bold] ({escape(item['wire'])}): {escape(item['fact'])}",
                  markup=True)
    return 0
