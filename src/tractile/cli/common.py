"""Shared CLI plumbing: loading a model up to a pipeline stage, facts from -i, output."""
from __future__ import annotations

import argparse
import re
import sys

import numpy as np

from ..errors import TractileError
from ..fact import InferenceFact
from ..formats.detect import FORMATS

STAGES = ("load", "analyse", "typed", "declutter", "optimize")


#: characters a terminal acts on (C0 controls but line feed and tab, DEL, C1 controls)
_TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every terminal control character (ESC, CR, BEL...) shown as ``\\xNN``: a
    model's names cannot move the cursor, retitle the terminal or overwrite earlier lines."""
    return _TERMINAL_CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def escape(value) -> str:
    """``value`` as text for a rich markup string: its brackets shown, not interpreted."""
    from rich.markup import escape as escape_markup

    return escape_markup(str(value))


def console():
    """A rich Console, or a clear error if the cli extra is missing.

    Markup is off unless a print asks for it (``markup=True``, with model text passed through
    :func:`escape`), and every string shown loses its terminal control characters
    (:func:`printable`): names in a model file are data, never formatting or escape codes.
    """
    try:
        from rich.console import Console
    except ImportError:
        sys.stderr.write("tractile's command line needs the rich package: pip install 'tractile[cli]'\n")
        raise SystemExit(2) from None

    class SafeConsole(Console):
        def render_str(self, text, **kwargs):
            return super().render_str(printable(text), **kwargs)

    probe = Console()
    return SafeConsole(highlight=False, markup=False, soft_wrap=False, width=None if probe.is_terminal else 160)


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help=f"model file: {FORMATS}")
    parser.add_argument("-i", "--input-fact", action="append", default=[], metavar="FACT",
                        help="fact of an input, tract style: '1,3,224,224,f32' (in input order) or "
                             "'name=N,3,224,224,f32'; symbols (N, T) stay symbolic. Repeat per input.")
    parser.add_argument("-o", "--output-fact", action="append", default=[], metavar="FACT",
                        help="hint about an output, same syntax; analysis propagates it backwards")
    add_value_argument(parser)
    parser.add_argument("--threads", type=int, metavar="N",
                        help="threads of the matrix products (BLAS) and OpenMP loops (default: the libraries' "
                             "own; small products always run on one)")


def add_value_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--value", action="append", default=[], metavar="NAME=V",
                        help="value of an input known when loading (e.g. --value sr=16000, a list: "
                             "--value axes=0,2): the input becomes a constant, so an If on it folds away. "
                             "Repeat per input.")


def parse_value_args(items: list[str]) -> dict:
    """``NAME=V`` items as {name: value}: ints, floats, true/false, comma-separated for a list."""
    values = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip() or not text.strip():
            raise TractileError(f"--value expects NAME=V (e.g. sr=16000), got {item!r}")
        parts = [_literal(part.strip(), item) for part in text.split(",")]
        values[name.strip()] = parts[0] if len(parts) == 1 and "," not in text else parts
    return values


def _literal(text: str, item: str):
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    raise TractileError(f"--value {item!r}: {text!r} is not a number or true/false")


def parse_fact_args(items: list[str]) -> dict | list:
    named = {}
    positional = []
    for item in items:
        if "=" in item:
            name, spec = item.split("=", 1)
            named[name] = spec
        else:
            positional.append(item)
    if named and positional:
        raise TractileError("give input facts either all by name (name=FACT) or all by position")
    return named or positional


def facts_from_input_file(path: str | None) -> dict | list:
    """Input facts read from an --input file's arrays (by name, or arr_0.. in order), used when no
    -i is given; nothing when there is no readable file (running reports a missing one)."""
    import os

    if not path or not os.path.isfile(path):
        return []
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return []
    if isinstance(data, np.ndarray):
        return [data]
    arrays = {key: data[key] for key in data.files}
    positional = [f"arr_{i}" for i in range(len(arrays))]
    return [arrays[key] for key in positional] if set(arrays) == set(positional) else arrays


def load_at_stage(args, stage: str = "optimize", dynamic: bool = False):
    """Load the model and run the pipeline up to ``stage``. With ``dynamic``, a model that
    analysis cannot type before its inputs are seen comes back as a ``DynamicModel`` (typed
    at its first run), as ``tractile.load`` gives it."""
    from .. import load, set_threads

    if getattr(args, "threads", None) is not None:
        set_threads(args.threads)
    facts = parse_fact_args(args.input_fact) or facts_from_input_file(getattr(args, "input", None))
    options = dict(inputs=facts, outputs=parse_fact_args(args.output_fact),
                   values=parse_value_args(getattr(args, "value", [])))
    if dynamic and stage == "optimize":
        return load(args.model, **options)
    model = load(args.model, optimize=False, **options)
    if stage == "load":
        return model
    model = model.analyse()
    if stage == "analyse":
        return model
    model = model.into_typed()
    if stage == "typed":
        return model
    model = model.declutter()
    if stage == "declutter":
        return model
    return model.optimize()


