"""The engines tractile's TFLite benches compare with, for models one of them cannot run.

LiteRT runs a model first in a child process (:func:`litert_in_child`): some shared models make it
corrupt its own heap (keyword_scrambled_8bit: "free(): invalid next size", a segmentation fault at
exit) or refuse them (the audio preprocessors' custom Signal ops), and that must not end the bench.
Where LiteRT fails, TFLite Micro's Python interpreter (the ``tflite-micro`` package, reference
kernels) is the peer (:func:`tflm_runner`).

    python bench/peers.py --litert-child MODEL.tflite RUNS   # what litert_in_child runs
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def inputs_for(facts, seed: int = 0) -> list[np.ndarray]:
    """Random inputs of ``facts`` (shape, dtype pairs): bench_tflite.py's, the same values in every process."""
    sys.path.insert(0, str(HERE))
    from bench_tflite import inputs_for as random_inputs

    return random_inputs(facts, seed)


def litert_child(path: str, runs: int) -> None:
    """Child process: LiteRT (default resolver, one thread) on ``path``: the first outputs and the
    median and fastest of ``runs`` timed runs after warm-up, as one JSON line on stdout."""
    from ai_edge_litert.interpreter import Interpreter

    sys.path.insert(0, str(HERE))
    from timing import median_and_fastest

    interpreter = Interpreter(model_path=path, num_threads=1)
    interpreter.allocate_tensors()
    details, outputs = interpreter.get_input_details(), interpreter.get_output_details()
    values = inputs_for([(tuple(d["shape"]), d["dtype"]) for d in details])

    def run():
        for detail, value in zip(details, values):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        return [interpreter.get_tensor(o["index"]).copy() for o in outputs]

    first = run()
    median, fastest = median_and_fastest(run, runs, 10)
    print(json.dumps({"outputs": [o.tolist() for o in first], "dtypes": [str(o.dtype) for o in first],
                      "median": median, "fastest": fastest}), flush=True)


def litert_in_child(path: Path, runs: int, timeout: float = 600) -> dict:
    """LiteRT on ``path`` in a child process: ``ok`` (it exited cleanly with its results),
    ``result`` (its first outputs and times, if it printed them before failing) and ``why`` (what
    went wrong: the signal or exit status and LiteRT's last message)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--litert-child", str(path), str(runs)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "result": None, "why": f"no answer in {timeout:.0f} s"}
    result = None
    for line in done.stdout.splitlines()[::-1]:
        if line.startswith("{"):
            result = json.loads(line)
            result["outputs"] = [np.array(o, dtype) for o, dtype in zip(result["outputs"], result["dtypes"])]
            break
    if done.returncode == 0 and result is not None:
        return {"ok": True, "result": result, "why": ""}
    return {"ok": False, "result": result, "why": describe_failure(done.returncode, done.stderr)}


def describe_failure(returncode: int, stderr: str) -> str:
    """The signal or exit status of a child and its last line of error output (not LiteRT's INFO lines)."""
    if returncode < 0:
        try:
            status = signal.Signals(-returncode).name
        except ValueError:
            status = f"signal {-returncode}"
    else:
        status = f"exit status {returncode}"
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("INFO:")]
    messages = [line for line in lines if not line.startswith(("File ", "Traceback", "^"))]
    raised = [line for line in messages if "Error: " in line]  # a Python exception says most
    message = (raised or messages or [""])[-1]
    return f"{status}: {message[:120]}" if message else status


def tflm_runner(path: Path, values: list[np.ndarray], outputs: int):
    """A function running TFLite Micro's Python interpreter on ``values``, giving its ``outputs`` outputs."""
    from tflite_micro.python.tflite_micro import runtime

    interpreter = runtime.Interpreter.from_file(str(path))

    def run():
        for index, value in enumerate(values):
            interpreter.set_input(value, index)
        interpreter.invoke()
        return [interpreter.get_output(index) for index in range(outputs)]

    return run


def max_difference(ours: list[np.ndarray], theirs: list[np.ndarray]) -> str:
    """How far the peer's outputs are from tractile's: "0" when equal, else the largest absolute
    difference (floats: relative to the output's magnitude when above 1)."""
    if len(ours) != len(theirs) or any(a.shape != b.shape for a, b in zip(ours, theirs)):
        return "shapes differ"
    worst = 0.0
    for a, b in zip(ours, theirs):
        if a.size == 0:
            continue
        diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
        if a.dtype.kind == "f":
            diff /= max(float(np.max(np.abs(b.astype(np.float64)))), 1.0)
        worst = max(worst, diff)
    return "0" if worst == 0 else f"{worst:.2g}"


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--litert-child":
        litert_child(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
