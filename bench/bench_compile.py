"""Compiled models against the interpreter and the peer engines, per inference, and their memory.

    python bench/bench_compile.py [--models hello_world_int8,...] [--runs 200]

Engines, on the same random input per model, one thread each: tractile compiled (the
generated C built with -O3 -march=native, called from Python: the call overhead is
included), the tractile interpreter, ai-edge-litert with its default (XNNPACK) and its
reference kernels, the tflite-micro package, and for the ONNX MLP onnxruntime (one
thread and default threads). Median of --runs timed runs after warm-up. TFLite engines
run in child processes (a crash of TFLite on a model must not end the run; see
bench_tflite.py). Memory: tractile's planned arena beside TFLite Micro's planned
activation arena (its recording allocator's "head") and its whole arena.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from timing import load_average  # noqa: E402

sys.path.insert(0, str(HERE.parent / "src"))

from bench_tflite import MODELS_DIR, inputs_for, median_time, model_bytes, time_tflite  # noqa: E402

MODELS = ("hello_world_int8", "hello_world_float", "microflow_sine", "micro_speech_quantized", "person_detect",
          "mnist_lstm_int8", "mnist_lstm_float", "keyword_scrambled_8bit")


def micro_child(path: str, runs: int) -> None:
    """Child process: time TFLite Micro on ``path`` and read its recording allocator; print JSON."""
    from tflite_micro.python.tflite_micro import runtime

    interpreter = runtime.Interpreter.from_file(path)
    details = interpreter.get_input_details(0)
    values = inputs_for([(tuple(details["shape"]), details["dtype"])])

    def run():
        interpreter.set_input(values[0], 0)
        interpreter.invoke()
        return interpreter.get_output(0)

    print(json.dumps({"seconds": median_time(run, runs)}))


MICRO_ARENA = ("from tflite_micro.python.tflite_micro import runtime; "
               "runtime.Interpreter.from_file({path!r}).print_allocations()")


def micro_arena(path: str) -> dict:
    """TFLite Micro's recording allocator: the planned activation arena ("head") and the whole arena."""
    done = subprocess.run([sys.executable, "-c", MICRO_ARENA.format(path=path)], capture_output=True, text=True,
                          timeout=300)
    text = done.stdout + done.stderr
    head = re.search(r"allocation head (\d+) bytes", text)
    total = re.search(r"allocation total (\d+) bytes", text)
    return {"head": int(head.group(1)) if head else None, "total": int(total.group(1)) if total else None}


def time_micro(path: str, runs: int) -> dict | None:
    done = subprocess.run([sys.executable, __file__, "--micro-child", path, str(runs)], capture_output=True,
                          text=True, timeout=900)
    for line in done.stdout.splitlines()[::-1]:
        if line.startswith("{"):
            return {**json.loads(line), **micro_arena(path)}
    return None


def tractile_times(path: Path, runs: int, cache: Path) -> tuple[float, float | None, dict | str]:
    """(interpreter seconds, compiled seconds or None, compile report or the reason it failed)."""
    from tractile.errors import TractileError
    from tractile.formats.tflite import load_tflite

    flavour = "micro" if path.stem == "keyword_scrambled_8bit" else "reference"
    model = load_tflite(path, flavour=flavour).into_optimized()
    values = inputs_for([(tuple(f.shape), f.dtype.np) for f in model.input_facts])
    state = model.state()
    interpreted = median_time(lambda: state.run(values), runs)
    try:
        compiled = model.compile(name=path.stem, cache_dir=cache)
    except TractileError as error:
        return interpreted, None, str(error).splitlines()[0]
    context = compiled.state()
    return interpreted, median_time(lambda: context.run(values), runs), compiled.report