def random_inputs(model, rng: np.random.Generator, bindings: dict[str, int],
                  chosen: dict[str, int] | None = None) -> list[np.ndarray]:
    """Random tensors for every input. When symbols have no value: with ``chosen`` (a dict),
    they get example values (1 for a batch or inner dim, 256 for a length), recorded there; without it, one
    error names all of them with an example built from the model's own inputs. A model typed at
    its first run (partial input facts) gets example values for its unknown dims too."""
    from ..dim import TDim

    names, facts = model.input_names(), model.input_facts
    if facts and isinstance(facts[0], InferenceFact):
        return _random_from_partial_facts(names, facts, rng, bindings, chosen)
    unbound = sorted({s for f in facts for d in f.shape if isinstance(d, TDim) for s in d.symbols()} - set(bindings))
    if unbound and chosen is not None:
        example = _example_values(unbound, [f.shape for f in facts])
        chosen.update(example)
        bindings = {**bindings, **example}
    elif unbound:
        example = {s: (1 if any(f.shape and isinstance(f.shape[0], TDim) and s in f.shape[0].symbols() for f in facts)
                       else 100) for s in unbound}
        specs = []
        for name, fact in zip(names, facts):
            dims = [str(d.eval({**example, **bindings})) if isinstance(d, TDim) else str(d) for d in fact.shape]
            specs.append(f"-i {name}={','.join(dims)},{fact.dtype.value}")
        declared = "; ".join(f"{n}: {f}" for n, f in zip(names, facts))
        raise TractileError(f"the input dims {', '.join(unbound)} need values ({declared}): give them with "
                            f"{' '.join(specs)}, or with {' '.join(f'--set {s}={v}' for s, v in example.items())}")
    return [random_input(fact, rng, bindings) for fact in facts]


def _example_values(symbols, shapes) -> dict[str, int]:
    """Example values for symbols: 1 for a leading dim (a batch) or an inner one, 256 for a
    symbol only found last or in a vector (a length: samples, frames)."""
    from ..dim import TDim

    def symbols_in(dims) -> set[str]:
        return {s for d in dims if isinstance(d, TDim) for s in d.symbols()}

    small = set()
    for shape in shapes:
        if len(shape) > 1:
            small |= symbols_in(shape[:-1])
    return {s: 1 if s in small else 256 for s in symbols}


def _random_from_partial_facts(names, facts, rng, bindings, chosen) -> list[np.ndarray]:
    """Random inputs for facts analysis could not complete: symbols and unknown dims get example
    values (named ``input.axis`` in ``chosen`` for unknown ones)."""
    from ..dim import TDim, eval_dim
    from ..fact import TypedFact

    symbols = sorted({s for f in facts for d in f.shape.dims if isinstance(d, TDim) for s in d.symbols()}
                     - set(bindings))
    example = _example_values(symbols, [f.shape.dims for f in facts])
    if example and chosen is None:
        raise TractileError(f"the input dims {', '.join(example)} need values: give them with -i or --set")
    values = {**bindings, **example}
    record = dict(example)
    arrays = []
    for name, fact in zip(names, facts):
        if fact.dtype is None or fact.kind is not None or (fact.shape.open and fact.shape.dims):
            raise TractileError(f'input "{name}" is {fact}: give it with -i {name}=... or --input')
        dims = []
        for axis, dim in enumerate(fact.shape.dims):
            if dim is None:
                dim = 256 if 0 < axis == len(fact.shape.dims) - 1 else 1
                record[f"{name}.{axis}"] = dim
            dims.append(eval_dim(dim, values) if isinstance(dim, TDim) else dim)
        if fact.shape.open:  # nothing known of the shape: a vector
            dims = [256]
            record[f"{name}.0"] = 256
        arrays.append(random_input(TypedFact(fact.dtype, dims), rng, {}))
    if chosen is not None:
        chosen.update(record)
    return arrays


