"""``tractile profile``: where the time goes, node by node and per op type."""
from __future__ import annotations

import argparse
import json

from ..errors import TractileError
from .common import add_model_arguments, console
from .run import make_inputs


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "profile", help="time every node of the optimized model over repeated runs",
        description="Run the optimized model on random inputs (from the input facts) or on --input, "
                    "--warmup times untimed then --iters times timed, and show the most time-consuming "
                    "nodes (real, user and system time per iteration, share, FLOPs and GFLOP/s where the "
                    "op can count them), the totals and the time per op type. Outliers are dropped.")
    add_model_arguments(parser)
    add_pulse_argument(parser)
    parser.add_argument("--input", metavar="NPZ", help="input values (.npz by input name or arr_0.., or .npy)")
    parser.add_argument("--set", action="append", default=[], metavar="SYM=N",
                        help="value of a symbol for random inputs (e.g. --set N=1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--warmup", type=int, default=3, metavar="N", help="untimed runs first (default 3)")
    parser.add_argument("--iters", type=int, default=20, metavar="N", help="timed runs (default 20)")
    parser.add_argument("--top", type=int, default=20, metavar="N", help="nodes to list (default 20; 0: all)")
    parser.add_argument("--json", action="store_true", help="print the whole profile as JSON")
    parser.add_argument("--plot", metavar="PNG", help="draw the time share per op type as a bar chart "
                                                      "(needs matplotlib: pip install 'tractile[viz]')")
    parser.add_argument("--compiled", nargs="?", const="full", choices=("full", "auto", "all"),
                        help="profile the model compiled to C (a build with per-node timers; needs a C compiler); "
                             "'--compiled auto': compiled segments inside the interpreter where they run faster "
                             "compiled (a table says which and why), each a node of the profile; '--compiled all': "
                             "every segment the compiler supports")
    parser.set_defaults(handler=run)


def add_pulse_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pulse", metavar="P",
                        help="work on the streaming form of the model, P frames per call along the streamed "
                             "axis: P, or SYM=P to name its symbol (default T, or the inputs' only symbol)")


def load_for_tools(args, stage: str = "optimize"):
    """The model at ``stage``, or the stateful typed model of its streaming form with --pulse."""
    from ..tools import parse_pulse, pulsed_typed_model
    from .common import load_at_stage

    pulse = parse_pulse(getattr(args, "pulse", None))
    if pulse is None:
        return load_at_stage(args, stage)
    return pulsed_typed_model(load_at_stage(args, "typed" if stage in ("load", "analyse") else stage), pulse)


def stderr_console():
    """A rich Console on standard error, for progress bars that must not mix with --json."""
    from rich.console import Console

    console()  # the clear error when rich is missing
    return Console(stderr=True)


def run(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..runtime.profile import profile

    if args.iters < 1 or args.warmup < 0:
        raise TractileError("--iters must be at least 1 and --warmup at least 0")
    model = load_for_tools(args)
    inputs = make_inputs(model, args)
    if args.compiled == "full":
        from .profile_compiled import profile_compiled

        return profile_compiled(model, inputs, args)
    if args.compiled in ("auto", "all"):
        from .common import compile_segments_for_inputs

        model = compile_segments_for_inputs(model, inputs, args.compiled,
                                            stderr_console() if args.json else console())
    err = stderr_console()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task("profiling", total=args.warmup + args.iters)

        def advance(done: int, total: int) -> None:
            label = "warming up" if done < args.warmup else "profiling"
            progress.update(task, completed=done, description=label)

        report = profile(model, inputs, warmup=args.warmup, iterations=args.iters, progress=advance)
    if args.plot:
        from ..tools.plot import plot_op_shares

        plot_op_shares(report, args.plot, title=f"{args.model}: time per op type")
    if args.json:
        data = report.as_dict()
        data["model"] = args.model
        data["stage"] = "pulsed" if args.pulse else "optimize"
        print(json.dumps(data, indent=1))
        return 0
    print_report(report, args.model, args.top)
    if args.plot:
        console().print(f"plot written to {args.plot}")
    return 0


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def _attributes_text(attributes: dict, limit: int = 60) -> str:
    text = ", ".join(f"{k}={v}" for k, v in attributes.items())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _count_text(count: float | None, suffix: str = "") -> str:
    if count is None:
        return ""
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if count >= scale:
            return f"{count / scale:.2f}{unit}{suffix}"
    return f"{count:.0f}{suffix}"


def print_report(report, model_name: str, top: int) -> None:
    """The profile as rich tables: slowest nodes, totals, time per op type."""
    from rich.table import Table

    out = console()
    total = report.real or 1e-12
    nodes = report.slowest(top or len(report.nodes))
    title = (f"{model_name}: {len(nodes)} most time-consuming of {len(report.nodes)} nodes "
             f"(per iteration; {report.iterations} timed runs after {report.warmup} warm-up)")
    table = Table(title=title, title_justify="left", pad_edge=False)
    for column, justify in (("#", "right"), ("name", "left"), ("op", "left"), ("real ms", "right"),
                            ("user ms", "right"), ("sys ms", "right"), ("share", "right"),
                            ("attributes", "left"), ("FLOPs", "right"), ("GFLOP/s", "right"),
                            ("moved", "right")):
        table.add_column(column, justify=justify, overflow="fold")
    for node in nodes:
        table.add_row(str(node.node_id), node.name, node.op, _ms(node.real), _ms(node.user), _ms(node.system),
                      f"{node.real / total:.1%}", _attributes_text(node.attributes), _count_text(node.flops),
                      "" if node.gflops is None else f"{node.gflops:.2f}", _count_text(node.bytes_moved, "B"))
    out.print(table)
    flops = sum(n.flops for n in report.nodes if n.flops is not None)
    achieved = f", {flops / total / 1e9:.2f} GFLOP/s overall" if flops else ""
    out.print(f"[bold]total[/bold] per iteration: real {_ms(report.real)} ms, user {_ms(report.user)} ms, "
              f"sys {_ms(report.system)} ms; {_count_text(flops) or 0} FLOPs{achieved}", markup=True)
    by_op = Table(title="time per op type", title_justify="left", pad_edge=False)
    for column, justify in (("op", "left"), ("nodes", "right"), ("real ms", "right"), ("share", "right")):
        by_op.add_column(column, justify=justify)
    for op, count, real in report.by_op():
        by_op.add_row(op, str(count), _ms(real), f"{real / total:.1%}")
    out.print(by_op)
