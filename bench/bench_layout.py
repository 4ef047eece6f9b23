"""ONNX float CNNs compiled for this machine: planned arena and time per inference, of this tree's
compiler (NCHW convolutions and pools made NHWC at compile time, ``compile/layout.py``) against
another tree's (``--against SRC``, e.g. a checkout of the commit before, whose NCHW kernels ran
them as they are).

    python bench/bench_layout.py --against /tmp/before/src [--runs 300] [--rounds 3]

Each tree runs in its own child process (the two cannot share one); the trees take turns for
``--rounds`` rounds and each model's fastest round is kept (min over the rounds of the median of
``--runs`` calls; the machine is shared, so the minimum is the fair number). Models: a
MobileNet-style CNN (bench/builders.py ``mobilenet_like`` at 96x96), the causal dilated TCN
(``tcn``, 100 frames, and its streaming form pushed 4 frames at a time), a small
convolution-pooling stack (2-D and 1-D, grouped and dilated).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from timing import median_and_fastest  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def pooled(rank: int):
    """conv 3x3 (groups 2, dilation 2) -> max pool 2 -> conv 3x3 -> average pool 3 (padded) -> conv 1x1."""
    rng = np.random.default_rng(5)
    spatial = [48, 48][:rank] if rank == 2 else [400]
    k = [3] * rank
    nodes, inits = [], []

    def conv(name, source, cin, cout, group=1, dilation=1, kernel=3):
        w = (rng.standard_normal((cout, cin // group, *[kernel] * rank)) / np.sqrt(cin * kernel)).astype(np.float32)
        inits.extend([numpy_helper.from_array(w, f"{name}.w"),
                      numpy_helper.from_array(rng.standard_normal(cout).astype(np.float32), f"{name}.b")])
        nodes.append(helper.make_node("Conv", [source, f"{name}.w", f"{name}.b"], [f"{name}.c"], group=group,
                                      dilations=[dilation] * rank, pads=[dilation * (kernel // 2)] * 2 * rank))
        nodes.append(helper.make_node("Relu", [f"{name}.c"], [name]))
        return name

    x = conv("c1", "x", 8, 16, group=2, dilation=2)
    nodes.append(helper.make_node("MaxPool", [x], ["p1"], kernel_shape=[2] * rank, strides=[2] * rank))
    x = conv("c2", "p1", 16, 32)
    nodes.append(helper.make_node("AveragePool", [x], ["p2"], kernel_shape=k, strides=[1] * rank, pads=[1] * 2 * rank))
    conv("y", "p2", 32, 8, kernel=1)
    graph = helper.make_graph(nodes, f"pooled{rank}d",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, *spatial])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def child(runs: int) -> None:
    """In this process's tree: each model's arena and median microseconds per call, as JSON."""
    import builders

    import tractile

    cache = tempfile.mkdtemp(prefix="bench_layout_")
    models = {"mobilenet_96": (builders.mobilenet_like(96)[0], None), "tcn_100": (builders.tcn(), "1,40,100,f32"),
              "pooled_2d": (pooled(2), None), "pooled_1d": (pooled(1), None)}
    results = {}
    rng = np.random.default_rng(0)
    for name, (proto, fact) in models.items():
        model = tractile.load(proto, inputs=[fact] if fact else None)
        compiled = model.compile(name=name, cache_dir=cache)
        x = rng.standard_normal(tuple(int(d) for d in model.input_fact(0).shape)).astype(np.float32)
        results[name] = (compiled.source.report["arena_bytes"], _median_us(lambda: compiled.run([x]), runs))
    tcn = tractile.load(builders.tcn())
    pulsed = tcn.pulse("T", 4)
    compiled = pulsed.compile(name="tcn_stream", cache_dir=cache)
    chunk = rng.standard_normal((1, 40, 4)).astype(np.float32)
    results["tcn_stream_push4"] = (compiled.source.report["arena_bytes"], _median_us(lambda: compiled.run([chunk]),
                                                                                    runs))
    print(json.dumps(results))


def _median_us(run, runs: int) -> float:
    return median_and_fastest(run, runs)[0] * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", required=True, help="the src folder of the tree to compare with")
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.runs)
        return
    trees = {"before": str(Path(args.against).resolve()), "after": str(HERE.parent / "src")}
    best: dict[str, dict] = {tree: {} for tree in trees}
    for _ in range(args.rounds):
        for tree, src in trees.items():
            env = dict(os.environ, PYTHONPATH=src, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
            done = subprocess.run([sys.executable, __file__, "--child", "--against", src, "--runs", str(args.runs)],
                                  env=env, capture_output=True, text=True, check=True)
            for name, (arena, micros) in json.loads(done.stdout.strip().splitlines()[-1]).items():
                previous = best[tree].get(name)
                best[tree][name] = (arena, micros if previous is None else min(previous[1], micros))
    print(f"{'model':<20}{'arena before':>14}{'arena after':>13}{'µs before':>12}{'µs after':>11}{'after/before':>14}")
    for name, (arena, micros) in best["after"].items():
        old_arena, old_micros = best["before"][name]
        print(f"{name:<20}{old_arena:>14}{arena:>13}{old_micros:>12.1f}{micros:>11.1f}{micros / old_micros:>13.2f}x")


if __name__ == "__main__":
    main()