def random_input(fact, rng: np.random.Generator, bindings: dict[str, int]) -> np.ndarray:
    """A random tensor matching ``fact`` (symbols take their value from ``bindings``)."""
    from ..dim import eval_dim

    try:
        shape = tuple(eval_dim(d, bindings) for d in fact.shape)
    except TractileError as error:
        raise TractileError(f"{error}: give the dims with -i (e.g. -i 1,3,224,224,f32) or --set N=1") from None
    dtype = fact.dtype.np
    if fact.dtype.is_float:
        return rng.standard_normal(shape).astype(dtype)
    if fact.dtype.value == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if fact.dtype.is_integer:
        info = np.iinfo(dtype) if dtype.kind in "iu" else None
        low, high = (max(info.min, -100), min(info.max, 100)) if info else (0, 10)
        return rng.integers(low, high + 1, shape).astype(dtype)
    raise TractileError(f"cannot make a random {fact.dtype} input; give it with --input")


def parse_bindings(items: list[str]) -> dict[str, int]:
    bindings = {}
    for item in items:
        if "=" not in item:
            raise TractileError(f"--set expects SYMBOL=VALUE, got {item!r}")
        name, value = item.split("=", 1)
        bindings[name.strip()] = int(value)
    return bindings


def summarize(value: np.ndarray) -> str:
    """One line: shape, dtype and a few statistics of a tensor."""
    shape = "x".join(map(str, value.shape)) or "scalar"
    text = f"{shape} {value.dtype}"
    if value.size and value.dtype.kind in "fiub":
        as_float = value.astype(np.float64)
        text += f"  min {as_float.min():.6g} max {as_float.max():.6g} mean {as_float.mean():.6g}"
        flat = value.ravel()[:6].tolist()
        text += "  [" + ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in flat)
        text += ", ...]" if value.size > 6 else "]"
    elif value.size:
        text += f"  {value.ravel()[:4].tolist()}"
    return text


def report_mismatches(out, problems: list[str], success: str) -> int:
    """Print each mismatch (or the success line); the command's exit status: 1 on a mismatch."""
    for problem in problems:
        out.print(f"[red]mismatch[/red] {escape(problem)}", markup=True)
    if problems:
        return 1
    out.print(f"[green]{escape(success)}[/green]", markup=True)
    return 0


def add_compiled_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--compiled", nargs="?", const="full", choices=("full", "auto", "all"),
                        help="run the model compiled to C and built for this machine (needs a C compiler; see "
                             "docs/COMPILE.md) instead of the interpreter; '--compiled auto' compiles each part "
                             "the compiler supports where it runs faster compiled (measured once, cached) and "
                             "interprets the rest, with a table of the choices; '--compiled all' every such part")


def compile_for_inputs(model, inputs: list, mode: str = "full"):
    """``model`` compiled for the shapes of ``inputs`` (which bind its symbols): a compiled model,
    or with ``mode`` "auto" / "all" a state of the model with its compilable segments compiled
    (by measured cost / all of them; "auto" prints the table of choices)."""
    from ..compile import compile_model

    if mode in ("auto", "all"):
        return compile_segments_for_inputs(model, inputs, mode).state()
    needs_facts = any(not fact.is_concrete() for fact in model.input_facts)
    return compile_model(model, inputs=list(inputs) if needs_facts else None, optimize=needs_facts)


def compile_segments_for_inputs(model, inputs: list, mode: str, out=None):
    """``model`` (typed for the shapes of ``inputs`` if it needs them) with compiled segments:
    ``mode`` "auto" keeps those faster compiled and prints why (on ``out``, a rich Console;
    standard output by default), "all" keeps every one."""
    from ..compile import prepare
    from ..compile.segments import compile_segments

    symbolic = any(not fact.is_concrete() for fact in model.input_facts)
    typed = prepare(model, list(inputs)) if symbolic else model
    choices: list = []
    compiled = compile_segments(typed, by="cost" if mode == "auto" else "all", choices=choices)
    if mode == "auto":
        (out or console()).print(choices_table(choices))
    return compiled


def choices_table(choices: list):
    """What ``compile="auto"`` chose as a table: segment, nodes, compiled µs, interpreted µs, choice."""
    from rich.table import Table

    from ..compile.autocost import WHOLE_MODEL

    segments = [c for c in choices if c.segment != WHOLE_MODEL]
    table = Table(title=f"compile='auto': {sum(c.compiled for c in segments)} of {len(segments)} candidate segments "
                        "faster compiled (timed on these shapes, compiled and interpreted)",
                  title_justify="left", pad_edge=False)
    for column, justify in (("segment", "left"), ("nodes", "right"), ("ops", "left"), ("compiled µs", "right"),
                            ("interpreted µs", "right"), ("choice", "left"), ("why", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for choice in choices:
        ops = choice.ops if len(choice.ops) <= 40 else choice.ops[:39] + "…"
        table.add_row(escape(choice.segment), str(choice.nodes), escape(ops), _micros(choice.compiled_s),
                      _micros(choice.interpreted_s), "compiled" if choice.compiled else "interpreted",
                      escape(choice.why))
    return table


def _micros(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.1f}"
