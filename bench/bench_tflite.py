"""Time tractile against ai-edge-litert (default CPU kernels and reference kernels) on the shared TFLite models.

    python bench/bench_tflite.py [--models hello_world_int8,person_detect,...] [--runs 50]

For each model all engines run the same random input; after warm-up runs the median of
``--runs`` timed runs (set inputs, invoke, read outputs) is reported, with the ratios
tractile / TFLite default and tractile / TFLite reference (lower is better, 1.0 = as
fast). Each TFLite engine runs in a child process: TFLite's default kernels crash on some
models (keyword_scrambled_8bit's int8 SVDF memories), and a crash must not end the run.
Goals: person_detect within 3x of TFLite's default kernels, hello_world within 5x.
Every engine runs on one thread; the machine's load average is printed before and after,
since a shared machine makes all timings noisy.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

# one thread for every engine (TFLite runs with num_threads=1): set before NumPy loads BLAS
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
from timing import load_average, median_and_fastest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = ROOT.parent / "shared" / "models" / "tflite"
MODELS = ("hello_world_int8", "hello_world_float", "microflow_sine", "micro_speech_quantized", "person_detect",
          "mnist_lstm_int8", "mnist_lstm_float", "keyword_scrambled_8bit")


def model_bytes(name: str) -> bytes:
    """The model's bytes; person_detect is rewritten by tractile (bias quantized dimension 0) so TFLite loads it."""
    path = MODELS_DIR / f"{name}.tflite"
    if name != "person_detect":
        return path.read_bytes()
    sys.path.insert(0, str(ROOT / "src"))
    from tractile.formats.tflite import load_tflite
    from tractile.formats.tflite.writer import write_model

    return write_model(load_tflite(path))


def inputs_for(facts, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    values = []
    for shape, dtype in facts:
        dtype = np.dtype(dtype)
        if dtype.kind == "f":
            values.append(rng.standard_normal(shape).astype(dtype))
        else:
            info = np.iinfo(dtype)
            values.append(rng.integers(info.min, int(info.max) + 1, shape).astype(dtype))
    return values


def median_time(run, runs: int, warmup: int = 5) -> float:
    return median_and_fastest(run, runs, warmup)[0]


def time_tflite_child(path: str, kernels: str, runs: int) -> None:
    """Child process: time one TFLite resolver on the model at ``path``; print JSON."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    resolver = OpResolverType.BUILTIN_REF if kernels == "reference" else OpResolverType.AUTO
    interpreter = Interpreter(model_path=path, experimental_op_resolver_type=resolver, num_threads=1)
    interpreter.allocate_tensors()
    details = interpreter.get_input_details()
    values = inputs_for([(tuple(d["shape"]), d["dtype"]) for d in details])
    outputs = interpreter.get_output_details()

    def run():
        for detail, value in zip(details, values):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        return [interpreter.get_tensor(o["index"]) for o in outputs]

    print(json.dumps({"seconds": median_time(run, runs)}))


def time_tflite(path: str, kernels: str, runs: int) -> float | None:
    result = subprocess.run([sys.executable, __file__, "--child", path, kernels, str(runs)], capture_output=True,
                            text=True, timeout=600)
    if result.returncode != 0:
        return None
    for line in result.stdout.splitlines()[::-1]:
        if line.startswith("{"):
            return json.loads(line)["seconds"]
    return None


def time_tractile(path: Path, runs: int) -> float:
    sys.path.insert(0, str(ROOT / "src"))
    from tractile.formats.tflite import load_tflite

    flavour = "micro" if path.stem == "keyword_scrambled_8bit" else "reference"
    model = load_tflite(path, flavour=flavour).into_optimized()
    values = inputs_for([(tuple(f.shape), f.dtype.np) for f in model.input_facts])
    state = model.state()
    return median_time(lambda: state.run(values), runs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated model names")
    parser.add_argument("--runs", type=int, default=50, help="timed runs per engine (median reported)")
    args = parser.parse_args(argv)
    scratch = Path("/tmp") / "tractile_bench_tflite"
    scratch.mkdir(exist_ok=True)
    print(f"load average before: {load_average()} ({os.cpu_count()} cores)")
    header = f"{'model':26} {'tractile ms':>12} {'tflite ms':>10} {'ref ms':>10} {'x tflite':>9} {'x ref':>8}"
    print(header)
    print("-" * len(header))
    for name in args.models.split(","):
        source = MODELS_DIR / f"{name}.tflite"
        if not source.exists():
            print(f"{name:26} missing ({source})")
            continue
        copy = scratch / f"{name}.tflite"
        copy.write_bytes(model_bytes(name))
        ours = time_tractile(source, args.runs)
        default = time_tflite(str(copy), "default", args.runs)
        reference = time_tflite(str(copy), "reference", args.runs)

        def show(value):
            return f"{value * 1000:10.3f}" if value is not None else f"{'crash':>10}"

        def ratio(value):
            return f"{ours / value:8.2f}x" if value else f"{'-':>9}"

        print(f"{name:26} {ours * 1000:12.3f} {show(default)} {show(reference)} {ratio(default)} {ratio(reference)}")
    print(f"load average after: {load_average()}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        time_tflite_child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        sys.exit(0)
    sys.exit(main())
