"""``tractile batch``: run a model over many files, resumable, locally or on Ray."""
from __future__ import annotations

import argparse

from ..formats.detect import FORMATS
from .common import console, escape, parse_fact_args, printable

DESCRIPTION = """\
Run a model over every input file matching --inputs (.npy; .npz by input name; .wav/.flac
audio; images), writing one result file per input (outputs by name, .npz, written atomically)
under --out, mirroring the input tree, and a manifest (OUT/manifest.jsonl: input, output,
status, error, seconds). A rerun skips inputs whose results exist and load, so an interrupted
job resumes; inputs that failed are kept failed unless --retry-failed. --pulse P pushes long
inputs through the streaming form of the model, P frames at a time, in constant memory.
--engine ray runs on a Ray cluster (a local one unless --ray-address); see docs/BATCH.md."""


def register(subparsers) -> None:
    parser = subparsers.add_parser("batch", help="run a model over many files (resumable; local or Ray)",
                                   description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help=f"model file: {FORMATS}")
    parser.add_argument("--inputs", required=True, action="append", metavar="GLOB",
                        help="input files, a glob ('data/**/*.npy' recurses); repeat for several")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder of the results and the manifest")
    parser.add_argument("-i", "--input-fact", action="append", default=[], metavar="FACT",
                        help="fact of an input, e.g. '1,T,f32' (symbols stay symbolic); repeat per input")
    parser.add_argument("--batch-size", type=int, default=1, metavar="B", help="files per task (default 1)")
    parser.add_argument("--workers", type=int, default=1, metavar="W",
                        help="worker processes (local) or actors (ray), each with one loaded model (default 1)")
    parser.add_argument("--pulse", type=int, metavar="P", help="stream each input through the pulsed model, "
                                                                "P frames per push")
    parser.add_argument("--symbol", help="the streamed symbol with --pulse (default: T, or the only one)")
    parser.add_argument("--engine", choices=("local", "ray"), default="local", help="where to run (default local)")
    parser.add_argument("--ray-address", metavar="ADDR", help="a Ray cluster to join (default: start a local one)")
    parser.add_argument("--retry-failed", action="store_true", help="run again the inputs that failed before")
    parser.set_defaults(handler=run)


def run(args) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    from ..batch import run as run_batch

    out = console()
    facts = parse_fact_args(args.input_fact)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), console=out, transient=True) as bar:
        task = bar.add_task("running", total=None, rate="")

        def progress(finished: int, total: int, record: dict) -> None:
            elapsed = bar.tasks[0].elapsed or 0.0
            rate = f"{finished / elapsed:.1f} files/s" if elapsed > 0 else ""
            failed = f"[red]{escape(printable(record['input']))} failed"
            bar.update(task, total=total, completed=finished, rate=rate,
                       description=failed if record["status"] == "failed" else "running")

        summary = run_batch(args.model, args.inputs, args.out, input_facts=list(facts) if isinstance(facts, list)
                            else [f"{k}={v}" for k, v in facts.items()], batch_size=args.batch_size,
                            workers=args.workers, pulse=args.pulse, symbol=args.symbol, engine=args.engine,
                            ray_address=args.ray_address, retry_failed=args.retry_failed, progress=progress)
    table = Table(title=f"{args.model} over {summary.found} input files ({args.engine}, {args.workers} worker(s))",
                  title_justify="left")
    for column in ("done now", "failed now", "done before", "failed before (kept)", "seconds", "files/s"):
        table.add_column(column, justify="right")
    table.add_row(str(summary.done), str(summary.failed), str(summary.skipped_done), str(summary.skipped_failed),
                  f"{summary.seconds:.2f}", f"{summary.files_per_second:.1f}")
    out.print(table)
    for record in summary.failures[:10]:
        error = record["error"] or ""
        shown = error if error.startswith(record['input']) else record['input'] + ': ' + error
        out.print(f"[red]failed[/red] {escape(shown)}", markup=True)
    if len(summary.failures) > 10:
        out.print(f"... and {len(summary.failures) - 10} more (see {args.out}/manifest.jsonl)")
    out.print(f"results and manifest in {args.out}")
    return 1 if summary.failed else 0
