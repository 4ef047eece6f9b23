"""``tractile compile``: lower a model to C99 with statically planned memory."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import TractileError
from ..formats.detect import FORMATS
from ..runtime.dynamic import DynamicModel
from .common import add_value_argument, console, parse_fact_args, parse_value_args

DESCRIPTION = """\
Lower a model (ONNX or TFLite) whose shapes are concrete to portable C99: NAME.h (the context
type, NAME_init / NAME_reset / NAME_invoke, macros for every input and output), NAME.c
(constants pre-processed on the host, one kernel call per node) and the kernel headers it
uses. Every byte of RAM is planned: prints the arena, its lower bound, the state and the
constants, and one row per node (use --json for a machine-readable report).
See docs/COMPILE.md for how to use the files in a C project."""


def register(subparsers) -> None:
    parser = subparsers.add_parser("compile", help="compile a model to C99 with static memory",
                                   description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", help=f"model file: {FORMATS}")
    parser.add_argument("-o", "--out", type=Path, metavar="DIR", help="folder to write the C files into")
    parser.add_argument("-i", "--input-fact", action="append", default=[], metavar="FACT",
                        help="fact of an input, e.g. '1,40,100,f32' (in input order) or 'name=1,40,100,f32'; "
                             "every symbol must get a value. Repeat per input.")
    add_value_argument(parser)
    parser.add_argument("--name", default=None, help="C prefix of the generated names (default: the file's stem)")
    parser.add_argument("--opt", choices=("speed", "size"), default="speed",
                        help="what --build optimizes for (-O3 -march=native, or -Os); default speed")
    parser.add_argument("--target", default="host",
                        help="host (default), cortex-m0, cortex-m3, cortex-m4, cortex-m7, riscv32 or avr: C "
                             "tuned for it (AVR: constants in program memory; microcontrollers: TFLite Micro's "
                             "integer arithmetic)")
    parser.add_argument("--board", help="emulated board for --verify/--project (default: the target's; "
                                        "microbit, lm3s6965evb, mps2-an385, mps2-an386, mps2-an500, virt-rv32, "
                                        "atmega328p)")
    parser.add_argument("--verify", action="store_true",
                        help="build a test firmware, run it in the board's emulator (QEMU, simavr) on random inputs "
                             "(and --input), compare every output bit for bit with the interpreter, and report "
                             "flash (the deployable firmware's at -O2 and -Os apart from the inputs baked in), RAM, "
                             "stack and instructions or cycles; exit 1 on a difference")
    parser.add_argument("--runs", type=int, default=20, metavar="N", help="random inputs for --verify (default 20)")
    parser.add_argument("--input", metavar="NPZ", help="inputs to verify first (.npz by input name or arr_0..)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--project", type=Path, metavar="DIR",
                        help="write a minimal example project for the board, or this machine for the host target "
                             "(build files, startup and linker script for a board, main.c running the model on a "
                             "sample input and printing its outputs)")
    parser.add_argument("--build-system", choices=("make", "cmake"), default="make",
                        help="what builds --project: a Makefile (default), or CMake: the model as a static "
                             "library target NAME (add_subdirectory + target_link_libraries in your project), an "
                             "example for the host, and for a board its firmware and a GNU tool chain file")
    parser.add_argument("--harness", choices=("mlperf-tiny",),
                        help="with --project and a Cortex-M target: a firmware for a benchmark's own runner instead "
                             "of the example; mlperf-tiny implements MLPerf Tiny's submitter API (serial port on the "
                             "board's UART, timer, th_load_tensor, th_infer, th_results) and links its API sources")
    parser.add_argument("--harness-model", choices=("kws01", "vww01", "ic01", "ad01"),
                        help="the MLPerf Tiny model version the firmware reports (default: from the model's input "
                             "shape)")
    parser.add_argument("--harness-api", type=Path, metavar="PATH",
                        help="MLPerf Tiny's API folder (benchmark/ of mlcommons/tiny, holding api/; default "
                             "../shared/mlperf_tiny_api): referenced from the Makefile, not copied")
    parser.add_argument("--build", action="store_true",
                        help="also build the sources with the system C compiler (host target)")
    parser.add_argument("--pulse", metavar="P",
                        help="compile the streaming form: P frames of the streamed axis (SYM=P to name its symbol, "
                             "default T) per invoke, delay lines as ring buffers in the context; the header gives "
                             "NAME_PULSE and NAME_DELAY")
    parser.add_argument("--max-ram", type=int, metavar="BYTES",
                        help="a RAM budget: arena, state and input/output buffers must fit in BYTES (layers overlap "
                             "their inputs as finely as their kernels allow, and chains of convolutions run in bands "
                             "of rows when that is not enough); otherwise fail saying the smallest RAM reached and "
                             "where memory peaks")
    parser.add_argument("--stack", type=int, metavar="BYTES",
                        help="bytes of stack for --verify/--project firmwares (default: all the RAM the verification "
                             "firmware leaves free, and for --project what it uses plus a margin); the stack lies "
                             "below .data/.bss, so an overflow faults and is reported instead of corrupting memory")
    parser.add_argument("--inputs-in-arena", action="store_true",
                        help="plan the inputs in the arena like intermediate values (less RAM: layers overlap "
                             "them); NAME_INPUTi_IN(ctx) gives their address, other buffers are copied there")
    parser.add_argument("--report", type=Path, metavar="HTML",
                        help="write the compile report as one self-contained HTML page: summary, the memory plan "
                             "drawn, the per-layer table (with --verify: flash, code per kernel family, stack, "
                             "instructions per layer; for TFLite models: TFLite Micro's arena when tflite-micro is "
                             "installed)")
    parser.add_argument("--json", action="store_true", help="print the compile report as JSON")
    parser.set_defaults(handler=run)


def write_report_page(source, args, verification: dict | None = None) -> Path:
    """``--report``: the page of ``source``, with TFLite Micro's arena for a TFLite model compiled as it is."""
    from ..formats.detect import detect_format

    tflite = args.model if not args.pulse and detect_format(args.model) == "tflite" else None
    source.report_html(args.report, verification=verification, tflite=tflite, origin=Path(args.model).name)
    return args.report