def onnx_mlp_row(runs: int, cache: Path) -> None:
    """The 1->16->16->1 float MLP from ONNX: compiled vs onnxruntime (one thread and default)."""
    import onnxruntime as ort

    import tractile

    sys.path.insert(0, str(HERE.parent))
    from tests.compile.test_framework import mlp_proto

    proto = mlp_proto(1)
    model = tractile.load(proto)
    x = np.random.default_rng(0).standard_normal((1, 1)).astype(np.float32)
    compiled = model.compile(name="mlp", cache_dir=cache).state()
    state = model.state()
    times = {"compiled": median_time(lambda: compiled.run([x]), runs),
             "interpreter": median_time(lambda: state.run([x]), runs)}
    for threads in (1, 0):
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
        times[f"ort{threads}"] = median_time(lambda: session.run(None, {"x": x}), runs)
    print(f"\nONNX MLP 1->16->16->1, batch 1 (µs): compiled {times['compiled'] * 1e6:.2f}, interpreter "
          f"{times['interpreter'] * 1e6:.2f}, onnxruntime 1 thread {times['ort1'] * 1e6:.2f}, default "
          f"{times['ort0'] * 1e6:.2f}; compiled / onnxruntime(1 thread) = {times['compiled'] / times['ort1']:.2f}x")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated model names")
    parser.add_argument("--runs", type=int, default=200, help="timed runs per engine (median reported)")
    args = parser.parse_args(argv)
    cache = Path(tempfile.mkdtemp(prefix="tractile_bench_compile_"))
    scratch = Path(tempfile.mkdtemp(prefix="tractile_bench_models_"))
    print(f"load average before: {load_average()} ({os.cpu_count()} cores)")
    header = (f"{'model':24} {'compiled µs':>12} {'interp µs':>10} {'litert µs':>10} {'ref µs':>10} {'micro µs':>10}"
              f" {'x litert':>9} {'x ref':>7} {'x micro':>8} {'x interp':>9}")
    print(header)
    print("-" * len(header))
    memory = []
    for name in args.models.split(","):
        path = MODELS_DIR / f"{name}.tflite"
        if not path.exists():
            print(f"{name:24} missing ({path})")
            continue
        copy = scratch / f"{name}.tflite"
        copy.write_bytes(model_bytes(name))
        interpreted, compiled, report = tractile_times(path, args.runs, cache)
        default = time_tflite(str(copy), "default", args.runs)
        reference = time_tflite(str(copy), "reference", args.runs)
        micro = time_micro(str(path), args.runs)

        def us(value):
            return f"{value * 1e6:10.2f}" if value is not None else f"{'-':>10}"

        def ratio(value, width):
            return f"{compiled / value:{width - 1}.2f}x" if value and compiled else f"{'-':>{width}}"

        micro_seconds = micro["seconds"] if micro else None
        shown = f"{compiled * 1e6:12.2f}" if compiled else f"{'unsupported':>12}"
        print(f"{name:24} {shown} {us(interpreted)} {us(default)} {us(reference)} {us(micro_seconds)} "
              f"{ratio(default, 9)} {ratio(reference, 7)} {ratio(micro_seconds, 8)} {ratio(interpreted, 9)}")
        memory.append((name, report, micro))
    print("\nmemory (bytes)")
    print(f"{'model':24} {'arena':>8} {'bound':>8} {'no reuse':>9} {'state':>7} {'I/O':>6} {'TFLM head':>10} "
          f"{'TFLM total':>11}")
    for name, report, micro in memory:
        if isinstance(report, str):
            print(f"{name:24} not compiled: {report}")
            continue
        print(f"{name:24} {report['arena_bytes']:8} {report['lower_bound_bytes']:8} {report['no_reuse_bytes']:9} "
              f"{report['state_bytes']:7} {report['io_bytes']:6} {(micro or {}).get('head') or '-':>10} "
              f"{(micro or {}).get('total') or '-':>11}")
    onnx_mlp_row(args.runs * 10, cache)
    print(f"\nload average after: {load_average()}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--micro-child":
        micro_child(sys.argv[2], int(sys.argv[3]))
        sys.exit(0)
    sys.exit(main())
