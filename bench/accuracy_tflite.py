"""Accuracy of tractile's TFLite kernels, in the manner of MicroFlow's evaluation; writes docs/ACCURACY.md.

    python bench/accuracy_tflite.py [--samples 1000] [--output docs/ACCURACY.md]

* Sine models: mean squared error against sin(x) on evenly spaced points of [0, 2pi],
  for tractile and for the TFLite interpreter (reference kernels), and how many outputs
  of the two differ.
* Classifiers (micro_speech, person_detect, mnist LSTM) and keyword_scrambled_8bit: on
  random inputs (and the upstream test inputs), the rate at which tractile's output
  equals TFLite's bit for bit, and the rate at which the top class agrees.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tractile.formats.tflite import load_tflite  # noqa: E402
from tractile.formats.tflite.writer import write_model  # noqa: E402

MODELS = ROOT.parent / "shared" / "models" / "tflite"
#: what follows this line in the accuracy page is written by hand and kept when it is regenerated
HAND_WRITTEN = "<!-- written by hand below: kept by bench/accuracy_tflite.py -->"


def reference(data: bytes):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interpreter.allocate_tensors()

    def run(values):
        for detail, value in zip(interpreter.get_input_details(), values):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]
    return run


def micro(data: bytes):
    from tflite_micro.python.tflite_micro import runtime

    interpreter = runtime.Interpreter.from_bytes(data)

    def run(values):
        interpreter.set_input(values[0], 0)
        interpreter.invoke()
        return [np.array(interpreter.get_output(0))]
    return run


def sine_row(name: str, samples: int) -> str:
    path = MODELS / f"{name}.tflite"
    model = load_tflite(path).into_optimized()
    oracle = reference(path.read_bytes())
    xs = np.linspace(0.0, 2.0 * math.pi, samples, dtype=np.float32)
    fact_in, fact_out = model.input_fact(0), model.output_fact(0)
    ours, theirs, differ = [], [], 0
    for x in xs:
        if fact_in.qparams is not None:
            q = fact_in.qparams
            value = np.array([[np.clip(round(float(x) / q.scale[0]) + q.zero_point[0], -128, 127)]], dtype=np.int8)
        else:
            value = np.array([[x]], dtype=np.float32)
        a, b = model.run([value])[0], oracle([value])[0]
        differ += int(not np.array_equal(a, b)) if a.dtype.kind != "f" \
            else int(abs(float(a.ravel()[0]) - float(b.ravel()[0])) > 1e-5)
        if fact_out.qparams is not None:
            q = fact_out.qparams
            a = q.scale[0] * (a.astype(np.float64) - q.zero_point[0])
            b = q.scale[0] * (b.astype(np.float64) - q.zero_point[0])
        ours.append(float(a.ravel()[0]))
        theirs.append(float(b.ravel()[0]))
    target = np.sin(xs.astype(np.float64))
    mse_ours = float(np.mean((np.array(ours) - target) ** 2))
    mse_theirs = float(np.mean((np.array(theirs) - target) ** 2))
    return f"| {name} | {samples} | {mse_ours:.6f} | {mse_theirs:.6f} | {differ} |"


def classifier_row(name: str, label: str, runs: int, extra: list | None = None, flavour: str = "reference") -> str:
    path = MODELS / f"{name}.tflite"
    model = load_tflite(path, flavour=flavour)
    data = write_model(model) if name == "person_detect" else path.read_bytes()
    model = model.into_optimized()
    oracle = micro(data) if flavour == "micro" else reference(data)
    state = model.state()
    rng = np.random.default_rng(0)
    facts = model.input_facts
    cases = list(extra or [])
    for _ in range(runs):
        dtype = facts[0].dtype.np
        if dtype.kind == "f":
            cases.append(rng.standard_normal(tuple(facts[0].shape)).astype(dtype))
        else:
            info = np.iinfo(dtype)
            cases.append(rng.integers(info.min, int(info.max) + 1, tuple(facts[0].shape)).astype(dtype))
    exact = top = 0
    for value in cases:
        a, b = state.run([value])[0], oracle([value])[0]
        same = np.array_equal(a, b) if a.dtype.kind != "f" else bool(np.allclose(a, b, rtol=1e-5, atol=1e-6))
        exact += int(same)
        top += int(np.argmax(a) == np.argmax(b))
    count = len(cases)
    return f"| {name} | {label} | {count} | {100.0 * exact / count:.1f}% | {100.0 * top / count:.1f}% |"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000, help="points of the sine curve")
    parser.add_argument("--runs", type=int, default=200, help="random inputs per classifier")
    parser.add_argument("--output", default=str(ROOT / "docs" / "ACCURACY.md"))
    args = parser.parse_args(argv)
    testdata = MODELS / "testdata"
    speech = [np.load(testdata / f"speech_{w}.npy").reshape(1, 1960) for w in ("yes", "no")]
    people = [np.load(testdata / f"person_detect_{w}.npy").reshape(1, 96, 96, 1) for w in ("person", "no_person")]
    lines = [
        "# Accuracy of the TFLite kernels",
        "",
        f"Produced by `python bench/accuracy_tflite.py --samples {args.samples} --runs {args.runs}` (do not edit "
        "by hand). The oracle is the TFLite interpreter (`ai-edge-litert`) with its reference kernels, except for "
        "keyword_scrambled_8bit, whose int8 SVDF memories only TFLite Micro (`tflite-micro`) runs.",
        "",
        "## Sine models: mean squared error against sin(x) on [0, 2pi]",
        "",
        "| model | points | MSE tractile | MSE TFLite | outputs that differ |",
        "|---|---|---|---|---|",
    ]
    for name in ("hello_world_int8", "microflow_sine", "hello_world_float"):
        lines.append(sine_row(name, args.samples))
    lines += [
        "",
        "## Classifiers: agreement with the oracle",
        "",
        "Inputs: the upstream test inputs (where listed) then random inputs over the whole input range; "
        "stateful models (LSTM, SVDF) run them as one sequence, as TFLite's variables persist.",
        "",
        "| model | inputs | count | bit-exact outputs | same top class |",
        "|---|---|---|---|---|",
        classifier_row("micro_speech_quantized", "yes/no + random", args.runs, speech),
        classifier_row("person_detect", "person/no_person + random", args.runs, people),
        classifier_row("mnist_lstm_int8", "random", args.runs),
        classifier_row("mnist_lstm_float", "random", args.runs),
        classifier_row("keyword_scrambled_8bit", "random (TFLite Micro)", args.runs, flavour="micro"),
        "",
    ]
    output = Path(args.output)
    kept = output.read_text().partition(HAND_WRITTEN) if output.exists() else ("", "", "")
    text = "\n".join(lines) + (HAND_WRITTEN + kept[2] if kept[1] else "")
    output.write_text(text)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