def run(args) -> int:
    from .. import load
    from ..compile import generate
    from ..compile.ctext import program_name
    from ..compile.report import report_table, summary_lines

    name = program_name(args.name or Path(args.model).stem)
    model = load(args.model, inputs=parse_fact_args(args.input_fact), values=parse_value_args(args.value))
    if isinstance(model, DynamicModel):
        raise TractileError(f"compiling needs the model typed when loading, and {model.reason}: give the inputs' "
                            "facts with -i NAME=FACT (and --value NAME=VALUE for inputs that decide an If)")
    macros = None
    if args.pulse:
        from ..pulse.symbol import stream_symbol
        from .stream import _pulse_option

        symbol, size = _pulse_option(args.pulse, None)
        pulsed = model.pulse(stream_symbol(model, symbol), size)
        macros = {"PULSE": (pulsed.pulse, f"frames of {pulsed.symbol} each invoke consumes"),
                  "DELAY": (pulsed.delay, "frames the outputs lag behind the inputs")}
        model = pulsed.model
    if args.harness and (args.project is None or args.target == "host"):
        raise TractileError("--harness writes a firmware project: give --project DIR and a --target with a board")
    if args.target != "host" and (args.verify or args.project):
        from .compile_target import run_target

        return run_target(model, name, args)
    if args.max_ram is not None:
        from ..compile import prepare
        from ..compile.budget import fit_ram_budget

        source = fit_ram_budget(prepare(model), args.max_ram, name, args.target, origin=Path(args.model).name,
                                macros=macros, inputs_in_arena=args.inputs_in_arena)
    else:
        source = generate(model, name=name, target=args.target, optimize=False, origin=Path(args.model).name,
                          macros=macros, inputs_in_arena=args.inputs_in_arena)
    written = source.write(args.out) if args.out is not None else []
    if args.project is not None:
        from ..compile.targets.project import write_project
        from ..compile.targets.verify import random_runs

        sample = random_runs([t.fact for t in source.program.inputs], 1, args.seed)[0]
        written += write_project(source, None, args.project, sample, args.build_system, Path(args.model).name)
    if args.report is not None:
        written.append(write_report_page(source, args))
    if args.build:
        from ..compile.host import build_shared_library
        from ..compile.host_files import host_build_files

        library = build_shared_library(host_build_files(source), source.name, args.opt)
        source.report["library"] = str(library)
    if args.json:
        print(json.dumps({**source.report, "files": [str(p) for p in written]}, indent=2))
        return 0
    out = console()
    from rich.table import Table

    table = Table(title=f"{args.model} compiled as {source.name} ({source.target.name})", title_justify="left")
    for column in ("node", "op", "kernel", "const B", "offset", "bytes", "placement"):
        table.add_column(column, justify="right" if column in ("const B", "offset", "bytes") else "left")
    for row in report_table(source.report):
        table.add_row(*row)
    out.print(table)
    for line in summary_lines(source.report):
        out.print(line)
    if written:
        out.print("wrote " + ", ".join(str(p) for p in written))
    else:
        out.print("(nothing written: give -o DIR to write the C files)")
    if args.project is not None:
        from .compile_target import project_hint

        out.print("build and run the example: " + project_hint(args.project, args.build_system))
    if args.build:
        out.print(f"built {source.report['library']}")
    return 0
