"""The host float GEMM on ResNet50's layers (or ``--model mobilenet`` / ``squeezenet``): the ONNX
model (ResNet50 cut before its head: its convolutions alone) compiled with per-node
timers, run in turns with the same model built from the float GEMM headers (``tl_gemm*.h``) of
another checkout, and the time and GMAC/s of each convolution shape (fastest of ``--runs`` runs per
node, CPU time on one thread), and the time of the Add nodes. The other checkout's build does not
fuse residual Adds into the convolutions (its headers may predate them: its Adds run as passes of
their own, as they did there).

    PYTHONPATH=src python bench/bench_gemm_layers.py --against /work/main --runs 20 [--model mobilenet]

Without ``--against`` only this tree's build is timed.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import time
from pathlib import Path

import bench_onnx
import numpy as np
from onnx import TensorProto, helper
from timing import load_average


def resnet50_body():
    """ResNet50 (onnx's light test model) up to its last ReLU, and its input."""
    proto, inputs = bench_onnx.light("resnet50")
    last = proto.graph.node[-5]
    assert last.op_type == "Relu", last.op_type
    del proto.graph.node[-4:]
    del proto.graph.output[:]
    proto.graph.output.append(helper.make_tensor_value_info(last.output[0], TensorProto.FLOAT, None))
    return proto, inputs


def build(model, headers: Path | None):
    """``model`` compiled with timers; the ``tl_gemm*.h`` headers read from ``headers`` (and no
    residual Add fused) if given."""
    import tractile.compile as compile_package
    from tractile.compile.ops import host_gemm

    original, residual = compile_package.kernel_header, host_gemm.residual_add
    if headers is not None:
        compile_package.kernel_header = lambda name: ((headers / name).read_text() if name.startswith("tl_gemm")
                                                      else original(name))
        host_gemm.residual_add = lambda e, x, y: None
    try:
        return compile_package.compile_model(model, profile=True)
    finally:
        compile_package.kernel_header, host_gemm.residual_add = original, residual


def model_and_inputs(name: str):
    """The ONNX model ``name`` (resnet50: its body) and its input."""
    if name == "resnet50":
        return resnet50_body()
    if name == "mobilenet":
        import builders

        return builders.mobilenet_like()
    return bench_onnx.light(name)


def conv_shapes(compiled) -> list[tuple[int, str, int]]:
    """(node index, shape, multiply-adds) of each float convolution of the lowered program (not the
    depthwise ones)."""
    found = []
    for index, node in enumerate(compiled.source.program.nodes):
        if node.op != "Conv" or "dwconv" in node.kernel:
            continue
        match = re.search(r"\n([\d,]+),f32; ([\d,]+),f32 const.*-> ([\d,]+),f32", node.comment)
        x, w, y = (list(map(int, match.group(i).split(","))) for i in (1, 2, 3))
        name = f"{x[1]}x{x[2]}x{x[3]} {w[1]}x{w[2]}/s{x[1] // y[1]} -> {y[3]}"
        found.append((index, name, int(np.prod(y)) * w[1] * w[2] * w[3]))
    return found


def timed_in_turns(states: dict, inputs: list, runs: int) -> tuple[dict, dict]:
    """Each profiled state run in turns ``runs`` times after 3 untimed: per state, its whole runs'
    CPU times and each node's fastest time (arrays aligned with its program's nodes)."""
    print(f"load average before: {load_average()}")
    whole: dict[str, list[float]] = {name: [] for name in states}
    nodes: dict[str, np.ndarray | None] = {name: None for name in states}
    for run in range(runs + 3):
        for name, state in states.items():
            before = state.node_seconds().copy()
            start = time.process_time()
            state.run(inputs)
            seconds = time.process_time() - start
            spent = state.node_seconds() - before
            if run >= 3:
                whole[name].append(seconds)
                nodes[name] = spent if nodes[name] is None else np.minimum(nodes[name], spent)
    print(f"load average after: {load_average()}")
    return whole, nodes


def print_whole_runs(whole: dict, runs: int) -> None:
    """The fastest and median whole-model CPU time of each build (timed_in_turns's ``whole``)."""
    for name, times in whole.items():
        print(f"{name}: whole model fastest {min(times) * 1e3:.2f} ms, median "
              f"{float(np.median(times)) * 1e3:.2f} ms ({runs} runs, CPU time)")


def main(argv=None) -> int:
    import tractile

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", type=Path, help="another checkout whose float GEMM headers to time in turns")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--model", choices=("resnet50", "mobilenet", "squeezenet"), default="resnet50")
    args = parser.parse_args(argv)
    tractile.set_threads(1)
    proto, inputs = model_and_inputs(args.model)
    model = tractile.load(proto, inputs=[(x.shape, x.dtype) for x in inputs])
    builds = {"this tree": build(model, None)}
    if args.against:
        builds = {"against": build(model, args.against / "src/tractile/compile/kernels"), **builds}
    states = {name: compiled.state() for name, compiled in builds.items()}
    whole, nodes = timed_in_turns(states, inputs, args.runs)
    shapes: dict[str, list] = collections.defaultdict(lambda: [0, 0, {n: 0.0 for n in states}])
    for index, shape, macs in conv_shapes(builds["this tree"]):
        entry = shapes[shape]
        entry[0] += 1
        entry[1] += macs
        for name in states:
            entry[2][name] += float(nodes[name][index])
    names = list(states)
    print("| layer | count | " + " | ".join(f"{n}: ms, GMAC/s" for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    ranked = sorted(shapes.items(), key=lambda item: -item[1][2][names[0]])
    for shape, (count, macs, seconds) in ranked + [("all convolutions", (0, 0, {}))]:
        if shape == "all convolutions":
            count = sum(e[0] for e in shapes.values())
            macs = sum(e[1] for e in shapes.values())
            seconds = {n: sum(e[2][n] for e in shapes.values()) for n in names}
        cells = " | ".join(f"{seconds[n] * 1e3:.2f} ms, {macs / seconds[n] / 1e9:.1f}" for n in names)
        print(f"| {shape} | {count} | {cells} |")
    adds = {n: sum(float(nodes[n][i]) for i, node in enumerate(builds[n].source.program.nodes) if node.op == "Add")
            for n in names}
    print("| Add nodes | | " + " | ".join(f"{adds[n] * 1e3:.2f} ms" for n in names) + " |")
    print_whole_runs(whole, args.runs)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    raise SystemExit(main())
