"""A TensorFlow model with a variable, tf.cond and tf.while_loop compiled for the emulated Cortex-M4.

    python bench/bench_control.py [--counts 0,1,10]

The model is ``tests/tflite/control_converter.py``'s (converted by TensorFlow's converter in a
child process: IF, WHILE, VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE). Its firmware
runs one input per loop count in QEMU with one context (the variable carried across the calls),
each output checked against the interpreter. Printed: flash of the model, arena and state bytes,
instructions per call (QEMU -icount, the mean over the calls), and TFLite Micro's arena for the
same file (the head, activations only, and the total with its persistent structures).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))


def convert(folder: Path) -> Path:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, "-m", "tests.tflite.control_converter", str(folder)], cwd=ROOT, env=env,
                   check=True, capture_output=True)
    return folder / "counter.tflite"


def main() -> None:
    import numpy as np

    import tractile
    from tractile.compile.targets.verify import verify
    from tractile.tools.micro_arena import tflite_micro_arena

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="0,1,10", help="the loop counts of the calls, comma separated")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    with tempfile.TemporaryDirectory() as folder:
        path = convert(Path(folder))
        rng = np.random.default_rng(7)
        runs = [[rng.standard_normal(4).astype(np.float32), np.array(count, np.int32)] for count in counts]
        report = verify(tractile.load(path), "cortex-m4", runs=0, inputs=runs, folder=Path(folder) / "m4")
        micro = tflite_micro_arena(path)
    ram = report["ram_bytes"]
    print(f"verified {report['verified']} over {report['inputs_checked']} calls (loop counts {counts})")
    print(f"flash of the model {report['flash_bytes']['model']} B, arena {ram['arena']} B, state {ram['state']} B, "
          f"context {ram['context']} B, instructions per call {report['cycles_per_inference']}")
    print(f"TFLite Micro: {micro}")


if __name__ == "__main__":
    main()
