"""Winograd against the direct float GEMM on the 3x3 stride-1 layers of ResNet50 (the ONNX model
cut before its head), SqueezeNet or resnet8_float (bench_host.py's Keras model, as TFLite): the
model compiled twice with per-node timers, once
with ``compile/ops/host_wino.py`` switched off, the two run in turns; per convolution shape the
fastest time of ``--runs`` runs (CPU time, one thread) and the GMAC/s counting the direct
convolution's multiply-adds, then the whole model's fastest and median times.

    PYTHONPATH=src python bench/bench_wino_layers.py --model resnet50 --runs 20
"""
from __future__ import annotations

import argparse
import collections
import os

import bench_onnx
import numpy as np
from bench_gemm_layers import conv_shapes, print_whole_runs, resnet50_body, timed_in_turns


def build(model, winograd: bool):
    """``model`` compiled with timers, its 3x3 layers as Winograd or not."""
    from tractile.compile import compile_model
    from tractile.compile.ops import host_wino

    saved = host_wino.MIN_IN
    if not winograd:
        host_wino.MIN_IN = 1 << 30
    try:
        return compile_model(model, profile=True)
    finally:
        host_wino.MIN_IN = saved


def main(argv=None) -> int:
    import tractile

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("resnet50", "squeezenet", "resnet8_float"), default="resnet50")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    tractile.set_threads(1)
    if args.model == "resnet8_float":
        import bench_host

        model = tractile.load(str(bench_host.model_path("resnet8_float")))
        inputs = [np.random.default_rng(0).standard_normal(tuple(int(d) for d in fact.shape)).astype(np.float32)
                  for fact in model.input_facts]
    else:
        proto, inputs = resnet50_body() if args.model == "resnet50" else bench_onnx.light("squeezenet")
        model = tractile.load(proto, inputs=[(x.shape, x.dtype) for x in inputs])
    builds = {"direct": build(model, False), "winograd": build(model, True)}
    states = {name: compiled.state() for name, compiled in builds.items()}
    whole, nodes = timed_in_turns(states, inputs, args.runs)
    shapes: dict[str, list] = collections.defaultdict(lambda: [0, 0, {n: 0.0 for n in states}])
    for name, compiled in builds.items():
        for index, shape, macs in conv_shapes(compiled):
            if "3x3/s1" not in shape:
                continue
            entry = shapes[shape]
            if name == "direct":
                entry[0] += 1
                entry[1] += macs
            entry[2][name] += float(nodes[name][index])
    print("| layer | count | direct: ms, GMAC/s | Winograd: ms, GMAC/s (direct MACs) | speed-up |")
    print("|---|---|---|---|---|")
    for shape, (count, macs, seconds) in sorted(shapes.items(), key=lambda item: -item[1][1]):
        cells = " | ".join(f"{seconds[n] * 1e3:.2f} ms, {macs / seconds[n] / 1e9:.1f}" for n in states)
        print(f"| {shape} | {count} | {cells} | {seconds['direct'] / seconds['winograd']:.2f}x |")
    print_whole_runs(whole, args.runs)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    raise SystemExit(main())
