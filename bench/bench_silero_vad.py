"""silero-vad per chunk: tractile against onnxruntime, in one process, one thread each.

    python bench/bench_silero_vad.py [--chunks 500]

Each engine runs the pip package's ONNX files chunk by chunk as the package does at 16 kHz:
512 new samples plus the 64-sample context, the state fed back. Median time per chunk.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))


def per_chunk(step, chunks: list[np.ndarray]) -> float:
    state = np.zeros((2, 1, 128), np.float32)
    times = []
    for x in chunks:
        start = time.perf_counter()
        state = step(x, state)
        times.append(time.perf_counter() - start)
    return statistics.median(times[10:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=500)
    args = parser.parse_args(argv)
    import onnxruntime as ort
    import silero_vad
    from threadpoolctl import threadpool_limits

    import tractile

    threadpool_limits(1)
    data = os.path.join(os.path.dirname(silero_vad.__file__), "data")
    rng = np.random.default_rng(0)
    chunks = [(rng.standard_normal((1, 576)) * 0.1).astype(np.float32) for _ in range(args.chunks)]
    sr = np.array(16000, np.int64)
    print(f"{'model':<28} {'tractile µs':>12} {'compiled auto µs':>17} {'onnxruntime µs':>15} {'ratio':>7} "
          f"{'auto ratio':>10}")
    for name in ("silero_vad.onnx", "silero_vad_16k_op15.onnx"):
        path = os.path.join(data, name)
        facts = {"input": "1,576,f32", "state": "2,1,128,f32", "sr": "i64"}
        state = tractile.load(path, inputs=facts).state()
        auto = tractile.load(path, inputs=facts, compile="auto").state()
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.log_severity_level = 3
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        ours = per_chunk(lambda x, h: state.run([x, h, sr])[1], chunks)
        compiled = per_chunk(lambda x, h: auto.run([x, h, sr])[1], chunks)
        theirs = per_chunk(lambda x, h: session.run(None, {"input": x, "state": h, "sr": sr})[1], chunks)
        print(f"{name:<28} {ours * 1e6:>12.1f} {compiled * 1e6:>17.1f} {theirs * 1e6:>15.1f} {ours / theirs:>6.2f}x "
              f"{compiled / theirs:>9.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
