"""``tractile conformance``: the ONNX backend test suites (node cases and the model data suites) through
tractile."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from .common import console, escape

#: what follows this line in the coverage page is written by hand and kept when it is regenerated
HAND_WRITTEN = "<!-- written by hand below: kept by --coverage -->"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "conformance", help="run an ONNX conformance suite (from the onnx package)",
        description="Run the ONNX backend test cases the onnx package ships through load/analyse/optimize/run "
                    "and compare with the expected outputs at the suite's tolerance. --suite node (the "
                    "default) materialises the node test cases into a cache folder once; the model suites "
                    "(pytorch-converted, pytorch-operator, simple, light) are read where onnx installed them, "
                    "and their cases are named SUITE/CASE. Prints 'N passed, M failed of K'.")
    parser.add_argument("--suite", choices=SUITES, default="node",
                        help="which suite: node (default), " + ", ".join(SUITES[1:]))
    parser.add_argument("-k", "--filter", metavar="REGEX", help="only cases whose name matches")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--cache", type=Path, help="cache folder (default ~/.cache/tractile)")
    parser.add_argument("--failures", action="store_true", help="list every failing case with its reason")
    parser.add_argument("--write-expected", type=Path, metavar="FILE", help="write the passing case names")
    parser.add_argument("--check-expected", type=Path, metavar="FILE",
                        help="exit 1 if any case listed in FILE fails")
    parser.add_argument("--coverage", type=Path, metavar="MD", help="write failing cases by op as Markdown")
    parser.set_defaults(handler=run)


SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple", "light")


def run(args: argparse.Namespace) -> int:
    import onnx
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..formats.onnx.conformance import coverage_markdown, materialize, run_suite
    from ..formats.onnx.data_suites import case_name, run_data_case, suite_cases

    out = console()
    runner = None
    if args.suite == "node":
        with out.status("materialising the onnx node test cases (first run only)..."):
            folders = materialize(args.cache)
    else:
        folders, runner = suite_cases(args.suite), run_data_case
    if args.filter:
        pattern = re.compile(args.filter)
        folders = [f for f in folders if pattern.search(case_name(f))]
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[failed]} failed"))
    failed = 0
    with Progress(*columns, console=out, transient=True) as progress:
        task = progress.add_task(args.suite, total=len(folders), failed=0)

        def advance(result):
            nonlocal failed
            failed += not result.passed
            progress.update(task, advance=1, failed=failed)

        results = run_suite(folders, jobs=args.jobs, progress=advance, runner=runner)
    if args.suite != "node":
        for result in results:
            result.name = f"{args.suite}/{result.name}"
    passed = [r for r in results if r.passed]
    if args.failures:
        for result in results:
            if not result.passed:
                out.print(f"[red]FAIL[/red] {escape(result.name)}: {escape(result.reason)}", markup=True)
    if args.write_expected:
        args.write_expected.write_text("".join(f"{r.name}\n" for r in passed))
    if args.coverage:
        kept = args.coverage.read_text() if args.coverage.exists() else ""
        tail = kept[kept.index(HAND_WRITTEN):] if HAND_WRITTEN in kept else ""
        args.coverage.write_text(coverage_markdown(results, onnx.__version__) + ("\n" + tail if tail else ""))
    status = 0
    if args.check_expected:
        expected = {line.strip() for line in args.check_expected.read_text().splitlines() if line.strip()}
        by_name = {r.name: r for r in results}
        regressions = [by_name[n] for n in sorted(expected) if n in by_name and not by_name[n].passed]
        for result in regressions:
            out.print(f"[red]REGRESSION[/red] {escape(result.name)}: {escape(result.reason)}", markup=True)
        status = 1 if regressions else 0
    print(f"{len(passed)} passed, {len(results) - len(passed)} failed of {len(results)}")
    return status
