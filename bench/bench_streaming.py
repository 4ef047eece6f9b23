"""Streaming against re-running the batch model on a sliding window, on a dilated TCN.

    python bench/bench_streaming.py [--windows 100,200] [--pulses 1,4,8,16] [--channels 64] [--runs 7]
                                    [--threads 1]

A real-time listener gets ``P`` new frames at a time. Without streaming it re-runs the
batch model on the last ``W`` frames each time; the pulsed model does only the work of
the ``P`` new frames. The table gives the cost per frame of each (median over ``--runs``
timed rounds, after warm-up) and the speed-up, to compare with the ideal ``W / P``
(per-call overheads keep small pulses below it). The model is a causal TCN: ``--layers``
dilated convolutions (kernel 3, dilations 1, 2, 4...) with residual connections, on
40 input features.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from tractile.fact import parse_fact  # noqa: E402
from tractile.model import TypedModel  # noqa: E402
from tractile.ops import Add, Conv, Relu, Window  # noqa: E402


def dilated_tcn(features: int = 40, channels: int = 64, layers: int = 6, seed: int = 0) -> TypedModel:
    """Causal dilated convolutions (kernel 3, dilation 2**i) with residuals; T symbolic."""
    rng = np.random.default_rng(seed)
    model = TypedModel()
    x = model.add_source("x", parse_fact(f"1,{features},T,f32").to_typed())

    def conv(name, source, cin, cout, kernel, dilation=1):
        w = model.add_const(f"{name}.w", (rng.standard_normal((cout, cin, kernel)) / np.sqrt(cin * kernel))
                            .astype(np.float32))
        b = model.add_const(f"{name}.b", np.zeros(cout, np.float32))
        pads = ((kernel - 1) * dilation, 0)
        return model.wire_node(name, Conv(Window.make((kernel,), None, (dilation,), pads)), [source, w, b])[0]

    h = conv("input", x, features, channels, 1)
    for layer in range(layers):
        dilation = 2 ** layer
        y = model.wire_node(f"relu{layer}", Relu(), [conv(f"conv{layer}", h, channels, channels, 3, dilation)])[0]
        h = model.wire_node(f"res{layer}", Add(), [h, conv(f"mix{layer}", y, channels, channels, 1)])[0]
    model.outputs = [conv("head", h, channels, 8, 1)]
    return model.into_optimized()


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--windows", default="100,200", help="sliding-window lengths W (frames)")
    parser.add_argument("--pulses", default="1,4,8,16", help="pulse sizes P (frames per push)")
    parser.add_argument("--channels", type=int, default=64, help="channels of the TCN")
    parser.add_argument("--layers", type=int, default=6, help="dilated layers (receptive field 2**(layers+1)-1)")
    parser.add_argument("--runs", type=int, default=7, help="timed rounds per measure (median)")
    parser.add_argument("--calls", type=int, default=20, help="calls per timed round")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS threads for both (default 1: small products gain nothing from more)")
    args = parser.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("(threadpoolctl is not installed: BLAS uses its default threads)")
    else:
        threadpool_limits(args.threads)
    windows = [int(w) for w in args.windows.split(",")]
    pulses = [int(p) for p in args.pulses.split(",")]

    model = dilated_tcn(channels=args.channels, layers=args.layers)
    rng = np.random.default_rng(1)
    print(f"dilated TCN: 40 features, {args.channels} channels, {args.layers} layers "
          f"(receptive field {2 ** (args.layers + 1) - 1} frames), {len(model.nodes)} nodes")

    batch_cost = {}
    for window in windows:
        frames = rng.standard_normal((1, 40, window)).astype(np.float32)
        state = model.state()
        batch_cost[window] = median_seconds(lambda: state.run([frames]), args.calls, args.runs)

    header = f"{'P':>4} {'delay':>5} {'state KiB':>9} {'stream µs/frame':>16}"
    for window in windows:
        header += f" {f'W={window} µs/frame':>16} {'speed-up':>9} {'W/P':>6}"
    print(header)
    print("-" * len(header))
    for pulse in pulses:
        pulsed = model.pulse("T", pulse)
        stream = pulsed.start()
        chunk = rng.standard_normal((1, 40, pulse)).astype(np.float32)
        per_push = median_seconds(lambda: stream.push([chunk]), args.calls, args.runs)
        line = f"{pulse:>4} {pulsed.delay:>5} {stream.memory_bytes() / 1024:>9.1f} {per_push / pulse * 1e6:>16.1f}"
        for window in windows:
            sliding = batch_cost[window] / pulse  # one batch run on the last W frames per P new frames
            line += f" {sliding * 1e6:>16.1f} {batch_cost[window] / per_push:>9.1f} {window / pulse:>6.1f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
