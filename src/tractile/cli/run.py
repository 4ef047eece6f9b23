"""``tractile run``: run a model on given or random inputs."""
from __future__ import annotations

import argparse
import time

import numpy as np

from ..errors import TractileError
from ..runtime.dynamic import DynamicModel
from .common import (
    add_compiled_argument,
    add_model_arguments,
    compile_for_inputs,
    console,
    escape,
    load_at_stage,
    parse_bindings,
    random_inputs,
    report_mismatches,
    summarize,
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "run", help="run a model on given or random inputs",
        description="Run the optimized model once on inputs from --input (an .npz by input name, or "
                    "arr_0, arr_1... by position) or on random inputs made from the input facts, and "
                    "print a summary of each output. With --assert-output, compare with expected "
                    "outputs and exit with status 1 on a mismatch.")
    add_model_arguments(parser)
    parser.add_argument("--input", metavar="NPZ", help="input values (.npz, or .npy for a single input)")
    parser.add_argument("--set", action="append", default=[], metavar="SYM=N",
                        help="value of a symbol for random inputs (e.g. --set N=1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument("--assert-output", metavar="NPZ", help="expected outputs (.npz by name or position)")
    parser.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance for --assert-output")
    parser.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance for --assert-output")
    parser.add_argument("--save-output", metavar="NPZ", help="write the outputs to an .npz")
    add_compiled_argument(parser)
    parser.set_defaults(handler=run)


def _load_arrays(path: str, names: list[str], what: str) -> list[np.ndarray]:
    if path.endswith(".npy"):
        return [np.load(path, allow_pickle=False)]
    with np.load(path, allow_pickle=False) as data:
        keys = list(data.keys())
        if all(name in keys for name in names):
            return [data[name] for name in names]
        positional = [f"arr_{i}" for i in range(len(names))]
        if all(key in keys for key in positional):
            return [data[key] for key in positional]
        raise TractileError(f"{path}: {what} should be stored by name ({', '.join(names)}) or as "
                            f"arr_0..arr_{len(names) - 1}; found {', '.join(keys)}")


def make_inputs(model, args, out=None) -> list[np.ndarray]:
    """The inputs from --input, or random ones of the input facts' shapes. With ``out``, dims no
    fact fixes (symbols without --set, unknown dims) take example values, which ``out`` is
    told; without it, they are an error naming them."""
    names = model.input_names()
    if args.input:
        return _load_arrays(args.input, names, "inputs")
    rng = np.random.default_rng(args.seed)
    bindings = parse_bindings(args.set)
    chosen: dict[str, int] = {}
    inputs = random_inputs(model, rng, bindings, chosen if out is not None else None)
    if chosen and out is not None:
        shown = ", ".join(f"{name}={value}" for name, value in chosen.items())
        out.print(f"dims   {escape(shown)} chosen for the random inputs (others: --set SYMBOL=N, or -i NAME=FACT)")
    return inputs


def compare_outputs(names, got, expected, rtol, atol) -> list[str]:
    """Messages for every output that differs (empty when all match)."""
    problems = []
    for name, value, reference in zip(names, got, expected):
        if value.shape != reference.shape:
            problems.append(f"output {name!r}: shape {value.shape}, expected {reference.shape}")
            continue
        if value.dtype.kind in "OUS" or reference.dtype.kind in "OUS":
            if not np.array_equal(value, reference):
                problems.append(f"output {name!r}: values differ")
            continue
        a, b = value.astype(np.float64), reference.astype(np.float64)
        diff = np.abs(a - b)
        bad = ~(diff <= atol + rtol * np.abs(b))
        bad &= ~(np.isnan(a) & np.isnan(b))
        if bad.any():
            worst = np.unravel_index(np.argmax(np.where(bad, diff, -1)), diff.shape)
            problems.append(f"output {name!r}: {int(bad.sum())} of {bad.size} values differ; largest "
                            f"difference {diff[worst]:.6g} at {tuple(int(i) for i in worst)} "
                            f"(got {a[worst]:.6g}, expected {b[worst]:.6g}; rtol {rtol}, atol {atol})")
    return problems


def run(args: argparse.Namespace) -> int:
    out = console()
    model = load_at_stage(args, "optimize", dynamic=True)
    inputs = make_inputs(model, args, out)
    for name, value in zip(model.input_names(), inputs):
        out.print(f"input  [bold]{escape(name)}[/bold]: {summarize(value)}", markup=True)
    if isinstance(model, DynamicModel):
        start = time.perf_counter()
        typed = model.typed_for(inputs)
        out.print(f"typed  for these inputs ({escape(model.plans[-1][0])}) in "
                  f"{(time.perf_counter() - start) * 1000:.0f} ms: analysis needs them (a rank or a shape depends "
                  "on them)")
        runner = compile_for_inputs(typed, inputs, args.compiled) if args.compiled else model.state()
    else:
        runner = compile_for_inputs(model, inputs, args.compiled) if args.compiled else model.plan().state()
    start = time.perf_counter()
    outputs = runner.run(inputs)
    elapsed = time.perf_counter() - start
    names = model.output_names()
    for name, value in zip(names, outputs):
        out.print(f"output [bold]{escape(name)}[/bold]: {summarize(value)}", markup=True)
    out.print(f"ran in {elapsed * 1000:.3f} ms" + (f" (compiled: {args.compiled})" if args.compiled else ""))
    if args.save_output:
        np.savez(args.save_output, **dict(zip(names, outputs)))
    if args.assert_output:
        expected = _load_arrays(args.assert_output, names, "expected outputs")
        problems = compare_outputs(names, outputs, expected, args.rtol, args.atol)
        return report_mismatches(out, problems, f"all {len(names)} output(s) match")
    return 0
