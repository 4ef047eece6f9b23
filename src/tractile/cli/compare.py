"""``tractile compare``: tractile against a reference engine, per output and node by node."""
from __future__ import annotations

import argparse
import json

from ..errors import TractileError
from .common import add_compiled_argument, add_model_arguments, compile_for_inputs, console, escape, load_at_stage
from .profile import add_pulse_argument
from .run import make_inputs


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "compare", help="compare with onnxruntime (ONNX), TFLite's reference kernels or TensorFlow",
        description="Run tractile's optimized model and a reference engine on the same inputs (random "
                    "from the input facts, or --input) and print, per output, the largest absolute and "
                    "relative differences. Exit status 1 when a value is beyond the tolerance. With "
                    "--per-node, every intermediate value is compared too and the first node in "
                    "evaluation order whose output diverges is named.")
    add_model_arguments(parser)
    parser.add_argument("--with", dest="engine", choices=("onnxruntime", "tflite", "tensorflow"),
                        help="reference engine (default: onnxruntime for ONNX, tflite for TFLite files, "
                             "tensorflow for frozen .pb graphs and SavedModel folders)")
    parser.add_argument("--input", metavar="NPZ", help="input values (.npz by input name or arr_0.., or .npy)")
    parser.add_argument("--set", action="append", default=[], metavar="SYM=N",
                        help="value of a symbol for random inputs (e.g. --set N=1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance (default 1e-4)")
    parser.add_argument("--atol", type=float, default=1e-4, help="absolute tolerance (default 1e-4)")
    parser.add_argument("--exact", action="store_true",
                        help="integer and boolean values must be equal (quantized models against TFLite's "
                             "reference kernels); floats keep --rtol/--atol")
    parser.add_argument("--per-node", action="store_true",
                        help="compare every intermediate value and name the first node that diverges")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    add_pulse_argument(parser)
    add_compiled_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..tools import parse_pulse, pulsed_model
    from ..tools.compare import Tolerance, compare_streaming, compare_with_reference
    from ..tools.reference import check_engine_reads, default_engine

    engine = args.engine or default_engine(args.model)
    check_engine_reads(engine, args.model)
    tolerance = Tolerance(args.rtol, args.atol, args.exact)
    pulse = parse_pulse(args.pulse)
    if pulse and args.per_node:
        raise TractileError("--per-node compares the batch model: run it without --pulse")
    decluttered = load_at_stage(args, "declutter")
    optimized = decluttered.optimize()
    inputs = make_inputs(optimized, args)
    if pulse:
        report = compare_streaming(optimized, args.model, engine, inputs, pulsed_model(optimized, pulse), tolerance)
    else:
        runner = compile_for_inputs(optimized, inputs, args.compiled).run if args.compiled else None
        report = compare_with_reference(decluttered, args.model, engine, inputs, tolerance, args.per_node,
                                        optimized, runner=runner)
    if args.json:
        print(json.dumps(report.as_dict(), indent=1, default=str))
        return 0 if report.ok else 1
    print_report(report, args.model)
    return 0 if report.ok else 1


def print_report(report, model_name: str) -> None:
    """Per-output differences as a table, then the per-node verdict."""
    from rich.table import Table
    from rich.text import Text

    out = console()
    ours = "tractile (compiled)" if report.compiled else "tractile (optimized)"
    if report.stream:
        stream = report.stream
        ours = (f"tractile streaming {stream['symbol']} by {stream['pulse']} frames "
                f"(delay {', '.join(map(str, stream['delays']))} dropped)")
    out.print(f"{model_name}: {ours} vs {report.engine} ({report.tolerance})")
    table = Table(pad_edge=False)
    for column, justify in (("output", "left"), ("shape", "left"), ("max abs diff", "right"),
                            ("max rel diff", "right"), ("beyond tolerance", "right"), ("", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for item in report.outputs:
        verdict = Text.from_markup("[green]ok[/green]" if item.ok
                                   else f"[red]{escape(item.problem or 'DIFFERS')}[/red]")
        table.add_row(item.name, "x".join(map(str, item.shape)) or "scalar", f"{item.max_abs:.3g}",
                      f"{item.max_rel:.3g}", f"{item.mismatches} of {item.size}", verdict)
    out.print(table)
    for note in report.notes:
        out.print(f"note: {note}")
    for name in report.unmatched_outputs:
        out.print(f"[red]output {escape(repr(name))} has no counterpart in {report.engine}'s outputs[/red]",
                  markup=True)
    if report.per_node_stage is not None:
        out.print(f"per node: {report.wires_compared} intermediate value(s) compared at stage "
                  f"'{report.per_node_stage}' ({report.stage_reason})")
        divergence = report.divergence
        if divergence is None:
            out.print("[green]no node diverges[/green]", markup=True)
        else:
            reference_op = f", {divergence.reference_op} in {report.engine}" if divergence.reference_op else ""
            out.print(f"[red]first divergence[/red]: node #{divergence.node_id} [bold]{escape(divergence.node_name)}"
                      f"[/bold] ({escape(divergence.op + reference_op)}), output {escape(repr(divergence.wire))}",
                      markup=True)
            out.print(f"  {divergence.difference}")
            for fact in divergence.input_facts:
                out.print(f"  input {fact}")
            for item in divergence.inputs:
                state = "agrees" if item["ok"] else "differs"
                out.print(f"  input {item['wire']!r} {state} with the reference (max abs diff {item['max_abs']:.3g})")
    verdict = "[green]tractile agrees with the reference[/green]" if report.ok else \
        "[red]tractile differs from the reference[/red]"
    out.print(verdict)
