"""Streaming against re-running the batch model on a sliding window, on a dilated TCN.

    python bench/bench_streaming.py [--windows 100,200] [--pulses 1,4,8,16] [--channels 64] [--layers 8]
                                    [--runs 7] [--threads 1] [--no-compiled]

A real-time listener gets ``P`` new frames at a time. Without streaming it re-runs the
batch model on the last ``W`` frames each time; the pulsed model does only the work of
the ``P`` new frames. The table gives the cost per frame of each (median over ``--runs``
timed rounds, after warm-up) and the speed-up, to compare with the ideal ``W / P``
(per-call overheads keep small pulses below it). The model is a causal TCN: ``--layers``
dilated convolutions (kernel 3, dilations 1, 2, 4...) with residual connections, on
40 input features, built as ONNX (bench/builders.py) so that onnxruntime runs the very
same model. Pushes run interpreted and compiled (the pulsed model lowered to C with its
Delay buffers as ring buffers in the context); sliding windows run interpreted, compiled
(for T = W) and in onnxruntime, all with one thread.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def median_seconds(step, calls: int, runs: int) -> float:
    """Median over ``runs`` rounds of the time per call of ``step`` (``calls`` calls a round)."""
    for _ in range(max(2, calls // 4)):
        step()
    rounds = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(calls):
            step()
        rounds.append((time.perf_counter() - start) / calls)
    return statistics.median(rounds)


def push_flops(pulsed) -> float:
    """Multiply-adds ×2 of one push's convolutions (the arithmetic a push cannot avoid)."""
    flops = 0
    for node in pulsed.model.nodes:
        if type(node.op).__name__ == "Conv":
            out, w = node.outputs[0].fact, pulsed.model.outlet_fact(node.inputs[1])
            flops += 2 * int(np.prod([int(d) for d in out.shape])) * int(np.prod([int(d) for d in w.shape[1:]]))
    return float(flops)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--windows", default="100,200", help="sliding-window lengths W (frames)")
    parser.add_argument("--pulses", default="1,4,8,16", help="pulse sizes P (frames per push)")
    parser.add_argument("--channels", type=int, default=64, help="channels of the TCN")
    parser.add_argument("--layers", type=int, default=8, help="dilated layers (receptive field 2**(layers+1)-1)")
    parser.add_argument("--runs", type=int, default=7, help="timed rounds per measure (median)")
    parser.add_argument("--calls", type=int, default=20, help="calls per timed round")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS and onnxruntime threads (default 1: small products gain nothing from more)")
    parser.add_argument("--no-compiled", action="store_true", help="skip the compiled columns (no C compiler)")
    args = parser.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("(threadpoolctl is not installed: BLAS uses its default threads)")
    else:
        threadpool_limits(args.threads)
    import onnxruntime as ort
    from builders import tcn

    import tractile

    windows = [int(w) for w in args.windows.split(",")]
    pulses = [int(p) for p in args.pulses.split(",")]
    proto = tcn(channels=args.channels, layers=args.layers)
    model = tractile.load(proto)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.log_severity_level = 3
    session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    print(f"dilated TCN: 40 features, {args.channels} channels, {args.layers} layers "
          f"(receptive field {2 ** (args.layers + 1) - 1} frames), {len(model.nodes)} nodes; {args.threads} thread(s)")

    batch: dict[int, dict[str, float]] = {}
    for window in windows:
        frames = rng.standard_normal((1, 40, window)).astype(np.float32)
        state = model.state()
        costs = {"interpreted": median_seconds(lambda: state.run([frames]), args.calls, args.runs),
                 "onnxruntime": median_seconds(lambda: session.run(None, {"x": frames}), args.calls, args.runs)}
        if not args.no_compiled:
            compiled = model.compile(name=f"tcn_w{window}", inputs=[f"1,40,{window},f32"])
            costs["compiled"] = median_seconds(lambda: compiled.run([frames]), args.calls, args.runs)
        batch[window] = costs
    engines = list(next(iter(batch.values())))
    print("\nre-running the batch model on the last W frames (µs per call):")
    for window in windows:
        print(f"  W={window}: " + ", ".join(f"{e} {batch[window][e] * 1e6:.1f}" for e in engines))

    print("\npushing P frames (µs per frame; speed-up = sliding-window cost per frame / push cost per frame):")
    header = f"{'P':>3} {'delay':>5} {'state KiB':>9} {'kFLOP/frame':>11} {'interp':>8} {'GFLOP/s':>7}"
    if not args.no_compiled:
        header += f" {'compiled':>8} {'GFLOP/s':>7}"
    for window in windows:
        header += f" {'ort W=' + str(window):>10} {'x interp':>8}" + ("" if args.no_compiled else f" {'x comp':>7}")
    print(header)
    print("-" * len(header))
    for pulse in pulses:
        pulsed = model.pulse("T", pulse)
        stream = pulsed.start()
        chunk = rng.standard_normal((1, 40, pulse)).astype(np.float32)
        interpreted = median_seconds(lambda: stream.push([chunk]), args.calls, args.runs)
        flops = push_flops(pulsed) / pulse
        line = (f"{pulse:>3} {pulsed.delay:>5} {stream.memory_bytes() / 1024:>9.1f} {flops / 1e3:>11.1f} "
                f"{interpreted / pulse * 1e6:>8.1f} {flops * pulse / interpreted / 1e9:>7.2f}")
        compiled_push = None
        if not args.no_compiled:
            compiled_stream = pulsed.compile(name=f"tcn_p{pulse}")
            compiled_push = median_seconds(lambda: compiled_stream.run([chunk]), args.calls, args.runs)
            line += f" {compiled_push / pulse * 1e6:>8.2f} {flops * pulse / compiled_push / 1e9:>7.2f}"
        for window in windows:
            sliding = batch[window]["onnxruntime"] / pulse  # one run on the last W frames per P new frames
            line += f" {sliding * 1e6:>10.1f} {batch[window]['onnxruntime'] / interpreted:>8.1f}"
            if compiled_push is not None:
                line += f" {batch[window]['onnxruntime'] / compiled_push:>7.1f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
