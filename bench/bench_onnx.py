"""Time tractile against onnxruntime and tract on the same ONNX models, in one process.

    python bench/bench_onnx.py [--models mlp,squeezenet,resnet50,...] [--runs 30] [--threads N]
    python bench/bench_onnx.py --compiled auto --threads 1 [--models ...]

With ``--compiled auto`` (or ``all``) tractile runs with compiled segments (``compile="auto"``:
each segment compiled where it runs faster; ``all``: every segment the compiler supports) and
the table also has the interpreter's time (timed in turns with tractile alone, without
onnxruntime, and scaled to the tractile time of the main table), the ratio to it, the ratio of the
fastest runs to onnxruntime's (what a busy machine hides least), the time the load took
(building and, for ``auto``, timing the segments the first time) and the segments compiled.
The transformer, conformer and crnn models are exported from PyTorch (skipped without torch).

For each model: every engine runs the same input; after warm-up runs, the engines take
turns run after run (so that changing load on the machine falls on all alike) and the
median (``--stat min``: the fastest) of ``--runs`` timed runs is reported, with the ratios
tractile / onnxruntime and tractile / tract (lower is better, 1.0 = as fast). tract
(``pip install tract``, the ``bench`` extra) is skipped when it is not installed or cannot
load a model. The ``chain`` model (200 cheap nodes on a 1-element tensor) measures the
interpreter's per-node overhead. Results are printed as a table; record them in
docs/PERFORMANCE.md with the command line used. On a machine busy with other work, use
``--threads 1 --clock cpu --stat min``. On several threads each timed run waits SETTLE_S
first: the thread pool of the engine run before (OpenBLAS's, behind the interpreter's
products, spins ~0.1 s after each) would otherwise take a core from it.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import builders
import torch_builders
from peer_tract import tract_available, tract_runner
from timing import interleaved_samples, load_average

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def light(name: str):
    proto = onnx.load(LIGHT / f"light_{name}.onnx")
    initializers = {i.name for i in proto.graph.initializer}
    info = next(i for i in proto.graph.input if i.name not in initializers)
    shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
    return proto, [np.random.default_rng(0).standard_normal(shape).astype(np.float32)]


def chain(length: int = 200):
    nodes = [helper.make_node("Neg" if i % 2 else "Abs", [f"t{i}"], [f"t{i + 1}"]) for i in range(length)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info(f"t{length}", TensorProto.FLOAT, [1])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    return proto, [np.ones(1, np.float32)]


MODELS = {
    "mlp": lambda: builders.mlp(),
    "chain": chain,
    "squeezenet": lambda: light("squeezenet"),
    "resnet50": lambda: light("resnet50"),
    "densenet121": lambda: light("densenet121"),
    "inception_v1": lambda: light("inception_v1"),
    "lstm": lambda: builders.lstm(hidden=128, steps=100),
    "lstm2": lambda: builders.lstm2(hidden=128, steps=100),
    "gru": lambda: builders.gru(hidden=128, steps=100),
    "tcn": lambda: (builders.tcn(), [np.random.default_rng(0).standard_normal((1, 40, 200)).astype(np.float32)]),
    "mobilenet": lambda: builders.mobilenet_like(),
    "loop": lambda: builders.loop_model(),
    "transformer": lambda: torch_builders.transformer_encoder(),
    "conformer": lambda: torch_builders.conformer_block(),
    "crnn": lambda: torch_builders.crnn(),
}
DEFAULT = "mlp,chain,tcn,lstm2,gru,mobilenet,squeezenet,resnet50,loop"


#: seconds between timed runs when the engines run on several threads (timing.interleaved_samples)
SETTLE_S = 0.15


def interleaved_times(fns: list, runs: int, warmup: int, clock=time.perf_counter,
                      stat=statistics.median, fastest: list | None = None, settle: float = 0.0) -> list[float]:
    """``stat`` of the times of each function (median, or min: on a machine busy with other
    work, which only adds time, the fastest run estimates a run's own cost best), the functions
    taking turns run after run so that a change of load falls on all of them alike. ``clock``:
    ``time.perf_counter`` (elapsed time) or ``time.process_time`` (CPU time of the process: the
    time the run computed rather than waited; meaningful with one thread per engine). ``fastest``,
    if given, receives each function's fastest run; ``settle``: as in timing.interleaved_samples."""
    samples = interleaved_samples(fns, runs, warmup, clock, settle)
    if fastest is not None:
        fastest.extend(min(times) for times in samples)
    return [stat(times) for times in samples]


def bench_model(name: str, runs: int, threads: int, clock=time.perf_counter, stat=statistics.median,
                compiled: str | None = None) -> dict:
    import onnxruntime as ort

    import tractile
    from tractile.compile.autocost import WHOLE_MODEL
    from tractile.compile.segments import compile_segments

    if threads:
        tractile.set_threads(threads)  # the same thread count as onnxruntime's
    settle = SETTLE_S if threads != 1 else 0.0

    proto, inputs = MODELS[name]()
    model = tractile.load(proto, inputs=[(x.shape, x.dtype) for x in inputs])
    interpreted = model.state()
    choices: list = []
    load_s = None
    if compiled:
        start = time.perf_counter()
        model = compile_segments(model, by="cost" if compiled == "auto" else "all", choices=choices)
        load_s = time.perf_counter() - start
    state = model.state()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {i.name: x for i, x in zip(session.get_inputs(), inputs)}
    ours = state.run(inputs)
    theirs = session.run(None, feeds)
    diff = max(float(np.max(np.abs(a.astype(np.float64) - b))) for a, b in zip(ours, theirs))
    warmup = max(3, runs // 10)
    engines = [lambda: state.run(inputs), lambda: session.run(None, feeds)]
    if compiled:
        # a pair of its own: the engine run after onnxruntime in turns is measured slower than alone
        pair = interleaved_times([lambda: state.run(inputs), lambda: interpreted.run(inputs)], runs, warmup,
                                 clock, stat, settle=settle)
    elif tract_available():
        try:
            run_tract = tract_runner(proto.SerializeToString(), inputs)
            run_tract(inputs)
            engines.append(lambda: run_tract(inputs))
        except Exception:  # a model tract cannot load: its column stays empty
            pass
    best: list[float] = []
    times = interleaved_times(engines, runs, warmup, clock, stat, best, settle)
    t_ours, t_theirs = times[:2]
    t_tract = times[2] if len(times) > 2 else None
    t_interpreted = pair[1] / pair[0] * t_ours if compiled else None
    return {"model": name, "nodes": len(model.nodes), "tractile_ms": t_ours * 1e3, "ort_ms": t_theirs * 1e3,
            "ratio": t_ours / t_theirs, "best_ratio": best[0] / best[1], "max_diff": diff,
            "tract_ms": None if t_tract is None else t_tract * 1e3,
            "tract_ratio": None if t_tract is None else t_ours / t_tract,
            "interpreted_ms": None if t_interpreted is None else t_interpreted * 1e3,
            "vs_interpreted": None if t_interpreted is None else t_ours / t_interpreted,
            "load_s": load_s, "segments": f"{sum(n.op.name == 'Compiled' for n in model.nodes)}/"
                                          f"{sum(c.segment != WHOLE_MODEL for c in choices)}",
            "per_node_us": t_ours * 1e6 / max(1, sum(1 for n in model.nodes if n.op.name not in ("Source", "Const")))}


def results_table(results: list[dict], title: str, compiled: bool):
    from rich.table import Table

    table = Table(title=title)
    if compiled:
        columns = ("model", "tractile ms", "interpreted ms", "vs interpreted", "onnxruntime ms", "vs ort",
                   "best: vs ort", "segments", "load s", "max |diff|")
    else:
        columns = ("model", "nodes", "tractile ms", "onnxruntime ms", "vs ort", "tract ms", "vs tract",
                   "per node µs", "max |diff|")
    for column in columns:
        table.add_column(column, justify="right" if column != "model" else "left")
    for r in results:
        if compiled:
            table.add_row(r["model"], f"{r['tractile_ms']:.3f}", f"{r['interpreted_ms']:.3f}",
                          f"{r['vs_interpreted']:.2f}x", f"{r['ort_ms']:.3f}", f"{r['ratio']:.2f}x",
                          f"{r['best_ratio']:.2f}x", r["segments"],
                          f"{r['load_s']:.1f}", f"{r['max_diff']:.1e}")
            continue
        tract_ms = "-" if r["tract_ms"] is None else f"{r['tract_ms']:.3f}"
        tract_ratio = "-" if r["tract_ratio"] is None else f"{r['tract_ratio']:.2f}x"
        table.add_row(r["model"], str(r["nodes"]), f"{r['tractile_ms']:.3f}", f"{r['ort_ms']:.3f}",
                      f"{r['ratio']:.2f}x", tract_ms, tract_ratio, f"{r['per_node_us']:.1f}", f"{r['max_diff']:.1e}")
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=DEFAULT, help=f"comma-separated, from: {', '.join(MODELS)}")
    parser.add_argument("--runs", type=int, default=30, help="timed runs per engine")
    parser.add_argument("--threads", type=int, default=0,
                        help="threads of both engines: onnxruntime intra-op threads and tractile.set_threads "
                             "(0: each library's default)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall: elapsed time; cpu: CPU time of the process (for a machine busy with other "
                             "work; use it with --threads 1)")
    parser.add_argument("--stat", choices=("median", "min"), default="median",
                        help="what is reported of the timed runs (min: for a machine busy with other work)")
    parser.add_argument("--compiled", choices=("auto", "all"), default=None,
                        help="auto: tractile runs with compile='auto' (each segment the C compiler supports runs "
                             "compiled where that is faster, timed once and cached with the build); all: every "
                             "such segment compiled; the table then also gives the interpreter's time")
    args = parser.parse_args(argv)
    stat = min if args.stat == "min" else statistics.median
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    from rich.console import Console
    from rich.progress import Progress
    console = Console(width=max(Console().width, 110))
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    console.print("load average before: " + load_average())
    results = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("benchmarking", total=len(names))
        for name in names:
            progress.update(task, description=f"benchmarking {name}")
            try:
                results.append(bench_model(name, args.runs, args.threads, clock, stat, args.compiled))
                r = results[-1]
                console.print(f"{name}: tractile {r['tractile_ms']:.3f} ms, onnxruntime {r['ort_ms']:.3f} ms"
                              + ("" if r["interpreted_ms"] is None else
                                 f", interpreted {r['interpreted_ms']:.3f} ms, segments {r['segments']}"))
            except Exception as error:
                console.print(f"[red]{name}: {type(error).__name__}: {str(error).splitlines()[0]}[/red]")
            progress.advance(task)
    mode = f", compile={args.compiled!r}" if args.compiled else ""
    peers = "onnxruntime and the interpreter" if args.compiled else "onnxruntime and tract"
    table = results_table(results, f"tractile{mode} vs {peers} ({args.stat} of {args.runs} runs, {args.clock} "
                                   f"clock, threads {args.threads or 'default'}, {os.cpu_count()} cores)",
                          bool(args.compiled))
    console.print(table)
    console.print("load average after: " + load_average())
    return 0


if __name__ == "__main__":
    sys.exit(main())
