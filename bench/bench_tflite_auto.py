"""Time TFLite models run by tractile with ``compile="auto"`` against LiteRT (XNNPACK) on one thread.

    PYTHONPATH=src python bench/bench_tflite_auto.py [--models kws_dscnn_int8,...] [--runs 100]

The models and inputs of ``bench_host.py``; tractile's model goes through
``compile_segments(by="cost")`` (what ``compile="auto"`` does: each segment the C compiler
supports kept compiled where it was measured faster, the timing cached with the build), then
the median and the fastest of ``--runs`` runs, taken in turns with ``compile_model``'s model and
LiteRT on one thread, are compared with LiteRT's (issue 28's goal: at most 1.2x), with
``compile_model``'s (the call path's overhead) and with the interpreter's. The segments kept compiled are counted.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_host import FLOAT, MLPERF, SHARED_TFLITE, inputs_for, litert_runner, median_time, model_path  # noqa: E402
from timing import interleaved, load_average  # noqa: E402


def bench(name: str, runs: int) -> dict:
    from tractile.compile import compile_model
    from tractile.compile.autocost import WHOLE_MODEL
    from tractile.compile.segments import CompiledSegment, compile_segments
    from tractile.formats.tflite import load_tflite

    path = model_path(name)
    model = load_tflite(path).into_optimized()
    values = inputs_for([(tuple(f.shape), f.dtype.np) for f in model.input_facts])
    choices: list = []
    auto = compile_segments(model, by="cost", choices=choices)
    state, interpreted = auto.state(), model.state()
    direct = compile_model(model, name=name)
    auto_t, direct_t, litert_t = interleaved([lambda: state.run(values), lambda: direct.run(values),
                                              litert_runner(path, 1, values)], runs)
    return {"auto": auto_t, "compiled": direct_t, "litert1": litert_t,
            "interpreted": median_time(lambda: interpreted.run(values), max(runs // 4, 10))[0],
            "kept": sum(isinstance(n.op, CompiledSegment) for n in auto.nodes),
            "candidates": sum(c.segment != WHOLE_MODEL for c in choices)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MLPERF + FLOAT + SHARED_TFLITE), help="comma-separated")
    parser.add_argument("--runs", type=int, default=100, help="timed runs per engine (median reported)")
    args = parser.parse_args(argv)
    print(f"load average before: {load_average()} ({os.cpu_count()} cores)")
    header = (f"{'model':22} {'auto':>8} {'compiled':>9} {'interp.':>9} {'LiteRT 1t':>10} {'x LiteRT':>9} "
              f"{'best x LiteRT':>14} {'auto/compiled':>14} {'x interp.':>10} {'compiled segments':>18}")
    print("medians (us), tractile `auto`, `compile_model` and LiteRT interleaved run by run; "
          "best: ratio of the fastest runs\n" + header + "\n" + "-" * len(header))
    for name in args.models.split(","):
        try:
            t = bench(name, args.runs)
        except Exception as error:  # a model one engine cannot run must not end the run
            print(f"{name:22} failed: {type(error).__name__}: {str(error)[:100]}")
            continue
        auto, compiled, litert = t["auto"], t["compiled"], t["litert1"]
        print(f"{name:22} {auto[0] * 1e6:8.1f} {compiled[0] * 1e6:9.1f} {t['interpreted'] * 1e6:9.1f} "
              f"{litert[0] * 1e6:10.1f} {auto[0] / litert[0]:8.2f}x {auto[1] / litert[1]:13.2f}x "
              f"{auto[0] / compiled[0]:13.2f}x {auto[0] / t['interpreted']:9.2f}x "
              f"{t['kept']:>12} of {t['candidates']:<3}", flush=True)
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
