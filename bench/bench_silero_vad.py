"""silero-vad chunk by chunk: tractile against onnxruntime, in one process.

    python bench/bench_silero_vad.py [--chunks 300] [--runs 7] [--threads 1] [--sr-input] [--compiled]

A voice-activity detector runs on every 32 ms of audio (512 new samples at 16 kHz, after
the previous chunk's last 64), its LSTM state fed back. For each ONNX file of the
``silero-vad`` package, both engines run the same stream of a speech-like signal; the
table gives the median over ``--runs`` rounds of the time per chunk, the ratio tractile /
onnxruntime (lower is better), the share of real time one core spends (32 ms per chunk),
and the largest difference of the speech probability and of the state between the two.
tractile loads the model with the chunk shape and ``values={"sr": 16000}`` (the sample-rate
If folds away); ``--sr-input`` keeps ``sr`` a run-time input instead; ``--compiled`` runs the
segments the compiler supports as compiled C (``compile="auto"``).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

import tractile  # noqa: E402
from tests.speech import CHUNK, CONTEXT, RATE, chunks, silero_vad_files, speech_like  # noqa: E402


def stream(run, inputs: list[np.ndarray], extra: list) -> tuple[list, list]:
    """Run every chunk, feeding the state back; the probabilities and states."""
    state = np.zeros((2, 1, 128), np.float32)
    probs, states = [], []
    for x in inputs:
        prob, state = run([x, state, *extra])
        probs.append(prob)
        states.append(state)
    return probs, states


def seconds_per_chunk(run, inputs, extra, rounds: int) -> float:
    stream(run, inputs[:20], extra)  # warm-up
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        stream(run, inputs, extra)
        samples.append((time.perf_counter() - start) / len(inputs))
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=300, help="chunks of 32 ms per round (default 300)")
    parser.add_argument("--runs", type=int, default=7, help="timed rounds per engine (median reported)")
    parser.add_argument("--threads", type=int, default=1, help="threads of both engines (default 1)")
    parser.add_argument("--sr-input", action="store_true", help="keep sr a run-time input of the tractile model")
    parser.add_argument("--compiled", action="store_true",
                        help="load tractile's model with compile='auto' (supported segments run as compiled C)")
    args = parser.parse_args(argv)
    import onnxruntime as ort

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("(threadpoolctl is not installed: BLAS uses its default threads)")
    else:
        threadpool_limits(args.threads)
    files = silero_vad_files()
    if not files:
        print("silero-vad is not installed: pip install silero-vad")
        return 1
    inputs = list(chunks(speech_like(args.chunks * CHUNK / RATE)))
    sr = np.array(RATE, np.int64)
    print(f"{len(inputs)} chunks of {CHUNK} samples (+{CONTEXT} context) at {RATE} Hz, "
          f"median of {args.runs} rounds, {args.threads} thread(s)")
    header = (f"{'file':<26} {'nodes':>5} {'tractile µs':>11} {'onnxruntime µs':>14} {'ratio':>6} "
              f"{'% of real time':>14} {'max |Δprob|':>11} {'max |Δstate|':>12}")
    print(header)
    print("-" * len(header))
    for name, path in files.items():
        facts = {"input": f"1,{CONTEXT + CHUNK},f32", "state": "2,1,128,f32"}
        model = tractile.load(path, inputs=facts, values=None if args.sr_input else {"sr": RATE},
                              compile="auto" if args.compiled else None)
        ours = model.plan().state().run
        extra = [sr] if args.sr_input else []
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = args.threads
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

        def theirs(feeds, session=session):
            return session.run(None, {"input": feeds[0], "state": feeds[1], "sr": sr})

        (p_ours, s_ours), (p_theirs, s_theirs) = stream(ours, inputs, extra), stream(theirs, inputs, [])
        d_prob = max(float(np.abs(a - b).max()) for a, b in zip(p_ours, p_theirs))
        d_state = max(float(np.abs(a - b).max()) for a, b in zip(s_ours, s_theirs))
        t_ours = seconds_per_chunk(ours, inputs, extra, args.runs)
        t_theirs = seconds_per_chunk(theirs, inputs, [], args.runs)
        nodes = sum(1 for n in model.nodes if n.op.name not in ("Source", "Const"))
        print(f"{name:<26} {nodes:>5} {t_ours * 1e6:>11.0f} {t_theirs * 1e6:>14.0f} {t_ours / t_theirs:>5.2f}x "
              f"{t_ours / (CHUNK / RATE) * 100:>13.2f}% {d_prob:>11.1e} {d_state:>12.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
