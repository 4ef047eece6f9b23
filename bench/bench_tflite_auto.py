"""Time TFLite models run by tractile with ``compile="auto"`` against LiteRT (XNNPACK) on one thread.

    PYTHONPATH=src python bench/bench_tflite_auto.py [--models kws_dscnn_int8,...] [--runs 100] [--clock cpu]

The models and inputs of ``bench_host.py``, and every other shared TFLite model; tractile's model
goes through ``compile_segments(by="cost")`` (what ``compile="auto"`` does: each segment the C
compiler supports kept compiled where it was measured faster, the timing cached with the build),
then the median and the fastest of ``--runs`` runs, taken in turns (in an order shuffled each
turn) with ``compile_model``'s model and the peer engine on one thread, are compared with the
peer's (issue 28's goal: at most 1.2x LiteRT), with ``compile_model``'s (the call path's overhead)
and with the interpreter's. The segments kept compiled are counted, and the peer's first outputs
compared with tractile's.

The peer is LiteRT, which first runs each model in a child process (``peers.py``): where it fails
there (keyword_scrambled_8bit corrupts its heap; the audio preprocessors' custom Signal ops are
unknown to it) the row says why, and TFLite Micro's Python interpreter is the peer instead.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from bench_host import FLOAT, MLPERF, NOT_LITERT, SHARED_TFLITE, inputs_for, litert_runner, median_time, model_path  # noqa: E402
from peers import litert_in_child, max_difference, tflm_runner  # noqa: E402
from timing import load_average  # noqa: E402


def shuffled_samples(fns: list, runs: int, warmup: int, clock) -> list[list[float]]:
    """The times of ``runs`` calls of each function after ``warmup`` untimed ones, taking turns call
    after call in an order shuffled each turn (seeded): on the tiny models a call that follows the
    peer's pays for the caches it left, ~6% (hello_world: `auto` 1.07x `compile_model` when it
    always came after LiteRT, 0.95x when `compile_model` did), so no engine may always follow the same one."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    samples: list[list[float]] = [[] for _ in fns]
    order, shuffle = list(range(len(fns))), random.Random(28).shuffle
    for _ in range(runs):
        shuffle(order)
        for index in order:
            start = clock()
            fns[index]()
            samples[index].append(clock() - start)
    return samples


def peer_for(name: str, path: Path, values: list, outputs: int, runs: int) -> tuple[str, object, str]:
    """The peer engine's name, a function running it, and a note: LiteRT where it runs the model
    cleanly in a child process, else TFLite Micro (the note says what LiteRT did). A model of
    ``NOT_LITERT`` never runs in this process under LiteRT, even after a clean child: its heap
    corruption need not show every time."""
    probe = litert_in_child(path, min(runs, 200))
    if probe["ok"] and name not in NOT_LITERT:
        return "LiteRT", litert_runner(path, 1, values), ""
    timed = "" if probe["result"] is None else f"{probe['result']['median'] * 1e6:.1f} us median in its child process"
    if probe["ok"]:
        note = f"LiteRT ran it cleanly this time ({timed}), but is kept out of this process (NOT_LITERT)"
    else:
        note = f"LiteRT cannot run it: {probe['why']}" + (f" (before that: {timed})" if timed else "")
    return "TFLM", tflm_runner(path, values, outputs), note


def bench(name: str, runs: int, clock=time.perf_counter) -> dict:
    from tractile.compile import compile_model
    from tractile.compile.autocost import WHOLE_MODEL
    from tractile.compile.segments import CompiledSegment, compile_segments
    from tractile.formats.tflite import load_tflite

    path = model_path(name)
    model = load_tflite(path).into_optimized()
    values = inputs_for([(tuple(f.shape), f.dtype.np) for f in model.input_facts])
    choices: list = []
    auto = compile_segments(model, by="cost", choices=choices)
    peer, peer_run, note = peer_for(name, path, values, len(model.output_facts), runs)
    difference = max_difference(auto.state().run(values), [np.asarray(o) for o in peer_run()])
    state, interpreted = auto.state(), model.state()
    direct = compile_model(model, name=name)
    samples = shuffled_samples([lambda: state.run(values), lambda: direct.run(values), peer_run], runs, 10, clock)
    auto_t, direct_t, peer_t = [(statistics.median(times), min(times)) for times in samples]
    return {"auto": auto_t, "compiled": direct_t, "peer": peer_t, "peer_name": peer, "note": note,
            "difference": difference,
            "interpreted": median_time(lambda: interpreted.run(values), max(runs // 4, 10))[0],
            "kept": sum(isinstance(n.op, CompiledSegment) for n in auto.nodes),
            "candidates": sum(c.segment != WHOLE_MODEL for c in choices)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MLPERF + FLOAT + SHARED_TFLITE + NOT_LITERT),
                        help="comma-separated")
    parser.add_argument("--runs", type=int, default=100, help="timed runs per engine (median reported)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="time each run by the wall clock or by this process's CPU time (less moved by load, "
                             "coarser: a system call of its own)")
    args = parser.parse_args(argv)
    print(f"load average before: {load_average()} ({os.cpu_count()} cores)")
    header = (f"{'model':24} {'auto':>8} {'compiled':>9} {'interp.':>9} {'peer':>6} {'peer 1t':>9} {'x peer':>7} "
              f"{'best x peer':>12} {'auto/compiled':>14} {'x interp.':>10} {'compiled segments':>18} "
              f"{'max diff':>9}")
    print("medians (us), tractile `auto`, `compile_model` and the peer (LiteRT, else TFLite Micro) interleaved run by "
          "run; best: ratio of the fastest runs; max diff: the peer's first outputs against `auto`'s\n"
          + header + "\n" + "-" * len(header))
    for name in args.models.split(","):
        try:
            t = bench(name, args.runs, time.process_time if args.clock == "cpu" else time.perf_counter)
        except Exception as error:  # a model one engine cannot run must not end the run
            print(f"{name:24} failed: {type(error).__name__}: {str(error)[:100]}")
            continue
        auto, compiled, peer = t["auto"], t["compiled"], t["peer"]
        print(f"{name:24} {auto[0] * 1e6:8.1f} {compiled[0] * 1e6:9.1f} {t['interpreted'] * 1e6:9.1f} "
              f"{t['peer_name']:>6} {peer[0] * 1e6:9.1f} {auto[0] / peer[0]:6.2f}x {auto[1] / peer[1]:11.2f}x "
              f"{auto[0] / compiled[0]:13.2f}x {auto[0] / t['interpreted']:9.2f}x "
              f"{t['kept']:>12} of {t['candidates']:<3} {t['difference']:>9}", flush=True)
        if t["note"]:
            print(f"{'':24} {t['note']}", flush=True)
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
