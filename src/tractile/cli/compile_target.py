"""``tractile compile --target MCU --verify / --project``: microcontroller builds in emulators."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import TractileError
from .common import console, escape


def _extra_inputs(model, path: str | None) -> list[list[np.ndarray]]:
    if not path:
        return []
    names = model.input_names()
    with np.load(path, allow_pickle=False) as data:
        keys = list(data.keys())
        if all(n in keys for n in names):
            arrays = [data[n] for n in names]
        elif all(f"arr_{i}" in keys for i in range(len(names))):
            arrays = [data[f"arr_{i}"] for i in range(len(names))]
        else:
            raise TractileError(f"{path}: inputs should be stored by name ({', '.join(names)}) or as arr_0..")
    facts = model.input_facts
    shaped = [a.astype(f.dtype.np).reshape(tuple(int(d) for d in f.shape)) if a.size == np.prod(
        [int(d) for d in f.shape]) else None for a, f in zip(arrays, facts)]
    if any(a is None for a in shaped):
        raise TractileError(f"{path}: the inputs do not have the model's shapes ({', '.join(map(str, facts))})")
    return [shaped]


def run_target(model, name: str, args) -> int:
    from ..compile import generate, prepare
    from ..compile.targets import board_for
    from ..compile.targets.verify import build_source, random_runs, verify_source, with_flavour

    board = board_for(args.target, args.board)
    extra = _extra_inputs(model, args.input)
    out = console()
    if args.project:
        from ..compile.targets.project import write_project

        typed = with_flavour(prepare(model), board.target.flavour)
        if args.max_ram is None:
            source = generate(typed, name=name, target=board.target, optimize=False, origin=Path(args.model).name,
                              inputs_in_arena=args.inputs_in_arena)
        else:
            from ..compile.budget import fit_ram_budget

            source = fit_ram_budget(typed, args.max_ram, name, board.target, origin=Path(args.model).name,
                                    inputs_in_arena=args.inputs_in_arena)
        if getattr(args, "harness", None):
            from ..compile.targets.mlperf import write_harness_project

            if args.build_system != "make":
                raise TractileError("the MLPerf Tiny harness project is built by make: drop --build-system")
            written = write_harness_project(source, board, args.project, args.harness_model, args.harness_api,
                                            stack=args.stack)
        else:
            sample = extra[0] if extra else random_runs([t.fact for t in source.program.inputs], 1, args.seed)[0]
            written = write_project(source, board, args.project, sample, args.build_system, Path(args.model).name,
                                    stack=args.stack)
        if args.report is not None and not args.verify:
            from .compile import write_report_page

            written.append(write_report_page(source, args))
        if not args.verify:
            what = "an MLPerf Tiny firmware project" if getattr(args, "harness", None) else "an example project"
            out.print(f"wrote {what} for {board.name} in {args.project} ({len(written)} files): "
                      + project_hint(args.project, args.build_system, board))
            return 0
    if not args.verify:
        return 0
    typed, source, board = build_source(model, args.target, args.board, name, max_ram=args.max_ram,
                                        inputs_in_arena=args.inputs_in_arena)
    report = verify_source(source, typed, board, runs=args.runs, inputs=extra, seed=args.seed,
                           opt="size" if args.opt == "size" else "speed", folder=args.out,
                           compare_unconstrained=args.max_ram is not None, stack=args.stack, both_opts=True)
    if args.report is not None:
        from .compile import write_report_page

        write_report_page(source, args, report)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0 if report["verified"] else 1
    print_verification(report, args.model)
    return 0 if report["verified"] else 1


def project_hint(folder: Path, build_system: str, board=None) -> str:
    """How to build and run the example project just written."""
    if build_system == "make":
        return f"cd {folder} && make run"
    if board is None:
        return f"cmake -S {folder} -B build && cmake --build build --target run"
    from ..compile.targets.cmake import toolchain_path

    return (f"cmake -S {folder} -B build-{board.name} -DCMAKE_TOOLCHAIN_FILE={toolchain_path(board)} "
            f"&& cmake --build build-{board.name} --target run (on this machine: cmake -S {folder} -B build && "
            "cmake --build build --target run)")


def print_verification(report: dict, model_name: str) -> None:
    from rich.table import Table

    out = console()
    verdict = "[green]bit-exact[/green]" if report["verified"] else "[red]DIFFERS[/red]"
    out.print(f"{escape(model_name)} on {report['board']} ({report['target']}): {report['inputs_checked']} inputs, "
              f"{verdict} against the interpreter", markup=True)
    if report["first_difference"]:
        out.print(f"[red]first difference[/red]: {escape(str(report['first_difference']))}", markup=True)
    flash, ram = report["flash_bytes"], report["ram_bytes"]
    deployable = ", ".join(f"{opt} {size} B" for opt, size in flash.get("deployable_by_opt", {}).items())
    out.print(f"flash: model {flash['model']} B; deployable firmware (model, kernels, startup, console; without the "
              f"{flash['inputs']} B of inputs baked in) {deployable or str(flash['deployable']) + ' B'}; "
              f"test firmware {flash['firmware']} B")
    out.print(f"RAM: arena {ram['arena']} B, state {ram['state']} B, context {ram['context']} B, "
              f"{'outputs' if report.get('inputs_in_arena') else 'inputs and outputs'} "
              f"{ram['io']} B, peak stack {ram['stack_peak']} B: total {ram['total']} B "
              f"(whole test firmware {ram['firmware']} B; stack linked {ram['stack_linked']} B, needed with a margin "
              f"{ram['stack_needed']} B)")
    counted = report["counted"].split(" (")[0]
    out.print(f"{report['cycles_per_inference']} {counted} per inference ({report['counted']})")
    from ..compile.report import budget_lines

    for line in budget_lines({"budget": report.get("budget")}):
        out.print(escape(line))
    base = report.get("unconstrained")
    if base and base["cycles_per_inference"]:
        out.print(f"without the budget: {base['cycles_per_inference']} {counted} per inference "
                  f"({report['cycles_per_inference'] / base['cycles_per_inference']:.2f}x with it), RAM total "
                  f"{base['ram_total']} B")
    table = Table(title="per layer, per inference", title_justify="left", pad_edge=False)
    for column, justify in (("#", "right"), ("name", "left"), ("op", "left"), ("kernel", "left"),
                            ("count", "right"), ("MACs", "right"), ("per MAC", "right")):
        table.add_column(column, justify=justify, overflow="fold")
    for layer in report["layers"]:
        table.add_row(str(layer["node"]), layer["name"], layer["op"], layer["kernel"], str(layer["count"]),
                      "" if layer["macs"] is None else str(layer["macs"]),
                      "" if layer["per_mac"] is None else f"{layer['per_mac']:.2f}")
    out.print(table)
